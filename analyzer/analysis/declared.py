"""The definitions a server declared in one session (MCP server/tools, server/prompts,
server/resources and initialize's `instructions`): each tools/list, prompts/list, resources/list
and resources/templates/list answer (pages of one listing joined by their cursor), the server's
name and version (initialize's `serverInfo`), the tools/call requests and the size of their
results. Pure: frames (seq, direction, raw bytes) in, a `Declared` out. Then how two sets of
definitions differ (`compare`), member by member, each difference named by its JSON path.

Every definition, instructions text and tool result is `normalised` as it is read, before it is
kept, compared, written to a baseline or counted: at most MAX_DEPTH levels deep, each string at
most MAX_TEXT characters, the whole at most MAX_SIZE characters of JSON. What lies past a bound is
replaced by a mark of what was left out, `[left out: N bytes, sha256 H]` (its size and the digest
of its JSON): nothing is dropped for being deep or long, and a change past a bound still changes
the mark."""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from mcptap.wire import jsonwire
from mcptap.wire.jsonpath import format_path

LISTS = {"tools/list": ("tools", "name"), "prompts/list": ("prompts", "name"),
         "resources/list": ("resources", "uri"), "resources/templates/list": ("resourceTemplates", "uriTemplate")}
"""Each list method: the member of its result that holds the definitions, and the key naming one."""
KINDS = ("tools", "prompts", "resources", "resourceTemplates")
SINGULAR = {"tools": "tool", "prompts": "prompt", "resources": "resource", "resourceTemplates": "resource template",
            "instructions": "instructions"}
LIST_CHANGED = {"notifications/tools/list_changed": ("tools",), "notifications/prompts/list_changed": ("prompts",),
                "notifications/resources/list_changed": ("resources", "resourceTemplates")}
ADDED, REMOVED, CHANGED = "added", "removed", "changed"
WANTED = frozenset({"initialize", *LISTS, *LIST_CHANGED, "tools/call"})
"""The methods whose messages the definitions are read from (a tools/call: its request only)."""


def wanted(rows, into: list[int], calls: list[int]) -> None:
    """The frames among these message rows (analyzer/analysis/messages.py MessageRow, the session
    core's lists) that the definitions are read from, added to `into`, and the tools/call requests,
    added to `calls`."""
    for _sid, seq, _idx, _direction, kind, _id, method, _paired, _latency in rows:
        if method in WANTED:
            if method != "tools/call":
                into.append(seq)
            elif kind == "request":
                calls.append(seq)


NEEDLES = (b"tools", b"prompts", b"resources", b"serverInfo", b"instructions", b"initialize")
"""Every frame the definitions depend on has one of these byte strings (the store filters by them)."""


@dataclass
class Listing:
    """One listing of a kind: the definitions by name, the frame of its (last) answer, and whether a
    list_changed notification of that kind came before it in the session."""
    kind: str
    seq: int
    items: dict[str, Any] = field(default_factory=dict)
    announced: bool = False
    listed: bool = field(default=False, compare=False)  # in its session's `listings` already


@dataclass
class Declared:
    """What one session's server declared, in the order it did."""
    session_id: str
    name: str | None = None
    version: str | None = None
    instructions: str | None = None
    instructions_seq: int | None = None
    listings: list[Listing] = field(default_factory=list)
    calls: list[tuple[int, str]] = field(default_factory=list)  # (request seq, tool name)
    results: list[tuple[str, int, Any]] = field(default_factory=list)  # (tool name, response seq, result)

    def latest(self) -> dict[str, Listing]:
        """The last complete listing of each kind."""
        out: dict[str, Listing] = {}
        for listing in self.listings:
            out[listing.kind] = listing
        return out

    def definitions(self) -> dict[str, Any]:
        """The last definitions of each kind, and the instructions: what a baseline keeps."""
        out: dict[str, Any] = {kind: listing.items for kind, listing in self.latest().items()}
        if self.instructions is not None:
            out["instructions"] = self.instructions
        return out


def _parsed(raw: bytes) -> list:
    """The messages of a frame; one nested past what orjson reads (1024 levels) is parsed by the
    wire's iterative parser, so depth hides no definition."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        value = jsonwire.parse(raw).value
    if type(value) is list:
        return [v for v in value if type(v) is dict]
    return [value] if type(value) is dict else []


MAX_DEPTH = 64
"""Levels of nesting a normalised value keeps (JSON writers stop at 254; a baseline nests a
definition five levels down)."""
MAX_TEXT = 65_536
"""Characters of one string a normalised value keeps."""
MAX_SIZE = 262_144
"""Characters of JSON a normalised value takes, about (a tokenizer refuses a text of a million)."""
LEFT_OUT = re.compile(r"\[left out: ([0-9]+) bytes, sha256 [0-9a-f]{16}\]")
"""The mark that stands for what a normalised value left out (its size in bytes of compact JSON)."""


def normalised(value: Any) -> Any:
    """`value` (parsed JSON) bounded (MAX_DEPTH, MAX_TEXT, MAX_SIZE): a string past MAX_TEXT
    keeps its start and ends with the mark of the rest; a container past MAX_DEPTH, or any value
    once the whole reached MAX_SIZE, is the mark of itself (a string)."""
    budget = [MAX_SIZE]
    return _bounded(value, 0, budget)


SEEN_BYTES = 1 << 20
"""Bytes of compact JSON of the definitions `normalised_seen` keeps normalised (per process)."""
_SEEN: dict[bytes, Any] = {}
_SEEN_SIZE = [0]


def normalised_seen(value: Any) -> Any:
    """`normalised(value)`, kept by the value's compact JSON: a definition listed again (a
    tools/list answered the same way, in this session or another) is bounded once. What orjson
    cannot write (a number the wire's parser kept as text) is bounded every time."""
    try:
        key = orjson.dumps(value)
    except TypeError:  # JSONEncodeError is one
        return normalised(value)
    found = _SEEN.get(key)
    if found is None:
        found = normalised(value)
        if len(key) <= SEEN_BYTES // 16:
            if _SEEN_SIZE[0] + len(key) > SEEN_BYTES:
                _SEEN.clear()
                _SEEN_SIZE[0] = 0
            _SEEN[key] = found
            _SEEN_SIZE[0] += len(key)
    return found


def _bounded(value: Any, depth: int, budget: list[int]) -> Any:
    kind = type(value)
    if kind is str:
        if len(value) <= MAX_TEXT and len(value) + 2 <= budget[0]:
            budget[0] -= len(value) + 2
            return value
        keep = max(0, min(MAX_TEXT, budget[0] - 2))
        budget[0] -= keep + 2
        return value[:keep] + _mark(value[keep:])
    if kind is dict or kind is list:
        if depth >= MAX_DEPTH or budget[0] <= 2:
            budget[0] -= 60
            return _mark(value)
        budget[0] -= 2
        if kind is list:
            return [_bounded(v, depth + 1, budget) for v in value]
        out = {}
        for k, v in value.items():
            budget[0] -= len(k) + 3
            out[k if len(k) <= MAX_TEXT else k[:MAX_TEXT] + _mark(k[MAX_TEXT:])] = _bounded(v, depth + 1, budget)
        return out
    if kind is jsonwire.NumberText:  # a number the wire's parser kept as written: a float, or its text past one
        number = float(value.text)
        value = number if math.isfinite(number) else value.text
    elif kind is int and not -2 ** 63 <= value < 2 ** 64:  # past what JSON writers take: its digits
        value = str(value)
    if budget[0] <= 0:
        return _mark(value)
    budget[0] -= 8
    return value


def _mark(value: Any) -> str:
    """`[left out: N bytes, sha256 H]` of `value`: its compact JSON's size and digest, written
    without recursion (a value nested a thousand levels is measured as one nested ten)."""
    digest, size = hashlib.sha256(), 0
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is tuple:  # a key and its value
            key, member = item
            piece = orjson.dumps(key) + b":"
            stack.append(member)
        elif type(item) is bytes:  # a closing bracket or a comma
            piece = item
        elif type(item) is dict:
            piece = b"{"
            stack.append(b"}")
            for n, pair in enumerate(reversed(list(item.items()))):
                stack.append(pair)
                if n < len(item) - 1:
                    stack.append(b",")
        elif type(item) is list:
            piece = b"["
            stack.append(b"]")
            for n, v in enumerate(reversed(item)):
                stack.append(v)
                if n < len(item) - 1:
                    stack.append(b",")
        else:
            piece = item.text.encode() if type(item) is jsonwire.NumberText else orjson.dumps(
                item if type(item) is not int or -2 ** 63 <= item < 2 ** 64 else str(item))
        digest.update(piece)
        size += len(piece)
    return f"… [left out: {size} bytes, sha256 {digest.hexdigest()[:16]}]"


def _key(value: Any) -> str | None:
    return orjson.dumps(value).decode() if type(value) in (int, str) else None


def collect(session_id: str, frames, *, results: bool = False) -> Declared:
    """The definitions of one session from its frames (seq, direction, raw), in seq order.
    `results`: also keep each tools/call result (for its size)."""
    out = Declared(session_id)
    pending: dict[str, tuple[str, bool, Any]] = {}  # request id -> (method, continues a listing, tool name)
    open_listing: dict[str, Listing] = {}  # kind -> a listing still fetching pages
    announced: set[str] = set()
    for seq, direction, raw in frames:
        for msg in _parsed(raw):
            method = msg.get("method")
            params = msg.get("params") if type(msg.get("params")) is dict else {}
            if direction == "c2s" and type(method) is str:
                key = _key(msg.get("id"))
                if key is None:
                    continue
                if method == "tools/call":
                    name = params.get("name")
                    if type(name) is str:
                        out.calls.append((seq, name))
                        if results:
                            pending[key] = (method, False, name)
                elif method in LISTS or method == "initialize":
                    pending[key] = (method, "cursor" in params, None)
            elif direction == "s2c" and type(method) is str:
                for kind in LIST_CHANGED.get(method, ()):
                    announced.add(kind)
            elif direction == "s2c" and "id" in msg:
                asked = pending.pop(_key(msg.get("id")) or "", None)
                result = msg.get("result")
                if asked is None or type(result) is not dict:
                    continue
                method, continues, tool = asked
                if method == "initialize":
                    info = result.get("serverInfo") if type(result.get("serverInfo")) is dict else {}
                    out.name = info.get("name") if type(info.get("name")) is str else None
                    out.version = info.get("version") if type(info.get("version")) is str else None
                    if type(result.get("instructions")) is str:
                        out.instructions, out.instructions_seq = normalised(result["instructions"]), seq
                elif method == "tools/call":
                    out.results.append((tool, seq, normalised(result)))
                else:
                    _page(out, open_listing, announced, LISTS[method], result, seq, continues)
    return out


def _page(out: Declared, open_listing: dict, announced: set, how: tuple[str, str], result: dict, seq: int,
          continues: bool) -> None:
    kind, key = how
    items = result.get(kind)
    if type(items) is not list:
        return
    listing = open_listing.get(kind) if continues else None
    if listing is None:
        listing = Listing(kind, seq, announced=kind in announced)
        announced.discard(kind)
    listing.seq = seq
    for item in items:
        if type(item) is dict and type(item.get(key)) is str:
            item = normalised_seen(item)
            listing.items[item[key]] = item
    if result.get("nextCursor") is not None:
        open_listing[kind] = listing
    else:
        open_listing.pop(kind, None)
    if not listing.listed:
        listing.listed = True
        out.listings.append(listing)


@dataclass(frozen=True)
class Delta:
    """One definition that differs: added, removed or changed (with the JSON paths that differ,
    relative to the definition)."""
    op: str
    kind: str
    name: str
    paths: tuple[str, ...] = ()

    @property
    def what(self) -> str:
        if self.kind == "instructions":
            return "the server's instructions"
        return f"{SINGULAR[self.kind]} {orjson.dumps(self.name).decode()}"


def compare(before: dict[str, Any], after: dict[str, Any], kinds=(*KINDS, "instructions")) -> list[Delta]:
    """How the definitions `after` differ from `before` (each a `Declared.definitions()`), for the
    kinds both declared (a kind never listed in one of them is not compared)."""
    deltas: list[Delta] = []
    for kind in kinds:
        if kind not in before or kind not in after:
            continue
        if kind == "instructions":
            if before[kind] != after[kind]:
                deltas.append(Delta(CHANGED, kind, "", ("$",)))
            continue
        old, new = before[kind], after[kind]
        for name in sorted(set(old) | set(new)):
            if name not in old:
                deltas.append(Delta(ADDED, kind, name))
            elif name not in new:
                deltas.append(Delta(REMOVED, kind, name))
            elif old[name] != new[name]:
                deltas.append(Delta(CHANGED, kind, name, tuple(paths(old[name], new[name]))))
    return deltas


def paths(a: Any, b: Any, at: tuple = ()) -> list[str]:
    """The JSON paths where `a` and `b` differ (a member present in one only is its own path)."""
    if type(a) is dict and type(b) is dict:
        out: list[str] = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(format_path((*at, k)))
            else:
                out.extend(paths(a[k], b[k], (*at, k)))
        return out
    if type(a) is list and type(b) is list and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b)) for p in paths(x, y, (*at, i))]
    return [] if a == b and type(a) is type(b) else [format_path(at)]
