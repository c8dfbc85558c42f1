"""The small named exceptions the library raises (the CLI turns each into one line and exit 2),
and the one way an error (`say_error`) and a warning (`warn_stderr`) are said."""

import sys


def say_error(message: str) -> None:
    """`mcptap: error: MESSAGE` on stderr, the message made printable (one line, whatever it
    quotes); the caller exits 2."""
    from mcptap.wire.textsafe import printable

    sys.stderr.write(f"mcptap: error: {printable(message)}\n")


def warn_stderr(message: str) -> None:
    """`mcptap: warning: MESSAGE` on stderr, the message made printable; never raises (stderr may
    be closed or a broken pipe)."""
    from mcptap.wire.textsafe import printable

    try:
        sys.stderr.write(f"mcptap: warning: {printable(message)}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class MCPTapError(Exception):
    """Anything a user can fix: bad input, a missing file, an unknown session."""


class NotADatabase(MCPTapError):
    """The file is missing, is not SQLite, or has no mcptap tables."""


class SessionNotFound(MCPTapError):
    """No session matches what the user named (or several do)."""


class ImportFormatError(MCPTapError):
    """A file given to `mcptap import` is in no format mcptap reads, or is malformed."""


class DuplicateSession(MCPTapError):
    """An import would add a session that the database already holds."""


class OutputError(MCPTapError):
    """An output file (`-o`) cannot be created or written."""


class AnalysisError(MCPTapError):
    """Options of an analysis that do not go together, or that name what is not there."""
