"""What is known of a session, field by field: the columns of the `sessions` table and the fields
of a frame-log session record are the same names (docs/contract.md, Tables and Frame-log JSONL),
each of a kind: a time (Unix seconds), an integer, or text."""

SESSION_FIELDS = (
    "id", "transport", "label", "started_at", "ended_at", "command", "upstream",
    "exit_status", "recorder", "host", "pid", "source", "replay_of", "run", "client",
)
FIELD_KINDS = {"started_at": "time", "ended_at": "time", "exit_status": "int", "pid": "int"}
"""The kind of each field that is not text."""
