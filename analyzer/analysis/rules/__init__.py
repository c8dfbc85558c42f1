"""The registry of finding rules (docs/findings.md). One rule is one small unit: a stable code,
a group, a severity per profile, the spec reference it rests on, a one-line summary, the
events it listens to, and a pure check that returns findings. Rules never touch SQLite, files
or the network: they get a message and the session's state (analyzer/analysis/session.py).

Events: `envelope` (a structural signature, analyzer/analysis/classify.py; the check returns the text
of the finding or None, and is evaluated once per distinct signature), `frame` (every frame as
a whole), `request`, `notification`, `response` (results and errors), `exchange` (an HTTP
exchange of the session, with the kinds of the messages its request carried; checked once the
frames are analysed), `end` (the session is over), `definitions` (a definition a server declared
that differs from the baseline or from its earlier listing, or definitions over a budget: given by
analyzer/analysis/drift.py once the session's frames are read), `operation` (a step of a logical
operation: a retry after input_required, a task's status, cancel or result, any answer; given by
analyzer/analysis/logical_operations.py), `schema` (a message that failed its revision's schema, or a
tool's result and that tool's outputSchema: given by analyzer/analysis/results.py, once per
message), and the security reading's (analyzer/analysis/security/reading.py, once the session's
frames are read, over the frames of its definitions, tool calls and elicitations): `declared` (a
tool, prompt, resource or template as a listing gives it, first or changed), `call` (a tools/call
request), `result` (its answer), `elicitation` (an elicitation/create request), `redefined` (a tool
whose definition changed after a call used it) and `reading` (the session's calls, at the end). A
check on frames or messages subscribes to
facts (`Rule.when`, in the vocabulary `FACTS`) and runs only where one is present. Layer `mcp`
rules run only when the session's MCP revision is known. What a rule is lives in `registry`
(which the rule modules import); this package loads them (`load`)."""

from __future__ import annotations

from mcptap.analysis.rules.registry import (EVENTS, FACTS, GROUPS, RULES, SEVERITIES, SUBSCRIBED_EVENTS, Hit, Rule,
                                            Severity, rule)

__all__ = ["EVENTS", "FACTS", "GROUPS", "RULES", "SEVERITIES", "SUBSCRIBED_EVENTS", "Hit", "Rule", "Severity", "load",
           "rule"]


def load() -> dict[str, Rule]:
    """Import every rule module (registration happens on import) and return the registry."""
    from mcptap.analysis.rules import (authorization, declared_checks, envelope, extensions, lifecycle,  # noqa: F401
                                       methods, operation_checks, pairing, progress, schema_checks, tools,
                                       transport)
    from mcptap.analysis.rules import authflow, headers, rounds, subscriptions  # noqa: F401
    from mcptap.analysis.rules.security import load as load_security

    load_security()

    return RULES
