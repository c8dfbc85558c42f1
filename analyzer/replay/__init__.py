"""`mcptap replay`: send the client side of a recorded session to a live server and compare
what it answers with what was recorded.

How it paces itself (the issue left this open): by answers, not by the clock. Before each client
frame is sent, every answer the recording had received before that frame was sent must have
come back live (or its wait timed out). That keeps the causal order the recording had (an
`initialized` notification goes after the initialize answer, a cancellation while its request
is still running) without waiting for idle gaps.

Ids: the client's own requests go out with their recorded ids. The server's requests
(sampling, elicitation, roots, ping) are answered as they arrive, with the recorded answer to
the server's request of the same method in the same order, under the live request's id; a
server request the recording has no answer for gets `{}` for ping and a JSON-RPC error
otherwise, and counts as a difference.

Compared: each answer to a client request, member by member (analyzer/replay/jsondiff.py), and each
server request with its recorded counterpart (all but its id). The replay is recorded as a
session of its own whose `replay_of` names the original."""

from __future__ import annotations

import json
import queue
import shlex
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

from mcp_types import jsonrpc

from mcptap import store

from mcptap.replay import jsondiff, live, live_http, script

from mcptap.report import jsonout

from mcptap.wire import jsonwire
from mcptap.wire.textsafe import printable, printing
from mcptap.analysis.classify import ERROR, REQUEST, RESPONSE, classify
from mcptap.errors import MCPTapError
from mcptap.analysis.messages import id_key

DEFAULT_TIMEOUT_S = 10.0
UNKNOWN_METHOD = jsonrpc.METHOD_NOT_FOUND


@dataclass
class Compared:
    """One recorded server message and what the live server sent in its place."""

    recorded: script.Message
    live: Any = None  # the live message (parsed), None when none came
    changes: list[jsondiff.Change] = field(default_factory=list)
    note: str | None = None  # why there is nothing to compare

    @property
    def equal(self) -> bool:
        return not self.changes and self.note is None


@dataclass
class Outcome:
    original: str
    replay: str | None
    target: str
    compared: list[Compared] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)  # live server requests the recording had no answer for
    error: str | None = None  # the replay could not be carried out
    sent: int = 0

    @property
    def equal(self) -> bool:
        return self.error is None and not self.extra and all(c.equal for c in self.compared)

    @property
    def exit_status(self) -> int:
        return 2 if self.error is not None else (0 if self.equal else 1)


def replay(db_path: str, ref: str, *, command: str | list[str] | None = None, url: str | None = None,
           sse: bool = False, ignore: tuple[str, ...] | list[str] = (), timeout: float = DEFAULT_TIMEOUT_S,
           record: bool = True, label: str | None = None, command_from_log: bool = False,
           announce: Callable[[str], None] = lambda line: None, max_frame: int | None = None) -> Outcome:
    """Replay session `ref` against the server `command` starts (or at `url`). Neither given: an
    HTTP recording's URL; a stdio recording's command line only with `command_from_log`, after
    `announce` was given it (a recording, an imported one above all, may name any command), and
    MCPTapError without it. A frame from the live server longer than `max_frame` (default
    analyzer/wire/bounded.py's) is kept and recorded cut, and reported, not compared."""
    try:
        ignored = jsondiff.Ignore(ignore)
    except ValueError as exc:
        raise MCPTapError(str(exc)) from None
    if command is not None and url is not None:
        raise MCPTapError("give the live server as --command or as --url, not both")
    if command_from_log and (command is not None or url is not None):
        raise MCPTapError("--command-from-log takes the server from the recording: leave out --command and --url")
    conn = store.open_existing(db_path)
    try:
        recorded = script.load(conn, ref)
        if command is None and url is None:
            command, url, sse = recorded_target(conn, recorded.session)
            _allowed(recorded.session, command, command_from_log, announce)
    finally:
        conn.close()
    if not any(m.direction == script.C2S for m in recorded.messages()):
        raise MCPTapError(f"session {recorded.session['id']} has no client messages to replay")
    inbox: queue.Queue[live.Inbound] = queue.Queue()
    if command is not None:
        server: live.Live = live.StdioLive(command, inbox, None)
    elif sse:
        server = live_http.LegacySseLive(url, inbox, None, timeout=timeout)
    else:
        server = live_http.StreamableHttpLive(url, inbox, None, timeout=timeout)
    if max_frame is not None:
        server.max_frame = max_frame
    recording = None
    if record:
        recording = live.Recording(db_path, live.session_for(server, recorded.session, label))
        server.recording = recording
    outcome = Outcome(recorded.session["id"], recording.id if recording else None, server.describe)
    status = None
    try:
        server.start()
        _Driver(recorded, server, inbox, ignored, timeout, outcome).run()
    except MCPTapError as exc:
        outcome.error = str(exc)
    finally:
        status = server.close()
        if recording is not None:
            recording.close(status)
    return outcome


def recorded_target(conn, session: dict) -> tuple[list[str] | None, str | None, bool]:
    """The server a session was recorded from, when neither --command nor --url is given: the
    command line a stdio recording ran, or the URL an HTTP recording's first POST (or legacy
    event stream) went to."""
    if session.get("command"):
        try:
            argv = json.loads(session["command"])
        except ValueError:
            argv = None
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise MCPTapError(f"session {session['id']} names its server as {session['command']!r}, not a command "
                              "line mcptap can run: give --command or --url")
        return argv, None, False
    exchanges = store.session_exchanges(conn, session["id"]) if session.get("transport") in ("http", "sse") else []
    for exchange in exchanges:
        if exchange.get("endpoint"):
            return None, exchange["url"], True
    for exchange in exchanges:
        if exchange["method"] == "POST":
            return None, exchange["url"], False
    raise MCPTapError(f"session {session['id']} names no server to replay against "
                      f"(transport {session.get('transport')}): give --command or --url")


def _allowed(session: dict, argv: list[str] | None, from_log: bool, announce: Callable[[str], None]) -> None:
    """A command line named by a recording runs only when the user said so (`--command-from-log`),
    and is announced first; a URL is only connected to."""
    sid = session["id"]
    if argv is None:
        if from_log:
            raise MCPTapError(f"--command-from-log: session {sid} names no server command (it was recorded over "
                              f"{session.get('transport')}); give --command or --url")
        return
    line = shlex.join(argv)
    if not from_log:
        raise MCPTapError(f"session {sid} was recorded from the server command {line}: mcptap runs a command from a "
                          "recording only when asked; give --command \"CMD ARGS...\" or --command-from-log")
    announce(printable(f"mcptap replay: running the server command from the recording: {line}"))


@dataclass(frozen=True)
class CutAnswer:
    """A live answer longer than --max-frame: its full size and the bytes kept of it."""

    size: int
    kept: int


class _Stop(Exception):
    """The live server went away or never answered: the replay cannot go on."""


class _Driver:
    def __init__(self, recorded: script.Script, server: live.Live, inbox, ignore: jsondiff.Ignore, timeout: float,
                 outcome: Outcome):
        self.script = recorded
        self.server = server
        self.inbox = inbox
        self.ignore = ignore
        self.timeout = timeout
        self.outcome = outcome
        self.answers: dict[tuple, Any] = {}  # live answers to the client's requests, by id
        self.heard = False  # the server has sent anything at all
        self.closed: str | None = None
        # the server's own requests, recorded and live, by method in order
        self.recorded_requests: dict[str, list[script.Message]] = defaultdict(list)
        for msg in recorded.messages(script.S2C, REQUEST):
            self.recorded_requests[msg.method].append(msg)
        self.live_requests: dict[str, int] = defaultdict(int)
        self.sent_requests: set[tuple] = set()
        self._timed_out: set[tuple] = set()  # answers given up on
        self.init_key = next((id_key(m.id) for m in recorded.messages(script.C2S, REQUEST) if m.method == "initialize"),
                             None)  # the initialize request's id: its answer names the version

    # -- the run -------------------------------------------------------------------------------

    def run(self) -> None:
        awaited: list[script.Message] = []  # recorded answers to wait for, in recorded order
        answered_before: list[script.Message] = sorted(
            (m for m in self.script.messages(script.S2C) if m.request is not None and m.request.direction == script.C2S),
            key=lambda m: m.seq)
        position = 0
        try:
            for frame in self.script.client_frames:
                while position < len(answered_before) and answered_before[position].seq < frame.seq:
                    awaited.append(answered_before[position])
                    position += 1
                for answer in awaited:
                    self._wait_for(answer)
                awaited = []
                if frame.messages and all(m.kind in (RESPONSE, ERROR) and m.request is not None for m in frame.messages):
                    continue  # the client's answers to the server's requests go out when those come in
                self._send(frame)
            for answer in answered_before[position:]:
                self._wait_for(answer)
            self._drain(0.2)  # whatever the server still says right after its last answer
        except _Stop as stop:
            self.outcome.error = str(stop)
        self._compare()

    def _send(self, frame: script.Frame) -> None:
        if self.closed is not None:
            raise _Stop(self._closed_message(frame))
        for msg in frame.messages:
            if msg.kind == REQUEST:
                self.sent_requests.add(id_key(msg.id))
        self.server.send(frame.raw, frame.messages[0].value if len(frame.messages) == 1 else None)
        self.outcome.sent += 1

    def _wait_for(self, answer: script.Message) -> None:
        """Until the live answer to `answer`'s request is in, or the wait times out."""
        key = id_key(answer.request.id)
        if key not in self.sent_requests:
            return
        deadline = time.monotonic() + self.timeout
        while key not in self.answers and key not in self._timed_out:
            left = deadline - time.monotonic()
            if self.closed is not None:
                raise _Stop(self._closed_message(answer.request))
            if left <= 0:
                if not self.heard:
                    raise _Stop(f"the server never answered: no answer to {answer.request.label()} "
                                f"within {self.timeout:g} s")
                self._timed_out.add(key)
                return
            self._take(left)

    def _drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while self.closed is None and (left := deadline - time.monotonic()) > 0:
            self._take(left)

    def _take(self, wait: float) -> None:
        try:
            item = self.inbox.get(timeout=wait)
        except queue.Empty:
            return
        if item.closed is not None:
            self.closed = self.closed or item.closed
            return
        self.heard = True
        if item.size is not None:  # kept cut at --max-frame: never parsed, never compared
            ident = script.id_in_prefix(item.raw)
            if ident is not script.NO_ID:
                self.answers.setdefault(id_key(ident), CutAnswer(item.size, len(item.raw)))
            return
        parsed = jsonwire.parse(item.raw)
        if parsed.error is not None:
            return
        values = parsed.value if type(parsed.value) is list else [parsed.value]
        for value in values:
            kind = classify(value)[1]
            if kind in (RESPONSE, ERROR):
                self.answers.setdefault(id_key(value.get("id")), value)
                self._note_version(value)
            elif kind == REQUEST:
                self._server_request(value)

    def _note_version(self, value: dict) -> None:
        """After the initialize answer, HTTP requests carry the negotiated version."""
        result = value.get("result")
        if self.init_key is not None and id_key(value.get("id")) == self.init_key and type(result) is dict \
                and type(result.get("protocolVersion")) is str:
            self.server.protocol_version = result["protocolVersion"]

    def _server_request(self, value: dict) -> None:
        method = value.get("method")
        n = self.live_requests[method]
        self.live_requests[method] += 1
        recorded = self.recorded_requests.get(method, [])
        counterpart = recorded[n] if n < len(recorded) else None
        if counterpart is not None:
            self.outcome.compared.append(Compared(counterpart, value, self._diff(counterpart.value, value, drop_id=True)))
        if counterpart is not None and counterpart.answer is not None:
            reply = dict(counterpart.answer.value)
            reply["id"] = value.get("id")
        elif method == "ping":
            reply = {"jsonrpc": "2.0", "id": value.get("id"), "result": {}}
        else:
            self.outcome.extra.append(f"the server sent {method} request #{n + 1}, which the recording has no answer for "
                                      f"(answered with a JSON-RPC error)")
            reply = {"jsonrpc": "2.0", "id": value.get("id"),
                     "error": {"code": UNKNOWN_METHOD, "message": f"mcptap replay: no recorded answer to {method}"}}
        self.server.send(jsonwire.to_json(reply).encode("utf-8"))

    def _closed_message(self, msg: script.Message | script.Frame) -> str:
        what = msg.label() if isinstance(msg, script.Message) else f"frame {msg.seq}"
        return f"{self.closed} (before {what})"

    # -- the comparison ------------------------------------------------------------------------

    def _diff(self, recorded: Any, live_value: Any, *, drop_id: bool = False) -> list[jsondiff.Change]:
        if drop_id and type(recorded) is dict and type(live_value) is dict:
            recorded = {k: v for k, v in recorded.items() if k != "id"}
            live_value = {k: v for k, v in live_value.items() if k != "id"}
        return jsondiff.diff(recorded, live_value, self.ignore)

    def _compare(self) -> None:
        for msg in self.script.messages(script.C2S, REQUEST):
            if msg.answer is None or id_key(msg.id) not in self.sent_requests:
                continue
            value = self.answers.get(id_key(msg.id))
            if value is None:
                note = "no answer" + (f" within {self.timeout:g} s" if self.outcome.error is None else "")
                self.outcome.compared.append(Compared(msg.answer, None, [], note))
            elif type(value) is CutAnswer:
                note = (f"the live answer is {value.size} bytes, past --max-frame: recorded cut at {value.kept} "
                        "bytes, not compared")
                self.outcome.compared.append(Compared(msg.answer, None, [], note))
            else:
                self.outcome.compared.append(Compared(msg.answer, value, self._diff(msg.answer.value, value)))
        for method, recorded in self.recorded_requests.items():
            for msg in recorded[self.live_requests.get(method, 0):]:
                self.outcome.compared.append(Compared(msg, None, [], "the server did not send this request"))
        self.outcome.compared.sort(key=lambda c: (c.recorded.seq, c.recorded.idx or 0))


# -- what is printed ------------------------------------------------------------------------------

def render(outcome: Outcome, write: Callable[[str], None]) -> None:
    """The human report: one block per differing message, then a one-line verdict. Every line
    `write` is given is printable (textsafe.printing)."""
    write = printing(write)
    who = f" -> recorded as session {outcome.replay}" if outcome.replay else ""
    write(printable(f"replayed session {outcome.original} against {outcome.target}{who}"))
    differing = [c for c in outcome.compared if not c.equal]
    for c in differing:
        what = c.recorded.label()
        if c.recorded.request is not None:
            what = f"answer to {c.recorded.request.label()}"
        write(printable(f"{what}:"))
        if c.note:
            write(f"  {printable(c.note)}")
        for change in c.changes:
            write(f"  {printable(str(change))}")
    for line in outcome.extra:
        write(printable(line))
    if outcome.error is not None:
        return  # said on stderr by the caller
    total = len(outcome.compared)
    if outcome.equal:
        write(f"equal: {total} message{'s' if total != 1 else ''} compared, no differences")
    else:
        write(f"different: {len(differing)} of {total} message{'s' if total != 1 else ''} differ"
              + (f", {len(outcome.extra)} unexpected server request{'s' if len(outcome.extra) != 1 else ''}"
                 if outcome.extra else ""))


def as_json(outcome: Outcome) -> dict:
    """The replay as `--format json` gives it (analyzer/report/jsonout.py): the sessions, the verdict,
    and per compared message its changes, each member's recorded and live values as the wire
    wrote them (null where there is none)."""
    return {
        "original": outcome.original, "replay": outcome.replay, "target": outcome.target,
        "equal": outcome.equal, "error": outcome.error, "exit_status": outcome.exit_status, "sent": outcome.sent,
        "unexpected": outcome.extra,
        "messages": [{
            "frame": c.recorded.seq, "index": c.recorded.idx,
            "what": c.recorded.label() if c.recorded.request is None else f"answer to {c.recorded.request.label()}",
            "equal": c.equal, "note": c.note,
            "changes": [{"op": ch.op, "path": ch.where,
                         "recorded": None if ch.op == jsondiff.ADDED else jsonout.Raw(jsonwire.to_json(ch.recorded)),
                         "live": None if ch.op == jsondiff.REMOVED else jsonout.Raw(jsonwire.to_json(ch.live))}
                        for ch in c.changes],
        } for c in outcome.compared],
    }
