"""The redaction key: kept outside the database (a file in the user's config folder, mode 0600, or
`MCPTAP_REDACTION_KEY`), so that the keyed hashes in a file cannot be tested offline."""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path


KEY_ENV = "MCPTAP_REDACTION_KEY"

MASKED = re.compile(r"\[redacted:[0-9a-f]{16}\]")
"""What a redacted value looks like: redacting what was redacted already changes nothing."""


def _key_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "mcptap" / "redaction.key"


def load_key() -> bytes:
    configured = os.environ.get(KEY_ENV)
    if configured:
        return configured.encode("utf-8")
    path = _key_file()
    try:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        pass
    key = secrets.token_bytes(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(key.hex() + "\n")
    except FileExistsError:  # another recorder made it first
        try:
            return bytes.fromhex(path.read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            pass
    except OSError:
        pass
    return key
