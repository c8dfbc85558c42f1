"""Live telemetry of a recording (`mcptap record --otlp-endpoint URL`, the OTEL_EXPORTER_OTLP_*
variables: analyzer/report/otlp_env.py): the spans of each request and notification, and the
duration histograms, by the MCP semantic conventions exactly as the export maps them
(analyzer/report/otlp_spans.py, otlp_metrics.py, the same span ids), sent over OTLP/HTTP as the
frames are stored, not at the end.

It runs in the capture's recorder process (this module's `main` is that process when telemetry is
asked for: the stdio recorder, addons/stdio/recorder.py, with a hook), never on the wire's. The
recorder hands each batch of stored frames to `LiveTelemetry.frames`, which only appends them to
a bounded queue (MAX_FRAMES frames, MAX_BYTES bytes) and never waits: a full queue drops the
frame and counts it. A sender thread pairs requests with their answers (analysis/classify for the
kind, analysis/paired's Operation), builds spans and POSTs them every FLUSH_S (or BATCH_SPANS at a
time), once each, without retries: an export that fails (the endpoint down, refusing, slow past
its timeout) drops its spans, counts them, and the sender backs off (BACKOFF_S doubling up to
MAX_BACKOFF_S), dropping what it builds meanwhile, so the queue keeps moving and memory stays
bounded. The histograms (cumulative) go every METRICS_S and at the end. At the end the sender has
CLOSE_GRACE_S to send the rest; what it could not is counted too, and the counts are stored in the
session's row (`sessions.telemetry`, shown by `mcptap sessions` and `show`); while recording the
sender stores them too, at most every KEEP_S when they changed (otlp_live_counts.py), so a recorder
killed mid-recording keeps the counts up to its last store. What only an analysis
of the whole session knows (findings, the revision a later frame establishes) is in the export,
not in the live spans."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable

import orjson

from mcptap.analysis import mcp, paired
from mcptap.analysis.classify import classify
from mcptap.errors import warn_stderr
from mcptap.report import otlp, otlp_env, otlp_http, otlp_live_counts, otlp_metrics, otlp_spans

MAX_FRAMES = 10_000
MAX_BYTES = 32 << 20
"""The queue's bounds: past either a frame is dropped (and counted), never waited for."""
FLUSH_S = 0.25
BATCH_SPANS = 512
METRICS_S = 10.0
BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0
CLOSE_GRACE_S = 3.0
"""At the end of the recording, how long the sender has to send what is still queued."""
KEEP_S = 1.0
"""While recording, how often at most the sender stores the counts (when they changed), so a
recorder killed mid-recording leaves what it sent and dropped up to then."""


class _Pairs:
    """Requests waiting for their answer, as analysis/paired.py `operations` pairs them, fed one
    frame at a time: each call gives the operations that frame completes (an answered request, a
    notification standing alone) at once; progress and cancellation become notes of their request."""

    def __init__(self, session_id: str):
        self.session_id = session_id
        self.waiting: dict[tuple[str, str], paired.Operation] = {}
        self.by_token: dict[tuple[str, str], paired.Operation] = {}

    def feed(self, seq: int, ts: float, direction: str, raw: bytes) -> list[paired.Operation]:
        done = []
        for idx, value in paired.messages(raw):
            kind = classify(value)[1]
            method = value.get("method")
            if kind == "request" and isinstance(method, str):
                op = paired.Operation(self.session_id, seq, idx, ts, direction, method, value.get("id"), value)
                self.waiting[(direction, orjson.dumps(value.get("id")).decode())] = op
                token = op.meta.get("progressToken")
                if token is not None:
                    self.by_token[(direction, orjson.dumps(token).decode())] = op
            elif kind in ("response", "error"):
                asker = mcp.S2C if direction == mcp.C2S else mcp.C2S
                op = self.waiting.pop((asker, orjson.dumps(value.get("id")).decode()), None)
                if op is None:
                    continue
                paired.answered(op, value, kind, seq, ts)
                token = op.meta.get("progressToken")
                if token is not None:
                    self.by_token.pop((op.direction, orjson.dumps(token).decode()), None)
                done.append(op)
            elif kind == "notification" and isinstance(method, str):
                params = value.get("params") if isinstance(value.get("params"), dict) else {}
                owner = None
                if method == "notifications/progress":
                    asker = mcp.S2C if direction == mcp.C2S else mcp.C2S
                    owner = self.by_token.get((asker, orjson.dumps(params.get("progressToken")).decode()))
                elif method == "notifications/cancelled":
                    owner = self.waiting.get((direction, orjson.dumps(params.get("requestId")).decode()))
                if owner is not None:
                    owner.notes.append(paired.Note(seq, ts, method, params))
                    continue
                done.append(paired.Operation(self.session_id, seq, idx, ts, direction, method, mcp.ABSENT, value,
                                             outcome=paired.NOTIFICATION))
        return done

    def rest(self) -> list[paired.Operation]:
        """The requests never answered, at the end."""
        for op in self.waiting.values():
            op.outcome = paired.CANCELLED if any(n.method == "notifications/cancelled" for n in op.notes) \
                else paired.UNANSWERED
        rest, self.waiting = list(self.waiting.values()), {}
        return rest


class _Session:
    """What the sender keeps of one session: its facts, its waiting requests, its span times."""

    def __init__(self, row: dict):
        self.facts = otlp_spans.SessionFacts(row, {}, [])
        self.pairs = _Pairs(self.facts.session_id)
        self.first: float | None = None
        self.last: float | None = None
        self.batch: list[tuple[str, object]] = []


COUNTS = ("spans_sent", "spans_dropped", "frames_dropped", "points_sent", "points_dropped")
"""What is counted, per session (the data points: of the whole recording process, in each of its sessions)."""


class LiveTelemetry:
    """The bounded queue (`frames`, called by the recorder) and the sender thread, for the
    sessions one recorder process stores."""

    def __init__(self, config: otlp_env.Config, *, warn: Callable[[str], None] = warn_stderr,
                 max_frames: int = MAX_FRAMES, max_bytes: int = MAX_BYTES,
                 keep: Callable[[dict[str, dict[str, int]]], None] | None = None):
        """`keep(counts)`: called by the sender thread while recording, at most every KEEP_S and
        only when the counts changed, with each session's counts (as `close` gives them)."""
        self.config = config
        self._keep = keep
        self._kept: dict | None = None
        self._warn = warn
        self._max_frames, self._max_bytes = max_frames, max_bytes
        self._queue: deque[tuple] = deque()
        self._bytes = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._rows: dict[str, dict] = {}  # the sessions' rows, as the recorder gave them
        self._counts: dict[str, dict[str, int]] = {}
        self._points = {"points_sent": 0, "points_dropped": 0}
        self._said: set[str] = set()
        self._thread = threading.Thread(target=self._run, name="mcptap-otlp-live", daemon=True)
        self._resume_at = 0.0
        self._backoff = BACKOFF_S
        self._in_flight: tuple[str, int] | None = None  # (session, spans) of the export under way

    # -- the recorder's side: never waits ---------------------------------------------------

    def session(self, row: dict) -> None:
        """A session begins (its row); the first starts the sender."""
        with self._lock:
            self._rows[row["id"]] = row
            self._counted(row["id"])
        if not self._thread.is_alive() and not self._stop.is_set():
            self._thread.start()

    def frames(self, rows: list[tuple]) -> None:
        """Stored frame rows (session, seq, ts, direction, raw, ...): queued, or dropped and counted."""
        with self._lock:
            for sid, seq, ts, direction, raw, *_rest in rows:
                size = len(raw)
                if len(self._queue) >= self._max_frames or self._bytes + size > self._max_bytes:
                    self._counted(sid)["frames_dropped"] += 1
                    continue
                self._queue.append((sid, seq, ts, direction, raw))
                self._bytes += size
        self._wake.set()

    def end(self, sid: str) -> None:
        """A session ended (HTTP): the sender sends what it waited for and forgets it."""
        with self._lock:
            self._queue.append((sid, None, None, None, b""))  # past the bound: an end is never dropped
        self._wake.set()

    def close(self, grace: float = CLOSE_GRACE_S) -> dict[str, dict[str, int]]:
        """End: the sender sends what is left within `grace` seconds; the counts of each session
        (what was not sent is counted as dropped)."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(grace)
        with self._lock:
            if self._thread.is_alive() and self._in_flight is not None:  # stuck in an export: not sent
                self._counted(self._in_flight[0])["spans_dropped"] += self._in_flight[1]
            for sid, seq, *_ in self._queue:
                if seq is not None:
                    self._counted(sid)["frames_dropped"] += 1
            self._queue.clear()
            return self._snapshot()

    def _snapshot(self) -> dict[str, dict[str, int]]:
        """Each session's counts, the data points' with them (under the lock)."""
        return {sid: {**counts, **self._points} for sid, counts in self._counts.items()}

    def _keep_counts(self) -> None:
        """The counts to `keep`, when they changed since it was last given them; a failure is
        said once, and the counts are given again next time."""
        with self._lock:
            counts = self._snapshot()
        if counts == self._kept or self._stop.is_set():  # stopping: `close` gives the last counts
            return
        try:
            self._keep(counts)
        except Exception as exc:  # noqa: BLE001 - the telemetry goes on; the counts are stored at the end
            self._say("keep", f"live telemetry: cannot store its counts yet ({type(exc).__name__}: {exc})")
            return
        self._kept = counts

    def _counted(self, sid: str) -> dict[str, int]:
        counts = self._counts.get(sid)
        if counts is None:
            counts = self._counts[sid] = {"spans_sent": 0, "spans_dropped": 0, "frames_dropped": 0}
        return counts

    # -- the sender thread -----------------------------------------------------------------

    def _take(self) -> list[tuple]:
        with self._lock:
            taken = list(self._queue)
            self._queue.clear()
            self._bytes = 0
        return taken

    def _state(self, sessions: dict[str, _Session], sid: str) -> _Session:
        state = sessions.get(sid)
        if state is None:
            with self._lock:
                row = self._rows.get(sid) or {"id": sid}
            state = sessions[sid] = _Session(row)
        return state

    def _run(self) -> None:
        sessions: dict[str, _Session] = {}
        durations = otlp_metrics.Durations()
        last_flush = last_metrics = last_keep = time.monotonic()
        stopping = False
        while True:
            if not stopping:
                self._wake.wait(FLUSH_S)
                self._wake.clear()
                stopping = self._stop.is_set()
            done = []
            ended = []
            for sid, seq, ts, direction, raw in self._take():
                state = self._state(sessions, sid)
                if seq is None:  # the session ended: its requests never answered, then it is forgotten
                    done += [(state, op) for op in state.pairs.rest()]
                    ended.append(state)
                    continue
                raw = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
                done += [(state, op) for op in state.pairs.feed(seq, ts, direction, raw)]
            if stopping:
                done += [(state, op) for state in sessions.values() for op in state.pairs.rest()]
            for state, op in done:
                _learn(state.facts, op)
                durations.operation(state.facts, op)
                end = op.response_ts if op.response_ts is not None else op.ts
                state.first = op.ts if state.first is None else min(state.first, op.ts)
                state.last = end if state.last is None else max(state.last, end)
                state.batch.extend(otlp_spans.spans(state.facts, op))
            now = time.monotonic()
            if stopping or ended or now - last_flush >= FLUSH_S or any(len(s.batch) >= BATCH_SPANS
                                                                       for s in sessions.values()):
                for state in sessions.values():
                    for at in range(0, len(state.batch), BATCH_SPANS):
                        self._send(state.facts.session_id, otlp.traces_request(state.facts,
                                                                                state.batch[at:at + BATCH_SPANS]))
                    state.batch = []
                last_flush = now
            for state in ended:
                durations.session(state.facts, state.first, state.last)
                sessions.pop(state.facts.session_id, None)
            if stopping or now - last_metrics >= METRICS_S:
                if stopping:
                    for state in sessions.values():
                        durations.session(state.facts, state.first, state.last)
                metrics = durations.metrics()
                if metrics:
                    self._send(None, otlp.metrics_request(metrics))
                last_metrics = now
            if stopping:
                return
            if self._keep is not None and time.monotonic() - last_keep >= KEEP_S:
                self._keep_counts()
                last_keep = time.monotonic()

    def _send(self, sid: str | None, request) -> None:
        """One export, once; `sid` None: the metrics."""
        traces = sid is not None
        target = self.config.traces if traces else self.config.metrics
        n = (sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans) if traces else
             sum(len(m.histogram.data_points) for rm in request.resource_metrics for sm in rm.scope_metrics
                 for m in sm.metrics))
        counts = self._counted(sid) if traces else self._points
        sent_key, dropped_key = ("spans_sent", "spans_dropped") if traces else ("points_sent", "points_dropped")
        if time.monotonic() < self._resume_at and not self._stop.is_set():
            with self._lock:
                counts[dropped_key] += n  # backing off: the endpoint failed a moment ago
            return
        self._in_flight = (sid, n) if traces else None
        try:
            accepted, rejected, _message = otlp_http.export(request, target.url, target.headers, compress=target.gzip,
                                                            attempts=1, timeout=target.timeout_s, json=target.json)
        except otlp_http.OtlpError as exc:
            with self._lock:
                self._in_flight = None
                counts[dropped_key] += n
            self._resume_at = time.monotonic() + self._backoff
            self._backoff = min(self._backoff * 2, MAX_BACKOFF_S)
            self._say("down", f"live telemetry: {exc}; dropping what it cannot send (counted in the session's row)")
            return
        with self._lock:
            self._in_flight = None
            counts[sent_key] += accepted
            counts[dropped_key] += rejected
        self._backoff = BACKOFF_S

    def _say(self, what: str, message: str) -> None:
        if what not in self._said:
            self._said.add(what)
            self._warn(message)


def _learn(facts: otlp_spans.SessionFacts, op: paired.Operation) -> None:
    """The names of client and server, and the revision the server's initialize answer gives."""
    otlp_spans.learn_names(facts, op)
    if op.method == "initialize" and isinstance(op.response, dict):
        result = op.response.get("result")
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if isinstance(version, str):
            facts.revision = version


def finish(live: LiveTelemetry, db_path: str) -> None:
    """The recording ended: the rest sent (or counted), the counts stored, or said."""
    counts = live.close()
    if not counts:
        return
    try:
        otlp_live_counts.store_counts(db_path, counts)
    except Exception as exc:  # noqa: BLE001 - the recording is stored; its telemetry counts are said
        warn_stderr(f"cannot store the live telemetry's counts ({type(exc).__name__}: {exc}): {counts}")


def _watch(live: LiveTelemetry) -> Callable[[list], None]:
    """The HTTP recorder's batches (store ops, numbered and redacted) to the live telemetry."""
    from mcptap.store.ops import EndOp, FrameOp, SessionOp

    def watch(ops: list) -> None:
        for op in ops:
            if op.__class__ is SessionOp:
                live.session(op.row)
        live.frames([op.row for op in ops if op.__class__ is FrameOp])
        for op in ops:
            if op.__class__ is EndOp:
                live.end(op.session_id)
    return watch


def main() -> None:
    """A capture's recorder process with live telemetry: `python -m mcptap.report.otlp_live
    --stdio|--http DB ...` (then the arguments of addons/stdio/recorder.py or
    addons/http/recorder.py), the endpoint from the environment (otlp_env.OPTION_ENV, the
    OTEL_EXPORTER_OTLP_* variables)."""
    from mcptap.addons.shipping.background import recorder_main

    http = sys.argv[1:2] == ["--http"]
    if sys.argv[1:2] in (["--http"], ["--stdio"]):
        del sys.argv[1]
    if http:
        from mcptap.addons.http import recorder
    else:
        from mcptap.addons.stdio import recorder
    try:
        config = otlp_env.resolve(os.environ.get(otlp_env.OPTION_ENV) or None)
    except ValueError as exc:
        warn_stderr(f"live telemetry is off: {exc}")
        config = None
    if config is None:
        recorder_main(recorder.record_from, "mcptap.report.otlp_live", "the recorder")
        return

    def record_from(fd, db_path, redaction, *, max_frame):
        keeper = otlp_live_counts.CountsStore(db_path)
        live = LiveTelemetry(config, keep=keeper)
        try:
            if http:
                return recorder.record_from(fd, db_path, redaction, max_frame=max_frame, watch=_watch(live))
            return recorder.record_from(fd, db_path, redaction, max_frame=max_frame, on_frames=live.frames,
                                        on_session=live.session)
        finally:
            finish(live, db_path)
            keeper.close()

    recorder_main(record_from, "mcptap.report.otlp_live", "the recorder")


if __name__ == "__main__":
    main()
