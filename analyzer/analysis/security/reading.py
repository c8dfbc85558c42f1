"""One session read for security (docs/security.md): the frames of its listings, tool calls and
their answers, and elicitations, in order (`Reading.frame`, then `end`), each definition, call,
answer and elicitation handed to the `security` rules (analyzer/analysis/rules/security/) with
what came before it. Then what followed a poisoned description: the findings on a description
(`FOLLOWED`) name the later tools/call requests of the session, and the one whose arguments carry
what the description asked for (a file path, a URL, another tool's name) is flagged and made the
finding's related frame. Pure: frames in, `Finding` rows out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from mcptap.analysis import results, rules
from mcptap.analysis.declared import LIST_CHANGED, LISTS, normalised, paths
from mcptap.analysis.literal import contains
from mcptap.analysis.messages import UNREAD as _UNREAD, Finding
from mcptap.analysis.security import patterns, secrets
from mcptap.analysis.security.text import safe
from mcptap.wire import jsonwire
from mcptap.wire.textsafe import storable

EVENTS = ("declared", "call", "result", "elicitation", "redefined", "reading")
METHODS = frozenset({"initialize", *LISTS, *LIST_CHANGED, "tools/call", "elicitation/create"})
"""The methods whose messages the reading needs (a response's row names its request's method):
the frames the session core hands it (analyzer/analysis/security/feed.py)."""
FOLLOWED = frozenset({"description-hidden-text", "description-instructs-model", "tool-shadowing"})
"""The findings on a description that name what followed it."""
RUG_PATHS = ("$.description", "$.title", "$.inputSchema", "$.outputSchema", "$.annotations")
"""What of a tool's definition a rug pull changes (its name aside)."""
LOOP_CALLS, LOOP_SECONDS = 3, 60.0
"""The default of `call-loop`: the same call this many times within this many seconds."""
SHOWN_CALLS = 8
MAX_TEXT = 65_536
"""Characters of a call's arguments (as JSON) kept to compare and search."""


_LISTING = (b'"tools"', b"serverInfo", b'"method"')
"""What a server's frame holds where the reading reads it whatever else it holds (a listing, an
initialize answer, a request)."""
ANSWER_NEEDLES = secrets.FREE_TEXT
"""What a tool's answer that capture did not redact must hold to be read (`answer_wanted`): what the free-text
detectors replace (analyzer/analysis/security/secrets.py); a credential member in it was redacted
at capture, and its path recorded with the frame."""


@dataclass
class Definition:
    """A definition as a listing gave it (first, or changed since the session's last listing of it)."""
    kind: str
    name: str
    item: Any
    seq: int
    changed: bool = False

    @property
    def what(self) -> str:
        singular = {"tools": "tool", "prompts": "prompt", "resources": "resource",
                    "resourceTemplates": "resource template"}[self.kind]
        return f"{singular} {orjson.dumps(self.name).decode()}"


@dataclass(slots=True)
class Call:
    """A tools/call request: its tool, arguments (and their JSON text, keys sorted), and what the
    session had declared by then (`listed`: a tools/list answer came before it; `declared`: the
    tool's definition, None when the latest listing does not hold it; `removed_at`: the listing
    that dropped it; `retry`: it carries `requestState` or `inputResponses`, a later round of one
    2026-07-28 operation, not a call of its own)."""
    seq: int
    ts: float
    name: str | None
    arguments: Any
    text: str
    listed: bool = False
    declared: Any = None
    removed_at: int | None = None
    retry: bool = False
    raw: bytes | None = field(default=None, repr=False)
    recorded: list | None = field(default=None, repr=False)

    def secrets(self) -> list[tuple[str, str]]:
        """(path, kind) of the secrets its arguments carry (analyzer/analysis/security/secrets.py)."""
        return secrets.found(self.raw, self.recorded, "$.params.arguments") if self.raw is not None else []


@dataclass
class Answer:
    """A tools/call answer headed to the model, and its call."""
    seq: int
    call: Call
    raw: bytes = field(repr=False)
    recorded: list | None = field(default=None, repr=False)

    def secrets(self) -> list[tuple[str, str]]:
        return secrets.found(self.raw, self.recorded, "$.result")


@dataclass
class Elicitation:
    seq: int
    params: dict


@dataclass
class Redefinition:
    """A tool whose definition changed after a call used it: the paths that changed, the listing
    frames of the old and the new definition, and the calls on each side of the change."""
    name: str
    seq: int
    before_seq: int
    paths: list[str]
    announced: bool
    calls_before: list[int]
    calls_after: list[int] = field(default_factory=list)


class Reading:
    """Feed the session's frames (`frame`, in seq order), then `end()`; `findings` holds the rows.
    `catalogue`: tool name -> the other servers (of the same analysis) that declare it."""

    def __init__(self, session_id: str, policy=None, catalogue: dict[str, list[str]] | None = None):
        self.session_id = session_id
        self.policy = policy
        self.catalogue = catalogue or {}
        loop = getattr(policy, "call_loop", None) or (LOOP_CALLS, LOOP_SECONDS)
        self.loop_calls, self.loop_seconds = loop
        self.rules = {event: [] for event in EVENTS}
        for rule in rules.load().values():
            for event in rule.on:
                if event in self.rules and (policy is None or policy.severity(rule.code, "error") is not None):
                    self.rules[event].append(rule)
        self.active = any(self.rules.values())
        self._results = bool(self.rules["result"])
        self.findings: list[Finding] = []
        self.server: str | None = None
        self.seen: dict[tuple[str, str], Definition] = {}  # (kind, name) -> its last definition
        self._raw: dict[tuple[str, str], dict] = {}  # (kind, name) -> its last definition as parsed
        self._validators: dict[int, tuple[Any, Any]] = {}  # id(schema) -> (schema, its validator)
        self.current: set[str] | None = None  # tool names of the latest listing (None: no listing yet)
        self.removed: dict[str, int] = {}  # tool name -> the listing frame that dropped it
        self._pages: dict[str, set[str]] = {}  # kind -> names of a listing still fetching pages
        self._pending: dict[int | str, tuple[str, bool, Call | None]] = {}  # request id -> (method, continues, call)
        self._announced: set[str] = set()
        self.calls: list[Call] = []
        self._since: dict[str, list[int]] = {}  # tool name -> calls since its last definition
        self._open: dict[str, Redefinition] = {}  # tool name -> its last redefinition, gathering calls after
        self.redefinitions: list[Redefinition] = []
        self._repeats: dict[tuple, list] = {}  # (tool, arguments) -> (ts, seq) of recent calls
        self.memo: dict[str, Any] = {}  # the rules' own bookkeeping, by code
        self._poisoned: list[tuple[int, Definition]] = []  # (finding index, the definition it is on)

    @property
    def tools(self) -> frozenset[str]:
        """Every tool name the session declared."""
        return frozenset(name for kind, name in self.seen if kind == "tools")

    # -- frames ---------------------------------------------------------------------------------

    def frame(self, seq: int, ts: float, direction: str, raw: bytes, recorded: str | None = None) -> None:
        """One frame (`recorded`: its `redacted` paths, JSON). A server's frame that is no listing,
        initialize answer or request, and holds no secret, is left unparsed (a tool's answer)."""
        if self.wants(direction, raw, recorded):
            self.read(seq, ts, direction, raw, recorded)

    def wants(self, direction: str, raw: bytes, recorded: str | None) -> bool:
        """Whether `frame` reads this frame: a server's frame that is no listing, initialize answer
        or request, and holds no secret, is not."""
        return not (direction == "s2c" and not recorded and not contains(raw, _LISTING)
                    and not secrets.may_hold(raw))

    def answer_wanted(self, raw: bytes, recorded: str | None) -> bool:
        """Whether a tools/call answer is to be read at all: a `result` rule runs, and capture
        redacted something in it or it holds what the free-text detectors look for."""
        return self._results and (bool(recorded) or contains(raw, ANSWER_NEEDLES))

    def read(self, seq: int, ts: float, direction: str, raw: bytes, recorded: str | None = None,
             value: Any = _UNREAD) -> None:
        """A frame `wants` takes (`value`: the frame as orjson reads it, when the caller read it
        so: not parsed again)."""
        if value is _UNREAD:
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError:
                value = jsonwire.parse(raw).value
        messages = value if type(value) is list else [value]
        paths_recorded = None
        if recorded:
            try:
                paths_recorded = orjson.loads(recorded)
            except orjson.JSONDecodeError:
                paths_recorded = None
        for msg in messages:
            if type(msg) is dict:
                self._message(seq, ts, direction, msg, raw, paths_recorded)

    def _message(self, seq: int, ts: float, direction: str, msg: dict, raw: bytes, recorded) -> None:
        method = msg.get("method")
        params = msg.get("params") if type(msg.get("params")) is dict else {}
        key = _key(msg.get("id"))
        if type(method) is str:
            if direction == "c2s" and key is not None:
                if method == "tools/call":
                    call = self._call(seq, ts, params, raw, recorded)
                    self._pending[key] = (method, False, call)
                elif method in LISTS or method == "initialize":
                    self._pending[key] = (method, "cursor" in params, None)
            elif direction == "s2c":
                if method == "elicitation/create" and key is not None:
                    self._run("elicitation", Elicitation(seq, params), seq)
                for kind in LIST_CHANGED.get(method, ()):
                    self._announced.add(kind)
            return
        if direction != "s2c" or key is None:
            return
        asked = self._pending.pop(key, None)
        result = msg.get("result")
        if asked is None or type(result) is not dict:
            return
        method, continues, call = asked
        if method == "initialize":
            info = result.get("serverInfo") if type(result.get("serverInfo")) is dict else {}
            name, version = info.get("name"), info.get("version")
            if type(name) is str:
                self.server = name + (f" {version}" if type(version) is str else "")
        elif method == "tools/call":
            if self.rules["result"]:
                self._run("result", Answer(seq, call, raw, recorded), seq)
        else:
            self._listed(LISTS[method], result, seq, continues)

    def _listed(self, how: tuple[str, str], result: dict, seq: int, continues: bool) -> None:
        kind, key = how
        items = result.get(kind)
        if type(items) is not list:
            return
        names = self._pages.get(kind) if continues else None
        if names is None:
            names = self._pages[kind] = set()
        announced = kind in self._announced
        for item in items:
            if type(item) is dict and type(item.get(key)) is str:
                name = item[key]
                names.add(name)
                if self._raw.get((kind, name)) != item:  # new or changed: judged (a repeated listing costs a comparison)
                    self._raw[(kind, name)] = item
                    self._definition(kind, name, normalised(item), seq, announced)
        if kind == "tools":
            before = self.current
            self.current = set(names) if not continues or before is None else before | names
            if result.get("nextCursor") is None and before is not None:
                for gone in before - names:
                    self.removed[gone] = seq
        if result.get("nextCursor") is None:
            self._pages.pop(kind, None)
            self._announced.discard(kind)

    def _definition(self, kind: str, name: str, item: Any, seq: int, announced: bool) -> None:
        prev = self.seen.get((kind, name))
        if prev is not None and prev.item == item:
            return
        definition = Definition(kind, name, item, seq, changed=prev is not None)
        self.seen[(kind, name)] = definition
        if kind == "tools":
            self.removed.pop(name, None)
            before = self._since.pop(name, [])
            if prev is not None and before:
                changed = [p for p in paths(prev.item, item) if p.startswith(RUG_PATHS)]
                if changed:
                    redefinition = Redefinition(name, seq, prev.seq, changed, announced, before)
                    self.redefinitions.append(redefinition)
                    self._open[name] = redefinition
        self._run("declared", definition, seq)

    def _call(self, seq: int, ts: float, params: dict, raw: bytes, recorded) -> Call:
        name = params.get("name") if type(params.get("name")) is str else None
        arguments = params.get("arguments")
        try:
            text = orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS).decode()
        except (TypeError, orjson.JSONEncodeError):  # past what orjson writes (depth, a huge number)
            arguments = normalised(arguments)
            text = repr(arguments)
        if len(text) > MAX_TEXT:
            text = text[:MAX_TEXT] + f"… [{len(text)} characters]"
        call = Call(seq, ts, name, arguments, text, listed=self.current is not None, raw=raw, recorded=recorded,
                    retry="requestState" in params or "inputResponses" in params)
        if name is not None:
            if self.current is not None and name in self.current:
                found = self.seen.get(("tools", name))
                call.declared = found.item if found is not None else None
            call.removed_at = self.removed.get(name)
            self._since.setdefault(name, []).append(seq)
            if name in self._open:
                self._open[name].calls_after.append(seq)
        self.calls.append(call)
        self._run("call", call, seq)
        call.raw = call.recorded = call.arguments = None  # read by the rules now or never (`text` stays)
        return call

    def validator(self, schema: Any) -> Any:
        """The compiled validator of a tool's inputSchema (analyzer/analysis/results.py `compiled`: the
        same cache as the output schemas', asked once per definition), or None where it cannot be
        compiled or jsonschema-rs is absent."""
        if results.jsonschema_rs is None:
            return None
        known = self._validators.get(id(schema))
        if known is None or known[0] is not schema:
            known = self._validators[id(schema)] = (schema, results.compiled(schema))
        return known[1]

    def repeats(self, call: Call) -> list[int]:
        """The frames of the calls of the same tool with the same arguments within the loop window
        up to this one (this one last). Called once per call, by `call-loop`."""
        key = (call.name, call.text)
        recent = self._repeats.get(key)
        if recent is None:  # the common case: a call made once (a list, not a deque: a tenth of the memory)
            self._repeats[key] = [(call.ts, call.seq)]
            return [call.seq]
        recent.append((call.ts, call.seq))
        while recent and call.ts - recent[0][0] > self.loop_seconds:
            del recent[0]
        return [seq for _ts, seq in recent]

    # -- rules ----------------------------------------------------------------------------------

    def _run(self, event: str, item: Any, seq: int) -> None:
        for rule in self.rules[event]:
            hits = rule.check(item, self)
            if hits is None:
                continue
            for hit in (hits if isinstance(hits, list) else [hits]):
                if rule.code in FOLLOWED and event == "declared":
                    self._poisoned.append((len(self.findings), item))
                self.add(rule, hit, seq)

    def add(self, rule, hit, seq: int | None) -> None:
        severity = hit.severity or rule.severity_for("mcp")
        if self.policy is not None:
            severity = self.policy.severity(rule.code, severity)
            if severity is None:
                if self._poisoned and self._poisoned[-1][0] == len(self.findings):
                    self._poisoned.pop()
                return
        self.findings.append(Finding(self.session_id, hit.seq if hit.seq is not None else seq, None, rule.code,
                                     severity, storable(safe(hit.message)), hit.related))

    def end(self) -> list[Finding]:
        """The session is read: the redefinitions and the session's calls judged, and what
        followed each poisoned description added to its finding."""
        for redefinition in self.redefinitions:
            self._run("redefined", redefinition, redefinition.seq)
        self._run("reading", self.calls, None)
        for index, definition in self._poisoned:
            self.findings[index] = _followed(self.findings[index], definition, self.calls,
                                             self.tools | frozenset(self.catalogue))
        return self.findings


def _followed(finding: Finding, definition: Definition, calls: list[Call], tools: frozenset[str]) -> Finding:
    """The finding with the calls after the definition named, and the call that carries what its
    descriptions ask for flagged (and made its related frame)."""
    later = [c for c in calls if c.seq > definition.seq]
    if not later:
        return finding._replace(message=finding.message + "; no tools/call followed")
    text = "\n".join(t for _, t in patterns.descriptions(definition.item))
    asked = patterns.asks(text, tools - {definition.name})
    flagged, carried = None, None
    for call in later:
        for thing in asked:
            if thing in call.text or thing == call.name:
                flagged, carried = call, thing
                break
        if flagged is not None:
            break
    shown = ", ".join(f"frame {c.seq} {c.name or '?'}" for c in later[:SHOWN_CALLS])
    more = f" and {len(later) - SHOWN_CALLS} more" if len(later) > SHOWN_CALLS else ""
    message = f"{finding.message}; then {len(later)} tools/call: {shown}{more}"
    if flagged is not None:
        message += (f"; frame {flagged.seq} ({flagged.name or '?'}) carries {carried!r}, "
                    "which the description asks for")
    return finding._replace(message=storable(safe(message)),
                            related_frame=flagged.seq if flagged is not None else later[0].seq)


def _key(value: Any) -> int | str | None:
    """A request id as the answers are paired by: an int or a str as it is (7 and "7" differ), else None."""
    return value if type(value) is int or type(value) is str else None
