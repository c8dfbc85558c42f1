"""Credentials out of what is stored (docs/contract.md, Redaction): HTTP headers that carry
them, token query parameters and URL passwords, credential members of frames (also inside
strings that hold JSON), and the same secrets in free text: a server's stderr lines and its
command line. A value is replaced by a stable keyed hash, so the same secret gives the same
replacement and a reader can still tell two tokens apart, without the secret being recoverable
from the file.

The key lives outside the database (a file in the user's config folder, created once with mode
0600, or `MCPTAP_REDACTION_KEY`): a key kept beside the hashes would let anyone holding the file
test guesses of a weak password offline. Where no key file can be kept, a key for this process is
used and the replacement is stable within the run."""

from __future__ import annotations

from mcptap.redaction.keys import (  # noqa: F401
    KEY_ENV, MASKED, load_key,
)
from mcptap.redaction.http import (  # noqa: F401
    CREDENTIAL_HEADERS, Redactor, URL_HEADERS,
)
from mcptap.redaction.freetext import (  # noqa: F401
    Edit, PROTOCOL_MEMBERS,
)
from mcptap.redaction.policy import (  # noqa: F401
    Redaction,
)
from mcptap.redaction.frames import (  # noqa: F401
    CREDENTIAL_KEYS, FOLD_AT, FrameRedactor,
)
