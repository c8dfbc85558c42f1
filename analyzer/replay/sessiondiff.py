"""`mcptap diff`: two recorded sessions compared message by message (yesterday's and today's
recording of a host against a server, say), each difference named by its JSON path.

Aligned by method and order: the k-th request of a method in one direction in the first session
is compared with the k-th of that method and direction in the second, and its answer with the
other's answer; so are notifications, answers that answer no request, invalid messages and
frames that are not JSON (kind `unparseable`, compared by their bytes), each by their own kind. A message with no counterpart is
said to be in one session only. The ids of requests and of their answers are not compared (the
pairing is by method and order, not by id); everything else is, member by member, outside the
paths given to ignore (`--ignore`, as for replay: `$.result.content[*].text`, `$..timestamp`).

Pure: two Scripts in (analyzer/replay/script.py), a SessionDiff out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from mcptap import store
from mcptap.analysis.classify import ERROR, REQUEST, RESPONSE, UNPARSEABLE
from mcptap.errors import MCPTapError
from mcptap.replay import jsondiff, script
from mcptap.report import jsonout
from mcptap.wire import jsonwire
from mcptap.wire.textsafe import printable, printing

@dataclass(eq=False)
class Unit:
    """What is aligned: a message that is not an answer to a request, or a frame that is not JSON."""

    key: tuple  # (direction, kind, method): units of one key are paired in order
    frame: script.Frame
    message: script.Message | None  # None: the frame is not JSON

    @property
    def where(self) -> str:
        return f"frame {self.frame.seq}" + ("" if self.message is None or self.message.idx is None
                                             else f"[{self.message.idx}]")


@dataclass(eq=False)
class Paired:
    """A unit of the first session and its counterpart in the second (None: there is none)."""

    key: tuple
    occurrence: int  # 1 for the first of its key
    a: Unit | None
    b: Unit | None
    request: list[jsondiff.Change] = field(default_factory=list)  # the message itself
    answer: list[jsondiff.Change] = field(default_factory=list)  # a request's answer
    note: str | None = None  # what cannot be compared member by member

    @property
    def equal(self) -> bool:
        return self.a is not None and self.b is not None and not self.request and not self.answer \
            and self.note is None

    def label(self) -> str:
        direction, kind, method = self.key
        return f"{direction} {kind}{'' if method is None else ' ' + method} #{self.occurrence}"


@dataclass
class SessionDiff:
    a: dict  # the sessions rows
    b: dict
    paired: list[Paired]

    @property
    def equal(self) -> bool:
        return all(p.equal for p in self.paired)

    @property
    def exit_status(self) -> int:
        return 0 if self.equal else 1


def diff_sessions(db_a: str, ref_a: str, db_b: str, ref_b: str, ignore=()) -> SessionDiff:
    """Session `ref_a` of `db_a` against `ref_b` of `db_b` (ids, id prefixes or labels)."""
    try:
        ignored = jsondiff.Ignore(ignore)
    except ValueError as exc:
        raise MCPTapError(str(exc)) from None
    scripts = []
    for db, ref in ((db_a, ref_a), (db_b, ref_b)):
        conn = store.open_existing(db)
        try:
            scripts.append(script.load(conn, ref))
        finally:
            conn.close()
    return compare(*scripts, ignored)


def compare(a: script.Script, b: script.Script, ignore: jsondiff.Ignore | None = None) -> SessionDiff:
    ignore = ignore or jsondiff.Ignore(())
    theirs: dict[tuple, list[Unit]] = {}
    for unit in units(b):
        theirs.setdefault(unit.key, []).append(unit)
    taken: dict[tuple, int] = {}
    paired = []
    for unit in units(a):
        n = taken.get(unit.key, 0)
        taken[unit.key] = n + 1
        other = theirs.get(unit.key, [])
        paired.append(_compared(unit.key, n + 1, unit, other[n] if n < len(other) else None, ignore))
    for key, other in theirs.items():
        for n in range(taken.get(key, 0), len(other)):
            paired.append(Paired(key, n + 1, None, other[n]))
    return SessionDiff(a.session, b.session, paired)


def units(s: script.Script) -> list[Unit]:
    out = []
    for frame in s.frames:
        if not frame.messages:
            out.append(Unit((frame.direction, UNPARSEABLE, None), frame, None))
        for m in frame.messages:
            if m.kind in (RESPONSE, ERROR) and m.request is not None:
                continue  # compared with its request
            out.append(Unit((frame.direction, m.kind, m.method), frame, m))
    return out


def _compared(key: tuple, n: int, a: Unit, b: Unit | None, ignore: jsondiff.Ignore) -> Paired:
    p = Paired(key, n, a, b)
    if b is None:
        return p
    if a.message is None:  # frames that are not JSON: their bytes
        if a.frame.raw != b.frame.raw:
            p.request = [jsondiff.Change(jsondiff.CHANGED, (), _text(a.frame.raw), _text(b.frame.raw))]
        return p
    request = a.message.kind == REQUEST
    p.request = jsondiff.diff(_bare(a.message.value, request), _bare(b.message.value, request), ignore)
    if request:
        mine, other = a.message.answer, b.message.answer
        if mine is not None and other is not None:
            p.answer = jsondiff.diff(_bare(mine.value, True), _bare(other.value, True), ignore)
        elif mine is not None or other is not None:
            p.note = f"answered in the {'first' if mine is not None else 'second'} session only"
    return p


def _bare(value: Any, without_id: bool) -> Any:
    """A request or an answer without its id (the pairing is by method and order)."""
    if without_id and type(value) is dict and "id" in value:
        return {k: v for k, v in value.items() if k != "id"}
    return value


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _name(session: dict) -> str:
    label = f" ({session['label']})" if session.get("label") else ""
    return f"session {session['id']}{label}"


def render(d: SessionDiff, write: Callable[[str], None]) -> None:
    """The human report: one block per pair that differs, then a one-line verdict. Every line
    `write` is given is printable (textsafe.printing)."""
    write = printing(write)
    write(printable(f"diff of {_name(d.a)} and {_name(d.b)}"))
    for p in d.paired:
        if p.equal:
            continue
        here = p.a.where if p.a is not None else "-"
        there = p.b.where if p.b is not None else "-"
        alone = " (first session only)" if p.b is None else " (second session only)" if p.a is None else ""
        write(printable(f"{p.label()}: {here} / {there}{alone}"))
        for change in p.request:
            write("  " + printable(str(change)))
        for change in p.answer:
            write("  answer " + printable(str(change)))
        if p.note:
            write("  " + printable(p.note))
    compared = sum(1 for p in d.paired if p.a is not None and p.b is not None)
    only_a = sum(1 for p in d.paired if p.b is None)
    only_b = sum(1 for p in d.paired if p.a is None)
    differ = sum(1 for p in d.paired if p.a is not None and p.b is not None and not p.equal)
    if d.equal:
        write(f"equal: {compared} message{'s' if compared != 1 else ''} compared, no differences")
    else:
        write(f"different: {differ} of {compared} message{'s' if compared != 1 else ''} differ, {only_a} in the "
              f"first session only, {only_b} in the second only")


def _changes(changes: list[jsondiff.Change]) -> list[dict]:
    return [{"op": c.op, "path": c.where,
             "a": None if c.op == jsondiff.ADDED else jsonout.Raw(jsonwire.to_json(c.recorded)),
             "b": None if c.op == jsondiff.REMOVED else jsonout.Raw(jsonwire.to_json(c.live))} for c in changes]


def as_json(d: SessionDiff) -> dict:
    """The diff as `--format json` gives it: the sessions, the verdict, and each pair (its
    frames, null for the session it is not in) with its changes, values as the wire wrote them."""
    return {
        "a": d.a["id"], "b": d.b["id"], "equal": d.equal, "exit_status": d.exit_status,
        "messages": [{
            "direction": p.key[0], "kind": p.key[1], "method": p.key[2], "occurrence": p.occurrence,
            "a_frame": p.a.frame.seq if p.a is not None else None, "b_frame": p.b.frame.seq if p.b is not None else None,
            "equal": p.equal, "note": p.note, "changes": _changes(p.request), "answer_changes": _changes(p.answer),
        } for p in d.paired],
    }

