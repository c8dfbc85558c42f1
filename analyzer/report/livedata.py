"""What `mcptap view` answers the viewer's script with (analyzer/report/live.py serves it as
JSON): the sessions and runs, pages of the frame list (every frame, or those a display filter
selects, compiled to SQL by analyzer/store/filtersql.py and kept as their positions), a frame
whole, a session's frames in a time window for the diagram (or their density) and its longest idle
gaps (a run's: analyzer/report/liveruns.py), its stderr. The database is read-only here; a session
being recorded grows: another connection's commit is seen by `refresh`. A frame not yet analysed
is shown with the kind, method and id its own bytes give (analysis/classify)."""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict

import orjson

from mcptap.analysis.classify import classify
from mcptap.report import viewdata
from mcptap.store import filterlang, filtersql, viewpages
from mcptap.wire.textsafe import json_text

PAGE_MAX = 500  # frames in one page of the list
WINDOW_MAX = 1500  # arrows in the diagram's window (past it, how many in each slice of it)
DENSITY_BUCKETS = 4096  # the slices of a window drawn as a density band
IDLE_GAPS = 64  # the longest idle gaps of a session, which the diagram draws short
RAW_CHARS = 1_048_576  # a frame's bytes shown in the detail pane
STDERR_LINES = 20_000
SELECTIONS = 8  # filters whose selections are kept
DIRECTIONS = {"c2s": 0, "s2c": 1}


def _text(raw) -> str | None:
    if raw is None:
        return None
    return raw.decode("utf-8", "backslashreplace") if isinstance(raw, bytes) else str(raw)


def _guess(head) -> tuple[str | None, str | None, str | None]:
    """(kind, method, id as JSON text) of a frame not analysed yet, from its own bytes."""
    if head is None:
        return None, None, None
    try:
        value = orjson.loads(head)
    except orjson.JSONDecodeError:
        return "unparseable", None, None
    kind = classify(value)[1]
    if type(value) is not dict:
        return kind, None, None
    method = value.get("method") if type(value.get("method")) is str else None
    ident = orjson.dumps(value["id"]).decode() if "id" in value else None
    return kind, method, ident


class Selection:
    """The frames a filter selects, as (session number, seq) pairs in list order."""

    def __init__(self, numbers: list[int], seqs: list[int]):
        self.numbers, self.seqs = numbers, seqs

    def __len__(self) -> int:
        return len(self.seqs)

    def locate(self, n: int, seq: int) -> int:
        k = self._bisect(n, seq)
        return k if k < len(self) and self.numbers[k] == n and self.seqs[k] == seq else -1

    def _bisect(self, n: int, seq: int) -> int:
        lo, hi = 0, len(self)
        while lo < hi:
            mid = (lo + hi) // 2
            if (self.numbers[mid], self.seqs[mid]) < (n, seq):
                lo = mid + 1
            else:
                hi = mid
        return lo


class LiveView:
    """The database as the live viewer reads it: one read-only connection per thread."""

    def __init__(self, db: str):
        self.db = db
        self._local = threading.local()
        self._lock = threading.Lock()
        self._version = None
        self.changes = 0  # how many times the database was seen to change
        self._selections: OrderedDict[str, Selection] = OrderedDict()
        self._counting: dict[str, threading.Event] = {}  # filters whose frames a thread is finding
        self.refresh()

    def conn(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = viewpages.connect_readonly(self.db)
            filtersql.prepare(conn)
        return conn

    def refresh(self) -> bool:
        """Read the sessions again when another connection committed since; whether it had."""
        conn = self.conn()
        version = viewpages.data_version(conn)
        with self._lock:
            if version == self._version:
                return False
            self.changes += 1
            sessions = viewpages.sessions(conn)
            counts = viewpages.analysis_counts(conn)
            starts, total = [], 0
            for s in sessions:
                starts.append(total)
                total += s["frames"] or 0
                revision, errors, warnings, infos = counts.get(s["id"], (None, None, None, None))
                s.update(revision=revision, errors=errors, warnings=warnings, infos=infos)
            self.sessions, self.starts, self.total = sessions, starts, total
            self.number = {s["id"]: n for n, s in enumerate(sessions)}
            self.runs = viewdata.runs_json(conn, list(self.number))
            self.run_of = {r["run"]: r for r in self.runs}
            self._selections.clear()
            self._version = version
            return True

    def summary(self) -> dict:
        """The sessions (their frames' counts and spans, relative times) and the total."""
        self.refresh()
        out = []
        for s in self.sessions:
            start = s["started_at"]
            out.append({"id": s["id"], "label": s["label"], "transport": s["transport"], "started_at": start,
                        "ended_at": s["ended_at"], "frames": s["frames"] or 0, "revision": s["revision"],
                        "errors": s["errors"], "warnings": s["warnings"], "infos": s["infos"],
                        "t0": min(0.0, (s["first_ts"] or start) - start), "t1": (s["last_ts"] or start) - start})
        return {"sessions": out, "runs": self.runs, "total": self.total, "changes": self.changes}

    def selection(self, text: str) -> Selection | None:
        """The frames `text` selects (None: every frame); FilterError when it is not a filter. One
        thread finds a filter's frames; another asking for the same filter meanwhile waits for it."""
        text = text.strip()
        if not text:
            return None
        tree = filterlang.parse(text)
        self.refresh()
        while True:
            with self._lock:
                if text in self._selections:
                    self._selections.move_to_end(text)
                    return self._selections[text]
                busy = self._counting.get(text)
                if busy is None:
                    busy = self._counting[text] = threading.Event()
                    break
            busy.wait()
        try:
            found = self._select(tree)
            self._keep(text, found)
        finally:
            with self._lock:
                self._counting.pop(text, None)
            busy.set()
        return found

    def _select(self, tree) -> Selection:
        sql, params = filtersql.select(self.conn(), tree)
        rows = self.conn().execute(sql, params).fetchall()
        sids, seqs = zip(*rows) if rows else ((), ())
        numbers = list(map(self.number.get, sids))  # whole columns at once
        if None in numbers:  # a session begun since the last refresh: left out until the next
            kept = [k for k, n in enumerate(numbers) if n is not None]
            numbers, seqs = [numbers[k] for k in kept], [seqs[k] for k in kept]
        return Selection(numbers, list(seqs))

    def counted(self, text: str) -> Selection | None:
        """The filter's frames when already found, else None; FilterError when it is not a filter."""
        text = text.strip()
        filterlang.parse(text)
        self.refresh()
        with self._lock:
            if text in self._selections:
                self._selections.move_to_end(text)
                return self._selections[text]
        return None

    def _keep(self, text: str, found: Selection) -> None:
        with self._lock:
            self._selections[text] = found
            while len(self._selections) > SELECTIONS:
                self._selections.popitem(last=False)

    def _count(self, text: str) -> None:
        """Finds the filter's frames in a thread (unless one already does)."""
        with self._lock:
            if text in self._counting:
                return

        def run():
            try:
                self.selection(text)
            except Exception:  # noqa: BLE001  (the page asks again, and is answered the error then)
                pass
        threading.Thread(target=run, daemon=True, name="mcptap-filter").start()

    def first_rows(self, text: str, limit: int) -> list[dict]:
        """The first `limit` rows of the filter's list, found session by session in list order,
        each query stopping once it has the rows still wanted."""
        tree = filterlang.parse(text.strip())
        out: list[dict] = []
        for n, s in enumerate(self.sessions):
            if len(out) >= limit:
                break
            if not s["frames"]:
                continue
            seqs = filtersql.first(self.conn(), tree, s["id"], limit - len(out))
            if seqs:
                out += self._rows(n, viewpages.by_seq(self.conn(), s["id"], seqs))
        return out

    def rows(self, text: str, offset: int, limit: int) -> dict:
        """The page of the list (every frame or the filter's) from `offset`, and the list's length.
        The first page of a filter whose frames are not all found yet is answered at once, with
        `counting` true and the rows in hand as its length; its frames are found in a thread."""
        limit = max(0, min(limit, PAGE_MAX))
        if text.strip() and offset <= 0 and self.counted(text) is None:
            rows = self.first_rows(text, limit + 1)
            if len(rows) <= limit:  # every session read: these are all the filter's frames
                self._keep(text.strip(), Selection([r["n"] for r in rows], [r["seq"] for r in rows]))
                return {"total": len(rows), "offset": 0, "rows": rows}
            self._count(text.strip())
            return {"total": limit, "offset": 0, "rows": rows[:limit], "counting": True}
        found = self.selection(text)
        out: list[dict] = []
        if found is None:
            total = self.total
            k = max(0, offset)
            while len(out) < limit and k < total:
                n = bisect.bisect_right(self.starts, k) - 1
                within = k - self.starts[n]
                take = min(limit - len(out), (self.sessions[n]["frames"] or 0) - within)
                if take <= 0:
                    break
                out += self._rows(n, viewpages.page(self.conn(), self.sessions[n]["id"], within, take))
                k += take
        else:
            total = len(found)
            part = range(max(0, offset), min(total, max(0, offset) + limit))
            k = part.start
            while k < part.stop:
                n = found.numbers[k]
                end = k
                while end < part.stop and found.numbers[end] == n:
                    end += 1
                out += self._rows(n, viewpages.by_seq(self.conn(), self.sessions[n]["id"], found.seqs[k:end]))
                k = end
        return {"total": total, "offset": offset, "rows": out}

    def _rows(self, n: int, rows: list[tuple]) -> list[dict]:
        sid, start = self.sessions[n]["id"], self.sessions[n]["started_at"]
        found: dict[int, list] = {}
        for seq, idx, code, severity, message, related in viewpages.findings_of(self.conn(), sid, [seq for seq, *_ in rows]):
            found.setdefault(seq, []).append([n, seq, -1 if idx is None else idx, code, severity, message, related or 0])
        out = []
        for seq, ts, direction, size, exchange, kind, ident, method, paired, latency, pair_ts, blob, head in rows:
            if kind is None and head is not None:
                kind, method, ident = _guess(head if not blob else bytes(head))
            out.append({"n": n, "seq": seq, "t": round(ts - start, 6), "d": DIRECTIONS.get(direction, 1),
                        "k": kind or "", "m": method or "", "id": ident, "p": paired or 0, "l": latency,
                        "pt": None if pair_ts is None else round(pair_ts - start, 6), "z": size, "b": int(blob),
                        "x": exchange is not None, "f": found.get(seq, [])})
        return out

    def locate(self, text: str, sid: str, seq: int) -> int:
        """The frame's position in the list (-1: not in it)."""
        n = self.number.get(sid)
        if n is None:
            return -1
        found = self.selection(text)
        if found is None:
            return self.starts[n] + viewpages.position(self.conn(), sid, seq)
        return found.locate(n, seq)

    def frame(self, sid: str, seq: int) -> dict | None:
        """One frame whole: its row, its bytes (up to RAW_CHARS), its findings and HTTP exchange."""
        n = self.number.get(sid)
        if n is None:
            return None
        rows = self._rows(n, viewpages.by_seq(self.conn(), sid, [seq]))
        if not rows:
            return None
        row = rows[0]
        raw, size = viewpages.frame_bytes(self.conn(), sid, seq, RAW_CHARS)
        row["raw"] = _text(raw)
        row["cut"] = size > RAW_CHARS and raw is not None and len(raw) >= RAW_CHARS
        ex_id = self._exchange_id(sid, seq) if row["x"] else None
        row["x"] = self._exchange(ex_id, self.sessions[n]["started_at"]) if ex_id else None
        if row["p"]:
            pair = viewpages.by_seq(self.conn(), sid, [row["p"]])
            row["pk"] = (pair[0][5] or "") if pair else ""
        return row

    def _exchange_id(self, sid: str, seq: int):
        rows = viewpages.by_seq(self.conn(), sid, [seq])
        return rows[0][4] if rows else None

    def _exchange(self, ex_id: str, start: float) -> dict | None:
        ex = viewpages.exchange(self.conn(), ex_id)
        return None if ex is None else viewdata.exchange_json(ex, start)

    def window(self, sid: str, t_from: float, t_to: float, limit: int = WINDOW_MAX, text: str = "") -> dict:
        """The session's frames between two times (relative to its start) for the diagram, each
        marked `v` 1 or 0 by whether the display filter `text` (once its frames are found) keeps
        it; past `limit` frames, how many fall in each of DENSITY_BUCKETS slices of the window
        instead (`density`: `counts`, and `hits` of the filter's frames)."""
        n = self.number.get(sid)
        if n is None:
            return {"rows": [], "every": 1, "total": 0}
        start = self.sessions[n]["started_at"]
        limit = max(1, min(limit, WINDOW_MAX))
        counts = viewpages.time_histogram(self.conn(), sid, start + t_from, start + t_to, DENSITY_BUCKETS)
        total = sum(counts)
        if total > limit:
            hits = None
            if text.strip():
                try:
                    hits = filtersql.histogram(self.conn(), filterlang.parse(text), sid, start + t_from, start + t_to,
                                               DENSITY_BUCKETS)
                except filterlang.FilterError:
                    hits = None
            return {"rows": [], "every": 1, "total": total,
                    "density": {"from": t_from, "to": t_to, "counts": counts, "hits": hits}}
        rows = self.arrows(sid, t_from, t_to, text)
        return {"rows": rows, "every": 1, "total": len(rows)}

    def arrows(self, sid: str, t_from: float, t_to: float, text: str = "") -> list[dict]:
        """The session's rows between two times (relative to its start), each marked `v` as
        `window` says."""
        n = self.number.get(sid)
        if n is None:
            return []
        start = self.sessions[n]["started_at"]
        seqs = viewpages.seqs_in_time(self.conn(), sid, start + t_from, start + t_to)
        rows = self._rows(n, viewpages.by_seq(self.conn(), sid, seqs))
        try:
            found = self.counted(text) if text.strip() else None
        except filterlang.FilterError:
            found = None
        if found is not None:
            for row in rows:
                row["v"] = int(found.locate(n, row["seq"]) >= 0)
        return rows

    def gaps(self, sid: str) -> list:
        """The session's IDLE_GAPS longest stretches without a frame, as [from, to] relative to its
        start, and the one before its first frame."""
        n = self.number.get(sid)
        if n is None:
            return []
        start, first = self.sessions[n]["started_at"], self.sessions[n]["first_ts"]
        gaps = [[round(a - start, 6), round(b - start, 6)] for a, b in viewpages.idle_gaps(self.conn(), sid, IDLE_GAPS)]
        return ([[0.0, round(first - start, 6)]] if first is not None and first > start else []) + gaps

    def stderr(self, sid: str) -> list:
        n = self.number.get(sid)
        if n is None:
            return []
        return viewdata.stderr_json(viewpages.stderr_lines(self.conn(), sid, STDERR_LINES, 4 * viewdata.STDERR_CHARS),
                                    self.sessions[n]["started_at"])


def dumps(value) -> bytes:
    """JSON as every output writes it: bidi, format and control characters as \\u escapes."""
    return json_text(orjson.dumps(value).decode("utf-8")).encode("utf-8")
