"""Session ids unique across machines and time-ordered: UUID version 7 (RFC 9562) as text."""

import os
import time


def new_session_id() -> str:
    """A UUIDv7: 48 bits of Unix milliseconds, then 74 random bits, so ids sort by start time."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76  # version
    value |= ((rand >> 62) & 0xFFF) << 64  # rand_a, 12 bits
    value |= 0b10 << 62  # variant
    value |= rand & ((1 << 62) - 1)  # rand_b, 62 bits
    text = f"{value:032x}"  # as str(uuid.UUID(int=value)), without importing uuid (start-up of the tee)
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
