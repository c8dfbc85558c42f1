"""The parsers accept what they promise: JSON nested at any
depth (orjson reads 1024 levels but writes only 254, so 255 to 1024 was the trap), numbers too
large for a float (1e400, -1e400, 400 digits) in ids and in params, and database cells of the
wrong type, in every command that reads frames (real subprocesses of the CLI: analyze in each
format and with workers, show, report, export, redact, replay, serve over stdio and HTTP) and
in the pandas loaders; and worker processes die with their parent, and a dead worker is an
error exit, never exit 1 ("findings found").

The commands over the deep and numeric recording run once, in parallel, in a module fixture;
each test then judges one depth or one number in one command's output."""

from __future__ import annotations

import contextlib
import http.client
import json
import shutil
import signal
import sqlite3
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest

import mcptap.data as mt
from mcptap import engine, store
from mcptap.replay import script
from mcptap.report import listing, transcript
from mcptap.store import cells, migrations
from mcptap.errors import SessionNotFound
from tests.conftest import frames, mcptap, run, wait_for
from tests.support.http_helpers import accepting, free_port
from tests.support.sessions import write_log

HANG_S = 120  # a command still running after this long on these small files is hung
DEPTHS = (254, 255, 256, 1000, 1024, 5000)
BIG = "1" + "0" * 400  # a 401-digit integer: no float holds it
NUMBERS = {"1e400": "1e400", "-1e400": "-1e400", "400-digits": BIG}

INIT = ('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}')
INIT_RESULT = ('{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},'
               '"serverInfo":{"name":"s","version":"1"}}}')
INITIALIZED = '{"jsonrpc":"2.0","method":"notifications/initialized"}'


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def deep_call(depth: int) -> str:
    """A call nested `depth` levels in all (its own object the first, then params, arguments)."""
    return (f'{{"jsonrpc":"2.0","id":{depth},"method":"tools/call","params":{{"name":"t","arguments":'
            f'{{"x":{nested(depth - 3)}}}}}}}')


def deep_result(depth: int) -> str:
    """Its answer, nested as deep (its object, result, then the arrays)."""
    return f'{{"jsonrpc":"2.0","id":{depth},"result":{{"content":[],"y":{nested(depth - 2)}}}}}'


def ping(ident: str) -> str:
    return f'{{"jsonrpc":"2.0","id":{ident},"method":"ping"}}'


def pong(ident: str) -> str:
    return f'{{"jsonrpc":"2.0","id":{ident},"result":{{}}}}'


PROGRESS_CALL = ('{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":"t","arguments":{},'
                 '"_meta":{"progressToken":"tok"}}}')
PROGRESS_VALUES = ("1", BIG, "2e400", "-1e400")  # increasing, then one that is not
PROGRESS_RESULT = '{"jsonrpc":"2.0","id":"p","result":{"content":[]}}'


def progress(value: str) -> str:
    return f'{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"tok","progress":{value}}}}}'


def recording() -> list[tuple[str, str]]:
    """(direction, raw) of the hostile session: a handshake, a call nested at each depth with
    its answer nested as deep, a ping under each huge id and its answer, and a call whose
    progress goes 1, 10**400, 2e400, -1e400."""
    out = [("c2s", INIT), ("s2c", INIT_RESULT), ("c2s", INITIALIZED)]
    for depth in DEPTHS:
        out += [("c2s", deep_call(depth)), ("s2c", deep_result(depth))]
    for number in NUMBERS.values():
        out += [("c2s", ping(number)), ("s2c", pong(number))]
    out.append(("c2s", PROGRESS_CALL))
    out += [("s2c", progress(v)) for v in PROGRESS_VALUES]
    out.append(("s2c", PROGRESS_RESULT))
    return out


FRAMES = recording()
SEQ = {raw: seq for seq, (_, raw) in enumerate(FRAMES, 1)}


def call_seq(depth: int) -> int:
    return SEQ[deep_call(depth)]


def assert_clean(result: subprocess.CompletedProcess, *statuses: int) -> None:
    """One of `statuses`, and nothing on stderr but mcptap's own one-line messages."""
    err = result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err[-3000:]
    stray = [line for line in err.splitlines() if line and not line.startswith("mcptap: ")]
    assert not stray, err[-3000:]
    assert result.returncode in statuses, (result.returncode, err[-3000:])


def error_lines(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.decode("utf-8", "replace").splitlines()
            if line.startswith("mcptap: error: ")]


def cli(*args: str, cwd: Path, input: bytes = b"") -> subprocess.CompletedProcess:
    return run(mcptap(*args), input=input, timeout=HANG_S, cwd=cwd)


# -- the commands over the deep and numeric recording, run once --------------------------------------

def _serve_stdio(folder: Path, db: Path) -> subprocess.CompletedProcess:
    """`mcptap serve` over stdio, sent the recording's client side and then a call nested deeper
    than any recorded one."""
    client = [raw for d, raw in FRAMES if d == "c2s"] + [deep_call(20_000).replace('"id":20000', '"id":"new"')]
    return cli("serve", "--db", str(db), "hostile", cwd=folder, input="\n".join(client).encode() + b"\n")


def _pipeline(folder: Path) -> dict:
    db = folder / "hostile.db"
    log = write_log(folder / "hostile.jsonl", {"hostile": FRAMES}, start=1001.0, per_second=1, session_records=True)
    out: dict = {"db": db, "import": cli("import", "--db", str(db), str(log), cwd=folder)}
    jobs = [("analyze " + fmt, ("analyze", "--db", str(db), "--format", fmt)) for fmt in ("table", "json", "jsonl",
                                                                                          "sarif")]
    jobs += [("show " + fmt, ("show", "--db", str(db), "hostile", "--format", fmt)) for fmt in ("text", "json",
                                                                                               "jsonl")]
    jobs += [("show --full", ("show", "--db", str(db), "hostile", "--full")),
             ("report", ("report", "--db", str(db), "-o", str(folder / "report.html"))),
             ("export", ("export", "--db", str(db), "-o", str(folder / "export.jsonl")))]
    with ThreadPoolExecutor(2) as pool:
        started = {name: pool.submit(cli, *args, cwd=folder) for name, args in jobs}
        stdio = pool.submit(_serve_stdio, folder, db)
        out.update({name: f.result() for name, f in started.items()})
        out["serve"] = stdio.result()
    copy = folder / "redacted.db"
    shutil.copy(db, copy)
    out["redact"] = cli("redact", "--db", str(copy), cwd=folder)
    out["redacted"] = copy
    out["reimport"] = cli("import", "--db", str(folder / "again.db"), str(folder / "export.jsonl"), cwd=folder)
    out["again"] = folder / "again.db"
    replayed = folder / "replayed.db"
    shutil.copy(db, replayed)
    server = " ".join(mcptap("serve", "--db", str(db), "hostile"))
    out["replay"] = cli("replay", "--db", str(replayed), "hostile", "--command", server, "--format", "json",
                        cwd=folder)
    return out


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict:
    return _pipeline(tmp_path_factory.mktemp("hostile"))


def _json(result: subprocess.CompletedProcess):
    return json.loads(result.stdout)


def _lines(result: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines()]


def _frame_records(hostile: dict) -> dict[int, dict]:
    return {r["seq"]: r for r in _json(hostile["show json"])["frames"] if r["record"] == "frame"}


def test_import_stores_every_deep_and_huge_frame_as_its_bytes(hostile):
    assert_clean(hostile["import"], 0)
    assert frames(hostile["db"]) == [raw.encode() for _, raw in FRAMES]


@pytest.mark.parametrize("fmt", ["table", "json", "jsonl", "sarif"])
def test_analyze_reads_deep_and_huge_frames_in_every_format_without_a_traceback(hostile, fmt):
    assert_clean(hostile["analyze " + fmt], 0, 1)
    assert hostile["analyze " + fmt].returncode == hostile["analyze json"].returncode
    if fmt == "sarif":
        assert _json(hostile["analyze sarif"])["version"] == "2.1.0"


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_call_nested_at_any_depth_is_a_request_paired_with_its_answer(hostile, depth):
    report = _json(hostile["analyze json"])
    assert report["sessions"][0]["kinds"] == {"request": 11, "response": 11, "notification": 5}
    seq = call_seq(depth)
    record = _frame_records(hostile)[seq]
    assert (record["kind"], record["id"], record["paired_frame"]) == ("request", depth, seq + 1)
    assert _frame_records(hostile)[seq + 1]["kind"] == "response"
    assert not [f["code"] for f in report["findings"] if f["frame"] in (seq, seq + 1)]


@pytest.mark.parametrize("number", NUMBERS)
def test_an_id_too_large_for_a_float_pairs_with_its_answer_and_is_shown_as_written(hostile, number):
    seq = SEQ[ping(NUMBERS[number])]
    record = _frame_records(hostile)[seq]
    assert (record["kind"], record["paired_frame"]) == ("request", seq + 1)
    line = next(line for line in hostile["show jsonl"].stdout.decode().splitlines() if f'"seq":{seq},' in line)
    assert f'"id":{NUMBERS[number]},' in line  # the id exactly as the wire wrote it, not null or a float


def test_progress_values_too_large_for_a_float_are_compared_exactly(hostile):
    report = _json(hostile["analyze json"])
    by_frame = {}
    for f in report["findings"]:
        by_frame.setdefault(f["frame"], set()).add(f["code"])
    seqs = [SEQ[progress(v)] for v in PROGRESS_VALUES]
    assert [("progress-not-increasing" in by_frame.get(s, set())) for s in seqs] == [False, False, False, True]


@pytest.mark.parametrize("how", ["show text", "show --full", "show jsonl"])
def test_show_prints_deep_and_huge_frames_without_a_traceback(hostile, how):
    assert_clean(hostile[how], 0)
    if how == "show jsonl":
        assert len([r for r in _lines(hostile[how]) if r.get("record") == "frame"]) == len(FRAMES)
    else:
        assert hostile[how].stdout.decode().startswith("session hostile")


def test_report_writes_a_page_of_deep_and_huge_frames(hostile):
    assert_clean(hostile["report"], 0)
    page = (hostile["db"].parent / "report.html").read_text(encoding="utf-8")
    assert page.lstrip().lower().startswith("<!doctype html") and page.rstrip().endswith("</html>")


def test_export_and_import_give_back_every_deep_and_huge_frame(hostile):
    assert_clean(hostile["export"], 0)
    assert_clean(hostile["reimport"], 0)
    assert frames(hostile["again"]) == frames(hostile["db"])


def test_redact_passes_over_deep_and_huge_frames_leaving_them_whole(hostile):
    assert_clean(hostile["redact"], 0)
    assert frames(hostile["redacted"]) == frames(hostile["db"])


def test_replay_against_serve_finds_every_deep_and_huge_answer_equal(hostile):
    assert_clean(hostile["replay"], 0)
    diff = _json(hostile["replay"])
    assert diff["equal"] is True and diff["error"] is None
    assert len(diff["messages"]) == 11


def test_serve_over_stdio_answers_each_deep_call_with_its_recorded_answer_exactly(hostile):
    assert_clean(hostile["serve"], 0)
    answers = hostile["serve"].stdout.splitlines()
    recorded = [raw.encode() for d, raw in FRAMES if d == "s2c"]  # progress under the same token
    assert answers[:len(recorded)] == recorded
    # the unrecorded call, 20,000 deep: matched by method, the last tools/call used answers again
    assert answers[len(recorded):] == [PROGRESS_RESULT.replace('"id":"p"', '"id":"new"').encode()]


@pytest.mark.parametrize("depth", (1000, 5000))
def test_serve_over_http_answers_a_deep_call_with_its_recorded_answer(hostile, depth):
    port = free_port()
    server = subprocess.Popen(mcptap("serve", "--db", str(hostile["db"]), "hostile", "--listen", f"127.0.0.1:{port}"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: accepting(port) or server.poll() is not None, 30, "serve to listen")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for body in (INIT, deep_call(depth)):
            conn.request("POST", "/mcp", body=body.encode(), headers={
                "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                "Origin": f"http://127.0.0.1:{port}"})
            answer = conn.getresponse()
            data = answer.read()
        conn.close()
        assert answer.status == 200, data[:300]
        text = data.decode()
        if "text/event-stream" in (answer.getheader("Content-Type") or ""):
            text = "".join(line[5:].strip() for line in text.splitlines() if line.startswith("data:"))
        assert text == deep_result(depth)
        assert server.poll() is None  # still serving
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        rest = server.stderr.read().decode("utf-8", "replace")
        server.stderr.close()
    assert "Traceback" not in rest, rest


def test_the_pandas_loaders_read_deep_and_huge_frames(hostile):
    db = hostile["db"]
    every = mt.frames(db, columns=mt.FRAME_COLUMNS)
    parsed = mt.parse(every["raw"])
    assert len(parsed) == len(FRAMES) and parsed.notna().all()
    msgs = mt.messages(db)
    assert len(msgs) == len(FRAMES)
    assert len(mt.latency(msgs)) == 3
    assert len(mt.sessions(db)) == 1 and not mt.findings(db).empty
    assert mt.value(db, "hostile", call_seq(5000))["id"] == 5000


# -- analyze --jobs 2 over many sessions, some nested deep --------------------------------------------

def test_analyze_with_two_workers_analyses_every_session_of_a_deep_database_as_one_process_does(tmp_path):
    sessions = {f"s{i:02}": [("c2s", INIT), ("s2c", INIT_RESULT), ("c2s", INITIALIZED),
                             ("c2s", deep_call(DEPTHS[i % len(DEPTHS)])), ("s2c", deep_result(DEPTHS[i % len(DEPTHS)]))]
                for i in range(25)}
    log = write_log(tmp_path / "many.jsonl", sessions, start=1001.0, per_second=1, session_records=True)
    db = tmp_path / "many.db"
    assert_clean(cli("import", "--db", str(db), str(log), cwd=tmp_path), 0)
    alone = cli("analyze", "--db", str(db), "--format", "json", cwd=tmp_path)
    two = cli("analyze", "--db", str(db), "--format", "json", "--jobs", "2", cwd=tmp_path)
    assert_clean(alone, 0)
    assert_clean(two, 0)
    assert [s["kinds"] for s in _json(two)["sessions"]] == [{"request": 2, "response": 2, "notification": 1}] * 25
    def judged(report):  # when each was analysed differs, by nature
        return [{k: v for k, v in s.items() if k not in ("analyzed", "analyzed_at")} for s in report["sessions"]]

    assert judged(_json(two)) == judged(_json(alone))


# -- workers die with their parent; a dead worker is an error -------------------------------------

BUSY_DEPTH = 3000  # a frame nested this deep takes milliseconds: a few hundred keep a worker busy


def busy_database(path: Path, sessions: dict[str, int]) -> Path:
    """A real database whose sessions hold this many calls nested BUSY_DEPTH deep each."""
    conn = store.connect(path)
    with conn:
        for sid, n in sessions.items():
            store.insert_session(conn, {"id": sid, "transport": "import", "label": sid, "started_at": 1000.0})
            store.insert_frames(conn, sid, [(i, 1000.0 + i, "c2s", deep_call(BUSY_DEPTH).replace(
                f'"id":{BUSY_DEPTH}', f'"id":{i}').encode(), 0) for i in range(1, n + 1)])
    conn.close()
    return path


def children(pid: int) -> list[psutil.Process]:
    with contextlib.suppress(psutil.NoSuchProcess):
        return psutil.Process(pid).children()
    return []


def stop(processes) -> None:
    for p in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs(list(processes), timeout=10)


def gone(processes: list[psutil.Process]) -> bool:
    return not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in processes)


def test_workers_of_a_sigkilled_analyze_die_with_it(tmp_path):
    db = busy_database(tmp_path / "busy.db", {"a": 400, "b": 400, "c": 400})
    # --jobs 3: two worker processes and the command's own (analyzer/engine/workers.py in_workers)
    parent = subprocess.Popen(mcptap("analyze", "--db", str(db), "--jobs", "3", "--format", "json"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[psutil.Process] = []
    try:
        workers = wait_for(lambda: len(children(parent.pid)) >= 2 and children(parent.pid), 60, "two workers")
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        wait_for(lambda: gone(workers), 10, "the workers to end with their parent")
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        stop(workers)


def test_a_worker_killed_mid_analysis_is_a_one_line_error_and_the_finished_sessions_keep_their_results(tmp_path):
    db = busy_database(tmp_path / "busy.db", {"big": 600, "small1": 2, "small2": 2})
    # --jobs 3: two worker processes (the big session's and a small one's) and the command's own (the other small)
    proc = subprocess.Popen(mcptap("analyze", "--db", str(db), "--jobs", "3", "--format", "json"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    workers: list[psutil.Process] = []

    def small_ones_stored() -> bool:
        conn = sqlite3.connect(db, timeout=5)
        try:
            return conn.execute("SELECT count(*) FROM analyses WHERE session_id LIKE 'small%'").fetchone()[0] == 2
        except sqlite3.OperationalError:  # not yet there, or locked a moment
            return False
        finally:
            conn.close()

    try:
        workers = wait_for(lambda: len(children(proc.pid)) >= 2 and children(proc.pid), 60, "two workers")
        wait_for(small_ones_stored, 60, "the small sessions' results to be stored")
        assert proc.poll() is None, "the big session was analysed before a worker could be killed"
        busiest = max(workers, key=lambda p: sum(p.cpu_times()[:2]))
        busiest.kill()
        out, err = proc.communicate(timeout=HANG_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        stop(workers)
    result = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    assert_clean(result, 2)  # an error, not 1 ("findings found") and not a traceback
    assert len(error_lines(result)) == 1
    assert small_ones_stored()


# -- cells of the wrong type ------------------------------------------------------------------------

HAR_BODY = ('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
            '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}')


def _har(path: Path) -> Path:
    entry = {"startedDateTime": "2026-11-30T10:00:00.000Z", "time": 12.5,
             "request": {"method": "POST", "url": "http://127.0.0.1:8000/mcp", "httpVersion": "HTTP/1.1",
                         "headers": [{"name": "content-type", "value": "application/json"}],
                         "postData": {"mimeType": "application/json", "text": HAR_BODY}},
             "response": {"status": 200, "httpVersion": "HTTP/1.1",
                          "headers": [{"name": "content-type", "value": "application/json"},
                                      {"name": "mcp-session-id", "value": "abc"}],
                          "content": {"mimeType": "application/json",
                                      "text": INIT_RESULT.replace('"id":0', '"id":1')}},
             "timings": {"send": 1, "wait": 10, "receive": 1.5}}
    path.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"},
                                        "entries": [entry]}}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def analysed(tmp_path_factory) -> Path:
    """A database with every table filled: a stdio-like session with stderr lines, an HTTP
    session with its exchange, analysed (messages, findings, analyses)."""
    folder = tmp_path_factory.mktemp("cells")
    db = folder / "good.db"
    log = folder / "s.jsonl"
    lines = [json.dumps({"record": "session", "session": "s"})]
    lines += [json.dumps({"session": "s", "seq": seq, "ts": 1000.0 + seq, "direction": d, "raw": raw})
              for seq, (d, raw) in enumerate(FRAMES[:5] + [("c2s", "not json")], 1)]  # a parse-error finding
    lines.append(json.dumps({"record": "stderr", "session": "s", "seq": 1, "ts": 1000.5, "raw": "starting"}))
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert_clean(cli("import", "--db", str(db), str(log), str(_har(folder / "h.har")), cwd=folder), 0)
    assert_clean(cli("analyze", "--db", str(db), cwd=folder), 0, 1)
    conn = sqlite3.connect(db)
    assert all(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in cells.COLUMNS)
    conn.close()
    return db


WRONG = {"text": "'soon'", "real": "2.5", "blob": "x'ff00'", "null": "NULL"}
"""A value of each storage class (an integer or a real put in a TEXT column is stored as text)."""


def _wrong_cases() -> list[tuple[str, str, str]]:
    """(table, column, what) for each column and each storage class it does not take (and, for
    a column of named values, a text that is none of them)."""
    out = []
    for table, columns in cells.COLUMNS.items():
        for column, (allowed, nullable, values) in columns.items():
            for kind in WRONG:
                if kind in allowed or (kind == "null" and nullable) or (kind == "real" and allowed == cells.TEXT):
                    continue
                out.append((table, column, kind))
            if values is not None:
                out.append((table, column, "text"))
    return out


def _spoil(good: Path, folder: Path, table: str, column: str, kind: str) -> Path | None:
    """A copy of `good` with the first row's `column` of `table` set to a value of `kind`; None
    when SQLite itself refuses that (NOT NULL and CHECK constraints are enforced)."""
    db = folder / f"{table}-{column}-{kind}.db"
    shutil.copy(good, db)
    conn = sqlite3.connect(db)
    try:
        with conn:
            conn.execute(f'UPDATE "{table}" SET "{column}" = {WRONG[kind]} WHERE rowid = (SELECT min(rowid) FROM "{table}")')
    except sqlite3.IntegrityError:
        return None
    finally:
        conn.close()
    return db


PANDAS_LOADERS = {"sessions": mt.sessions, "analyses": mt.sessions, "frames": lambda db: mt.frames(
    db, columns=mt.FRAME_COLUMNS), "messages": mt.messages, "findings": mt.findings, "exchanges": mt.exchanges,
    "stderr_lines": lambda db: None}


def _refused(exc: BaseException, table: str, column: str) -> bool:
    """BadCell naming the cell, or the analysis failing for it (the other sessions analysed)."""
    return (isinstance(exc, (cells.BadCell, engine.AnalysisFailed)) and f"{table}.{column} " in str(exc)
            and "\n" not in str(exc))


@pytest.mark.parametrize("table, column, kind", _wrong_cases())
def test_a_cell_of_the_wrong_type_is_read_or_refused_naming_it_by_every_reader(analysed, tmp_path, table, column,
                                                                               kind):
    db = _spoil(analysed, tmp_path, table, column, kind)
    if db is None:
        pytest.skip("SQLite refuses this value in this column")
    def opened(read):
        def call():
            with contextlib.closing(store.open_existing(db)) as conn:
                return read(conn)
        return call

    readers = {
        "analyze": lambda: engine.analyze(str(db), store_results=False),
        "show": opened(lambda conn: list(transcript.records(conn, "s")[2])),
        "transcript": opened(lambda conn: list(transcript.transcript(conn, "s"))),
        "sessions": opened(listing.session_objects),
        "serve": opened(lambda conn: script.load(conn, "s")),
        "pandas": lambda: PANDAS_LOADERS[table](db),  # the loader that reads the table (the others do not)
    }
    for name, read in readers.items():
        try:
            read()
        except Exception as exc:  # noqa: BLE001 - the test is that nothing else escapes
            renamed = (table, column) == ("sessions", "id") and isinstance(exc, SessionNotFound)  # "s" is gone
            assert renamed or _refused(exc, table, column), (name, repr(exc))


EVERY_COMMAND = ("analyze", "analyze --jobs 2", "show", "show json", "sessions", "serve")


@pytest.mark.parametrize("table, column, value, commands", [
    ("frames", "ts", "'soon'", EVERY_COMMAND),  # the issue's own example, through every command
    ("sessions", "started_at", "'yesterday'", ("analyze", "show json")),
    ("exchanges", "status", "'ok'", ("analyze", "show json")),
])
def test_every_command_reading_a_wrong_typed_cell_refuses_it_in_one_line_naming_it(analysed, tmp_path, table,
                                                                                   column, value, commands):
    db = tmp_path / "spoilt.db"
    shutil.copy(analysed, db)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(f'UPDATE "{table}" SET "{column}" = {value}')
    conn.close()
    session = "s" if table != "exchanges" else sqlite3.connect(db).execute("SELECT session_id FROM exchanges").fetchone()[0]
    argv = {"analyze": ("analyze", "--db", str(db)),
            "analyze --jobs 2": ("analyze", "--db", str(db), "--format", "json", "--jobs", "2"),
            "show": ("show", "--db", str(db), session), "show json": ("show", "--db", str(db), session, "--format",
                                                                      "json"),
            "sessions": ("sessions", "--db", str(db)), "serve": ("serve", "--db", str(db), session)}
    with ThreadPoolExecutor(2) as pool:
        results = dict(zip(commands, pool.map(lambda c: cli(*argv[c], cwd=tmp_path, input=INIT.encode() + b"\n"),
                                               commands)))
    for command, result in results.items():
        assert_clean(result, 2)
        (line,) = error_lines(result)
        assert f"{table}.{column} " in line, (command, line)


def test_report_refuses_a_wrong_typed_cell_in_one_line_naming_it(analysed, tmp_path):
    db = tmp_path / "spoilt.db"
    shutil.copy(analysed, db)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE frames SET ts = 'soon' WHERE seq = 2")
    conn.close()
    result = cli("report", "--db", str(db), "-o", str(tmp_path / "r.html"), cwd=tmp_path)
    assert_clean(result, 2)
    assert "frames.ts " in error_lines(result)[0]
    assert not (tmp_path / "r.html").exists()


def test_the_cell_types_cover_every_column_of_the_schema(tmp_path):
    conn = store.connect(tmp_path / "fresh.db")
    try:
        for statement in migrations.DERIVED_DDL:
            conn.execute(statement)
        have = {t: [r[1] for r in conn.execute(f'PRAGMA table_info("{t}")')] for t in cells.COLUMNS}
    finally:
        conn.close()
    assert {t: sorted(c) for t, c in have.items()} == {t: sorted(c) for t, c in cells.COLUMNS.items()}


def test_a_frame_whose_bytes_are_a_number_is_read_as_the_number_s_text(analysed, tmp_path):
    db = tmp_path / "number.db"
    shutil.copy(analysed, db)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE frames SET raw = 12.5 WHERE session_id = 's' AND seq = 3")
    conn.close()
    result = cli("show", "--db", str(db), "s", "--format", "jsonl", cwd=tmp_path)
    assert_clean(result, 0)
    (frame,) = [r for r in _lines(result) if r.get("seq") == 3 and r["record"] == "frame"]
    assert (frame["raw"], frame["kind"]) == ("12.5", "invalid")

