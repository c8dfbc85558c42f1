"""Hostile files given to `mcptap import`: a bundle whose `frames.jsonl` inflates a thousand
times (refused as it grows, before it fills the disk: the process runs under a file-size limit),
a bundle nested in a bundle 400 deep. Real `mcptap import` processes: one line naming the
user's file, exit 2."""

from __future__ import annotations

import json
import os
import resource
import zipfile
from pathlib import Path

from tests.conftest import mcptap, run

MANIFEST = json.dumps({"format": "mcptap-bundle", "version": 1})
FILE_LIMIT = 100 << 20  # the largest file the import may write (RLIMIT_FSIZE)


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))


def one_line_refusal(done, path: Path) -> str:
    err = done.stderr.decode()
    assert done.returncode == 2, (done.returncode, err[-2000:])
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err[-2000:]
    assert str(path) in err and "mcptap-bundle-" not in err, err
    return err


def test_a_bundle_that_inflates_a_thousand_times_is_refused_before_it_is_unpacked(tmp_path):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("bundle.json", MANIFEST)
        with z.open("frames.jsonl", "w", force_zip64=True) as member:
            block = b" " * (1 << 20)
            for _ in range(300):  # 300 MiB of spaces, about 300 KB packed
                member.write(block)
    assert bomb.stat().st_size < 1 << 20
    done = run(mcptap("import", "--db", str(tmp_path / "db.db"), str(bomb)), timeout=120, preexec_fn=limited,
               env={**os.environ, "TMPDIR": str(tmp_path)})
    one_line_refusal(done, bomb)


def test_a_bundle_nested_in_a_bundle_400_deep_is_refused_in_one_line(tmp_path):
    inner = b'{"record":"frame","session":"s","dir":"c2s","ts":1,"text":"{}"}\n'
    for depth in range(400):
        path = tmp_path / f"level{depth}.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
            z.writestr("bundle.json", MANIFEST)
            z.writestr("frames.jsonl", inner)
        inner = path.read_bytes()
    done = run(mcptap("import", "--db", str(tmp_path / "db.db"), str(path)), timeout=120)
    assert "bundle" in one_line_refusal(done, path)


def test_a_bundles_sarif_names_neither_the_working_folder_nor_the_command_line(tmp_path):
    from tests.hostile.test_hostile_work import imported

    private = tmp_path / "home-of-alice-private"
    private.mkdir()
    db = imported(private, "secretproject", [("c2s", '{"jsonrpc":"2.0","id":1,"method":"nope"}'),
                                             ("s2c", '{"jsonrpc":"2.0","id":1,"result":{}}')])
    out = private / "bug.zip"
    done = run(mcptap("bundle", "--db", str(db), "-o", str(out)), timeout=300, cwd=private,
               env={**os.environ, "TMPDIR": str(private)})
    assert done.returncode == 0, done.stderr.decode()
    with zipfile.ZipFile(out) as z:
        text = z.read("analysis.sarif").decode("utf-8")
    sarif = json.loads(text)
    assert sarif["runs"][0]["results"], "the bundle's SARIF carries its findings"
    assert "home-of-alice-private" not in text and "secretproject" not in text and "bug.zip" not in text
    invocation = sarif["runs"][0]["invocations"][0]
    assert not {"commandLine", "arguments", "workingDirectory"} & set(invocation)


def _calls_log(path: Path, calls: int, task_poll: bool) -> Path:
    """A 2025-11-25 session of `calls` tools/calls of 2 KB arguments and results, then (when
    `task_poll`) one tasks/get: the one request that makes the analysis join operations."""
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
    answer = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                                    "serverInfo": {"name": "s", "version": "1"}}}
    rows = [("c2s", init), ("s2c", answer), ("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"})]
    text = "x" * 2000
    for i in range(1, calls + 1):
        rows.append(("c2s", {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                             "params": {"name": "t", "arguments": {"q": text}}}))
        rows.append(("s2c", {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": text}]}}))
    if task_poll:
        rows.append(("c2s", {"jsonrpc": "2.0", "id": calls + 1, "method": "tasks/get", "params": {"taskId": "t1"}}))
        rows.append(("s2c", {"jsonrpc": "2.0", "id": calls + 1, "error": {"code": -32602, "message": "no task"}}))
    with open(path, "w", encoding="utf-8") as fh:
        for n, (direction, value) in enumerate(rows, 1):
            fh.write(json.dumps({"session": "ops", "seq": n, "ts": 1764460800 + n / 1000, "direction": direction,
                                 "raw": json.dumps(value, separators=(",", ":"))}) + "\n")
    return path


def test_one_task_poll_after_many_calls_does_not_make_the_analysis_hold_every_frame(tmp_path):
    from tests.support.peakrss import run_measured

    peaks = {}
    for task_poll in (False, True):
        db = tmp_path / f"ops-{task_poll}.db"
        log = _calls_log(tmp_path / f"ops-{task_poll}.jsonl", 40_000, task_poll)
        assert run(mcptap("import", "--db", str(db), str(log)), timeout=300).returncode == 0
        done, peaks[task_poll] = run_measured(mcptap("analyze", "--db", str(db), "--format", "json",
                                                     "--fail-on", "never"), capture_output=True, timeout=600)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        methods = {m["method"]: m for m in json.loads(done.stdout)["methods"]}
        assert methods["tools/call"]["calls"] == 40_000
    # every frame and parsed message kept for the operations took 3.5 times the memory
    assert peaks[True] < 1.4 * peaks[False], peaks


def _big_line_log(path: Path, megabytes: int) -> None:
    """A .jsonl.gz of two frames: a ping whose params hold `megabytes` MiB (one line), and its answer."""
    import gzip

    head = ('{"session":"big","seq":1,"ts":1.0,"direction":"c2s","raw":"{\\"jsonrpc\\":\\"2.0\\",\\"id\\":1,'
            '\\"method\\":\\"ping\\",\\"params\\":{\\"x\\":\\"')
    with gzip.open(path, "wb", compresslevel=6) as fh:
        fh.write(head.encode())
        block = b"x" * (1 << 20)
        for _ in range(megabytes):
            fh.write(block)
        fh.write(b'\\"}}"}\n')
        fh.write(b'{"session":"big","seq":2,"ts":2.0,"direction":"s2c",'
                 b'"raw":"{\\"jsonrpc\\":\\"2.0\\",\\"id\\":1,\\"result\\":{}}"}\n')


def test_a_compressed_log_of_one_huge_line_is_cut_as_it_is_read(tmp_path):
    import sqlite3

    from tests.support.peakrss import run_measured

    log = tmp_path / "big.jsonl.gz"
    _big_line_log(log, 150)
    assert log.stat().st_size < 1 << 20
    db = tmp_path / "big.db"
    done, peak = run_measured(mcptap("import", "--db", str(db), "--max-frame", "1M", str(log)),
                              capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert peak < 300 * 1024, peak  # the line held whole, several times over, took 500 MB
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT seq, length(raw), size, incomplete FROM frames ORDER BY seq").fetchall()
    conn.close()
    assert rows[0][1:] == (1 << 20, (150 << 20) + len('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":""}}'), 2)
    assert rows[1][3] == 0


def test_a_long_line_whose_frame_fits_once_unescaped_is_stored_whole(tmp_path):
    import sqlite3

    frame = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "\u0001é😀\\\"" * 150_000}},
                       ensure_ascii=False)
    line = json.dumps({"session": "esc", "seq": 1, "ts": 1.0, "direction": "c2s", "raw": frame})  # \u escapes: 4x
    log = tmp_path / "esc.jsonl"
    log.write_text(line + "\n", encoding="utf-8")
    assert len(line) > 2 * (len(frame.encode("utf-8")) + (1 << 16))
    db = tmp_path / "esc.db"
    done = run(mcptap("import", "--db", str(db), "--max-frame", str(len(frame.encode("utf-8"))), str(log)),
               timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    conn = sqlite3.connect(db)
    raw, incomplete = conn.execute("SELECT CAST(raw AS BLOB), incomplete FROM frames").fetchone()
    conn.close()
    assert bytes(raw) == frame.encode("utf-8") and incomplete == 0
