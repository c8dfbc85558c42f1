"""The `security` rules (docs/security.md): run by the security reading of a session
(analyzer/analysis/security/reading.py) on its definitions, tool calls, their answers and
elicitations. One module per concern; importing them registers them (`load`)."""

from __future__ import annotations


def load() -> None:
    """Import every security rule module (registration happens on import)."""
    from mcptap.analysis.rules.security import (calls, elicitation, hidden_text, instructions, loops,  # noqa: F401
                                                rugpull, secrets, shadowing)
