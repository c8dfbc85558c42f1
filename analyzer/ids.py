"""Session ids unique across machines and time-ordered: UUID version 7 (RFC 9562) as text."""

import os
import time
import uuid


def new_session_id() -> str:
    """A UUIDv7: 48 bits of Unix milliseconds, then 74 random bits, so ids sort by start time."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76  # version
    value |= ((rand >> 62) & 0xFFF) << 64  # rand_a, 12 bits
    value |= 0b10 << 62  # variant
    value |= rand & ((1 << 62) - 1)  # rand_b, 62 bits
    return str(uuid.UUID(int=value))
