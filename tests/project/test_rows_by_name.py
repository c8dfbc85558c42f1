"""Frames and rows are read by name outside the store: no `row[5]`, `f[3]`. The store builds the
named types (mcptap.store Frame, the ops' rows) and the analysis its own (Finding, Message);
everything else reads their fields by name, so a column added or moved touches the type, not
code all over the house. An AST check over analyzer/ and addons/, in the manner of test_layout."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

ROW_NAMES = frozenset({"row", "r", "f", "fr", "frame", "finding", "found", "msg", "message", "entry", "item"})
"""The names a frame, a message or finding row, or a timeline entry goes by in this code base."""

ALLOWED = {
    # The session core's own `messages` rows are lists it fills in when a request's answer comes
    # (its fast path; the store inserts them as they are): written by position, read nowhere else.
    ("analyzer/analysis/pairing.py", "row"),
    # A progress token's record, [request, last value]: not a row of any table.
    ("analyzer/analysis/notifications.py", "entry"),
    # A per-code accumulator, [severity, count, sessions, first finding]: not a row.
    ("analyzer/report/__init__.py", "entry"),
    # The viewer's document holds its rows as JSON arrays (what its script indexes); this is their builder.
    ("analyzer/report/viewdata.py", "r"),
    # An import's private state file is a store of its own (test_layout's OWN_DATABASES): its rows.
    ("analyzer/readers/importstate.py", "row"),
    # The chunk queue's (seq, kind, bytes) items: a capture buffer's slot, not a frame.
    ("addons/shipping/chunkqueue.py", "item"),
}


def _subscripted_name(node: ast.Subscript) -> str | None:
    """`row` of `row[5]`, and `row` of `op.row[0]`."""
    value = node.value
    if isinstance(value, ast.Name):
        return value.id
    if isinstance(value, ast.Attribute):
        return value.attr
    return None


def positional_reads(source: str) -> list[tuple[int, str]]:
    """(line, name) of each `NAME[integer]` where NAME is one of ROW_NAMES."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Subscript):
            continue
        index = node.slice
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
            index = index.operand
        if isinstance(index, ast.Constant) and type(index.value) is int:
            name = _subscripted_name(node)
            if name in ROW_NAMES:
                found.append((node.lineno, name))
    return found


def test_no_code_outside_the_store_indexes_a_frame_or_a_row_by_position():
    wrong = []
    for folder in ("analyzer", "addons"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("analyzer/store/") or "__pycache__" in path.parts:
                continue
            for line, name in positional_reads(path.read_text(encoding="utf-8")):
                if (rel, name) not in ALLOWED:
                    wrong.append(f"{rel}:{line}: {name}[...]")
    assert not wrong, "frames and rows are read by name outside analyzer/store/:\n" + "\n".join(wrong)


def test_the_check_sees_a_positional_read_and_passes_a_named_one():
    assert positional_reads("def g(row, f):\n    return row[5], f[-1], op.row[0]\n") == [(2, "row"), (2, "f"), (2, "row")]
    assert positional_reads("def g(row, parts):\n    return row.kind, parts[0], row[a]\n") == []


def test_every_allowed_exception_is_still_needed():
    """An allow-list entry whose code no longer reads by position goes (the list only shrinks)."""
    used = set()
    for rel, name in ALLOWED:
        if any(n == name for _line, n in positional_reads((ROOT / rel).read_text(encoding="utf-8"))):
            used.add((rel, name))
    assert used == ALLOWED
