"""Runs: the sessions one host process starts form one run. A Claude Desktop config of two real
stdio servers is wrapped by `mcptap wrap`, and a real host on the `mcp` SDK starts both at once, twice
(two host processes): `mcptap runs`, `show --run`, the pandas API and the MCP face's data all see two
runs of two sessions each."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from tests.conftest import mcptap, run, tool
from tests.support.inprocess import cli


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, sdk_python, time_server):
    where = tmp_path_factory.mktemp("runs")
    config = where / "claude_desktop_config.json"
    config.write_text(json.dumps({"mcpServers": {
        "sdk": {"command": sdk_python, "args": [tool("sdk_server.py")], "env": {"MCPTAP_TEST_MARK": "sdk"}},
        "time": {"command": time_server[0], "args": ["--local-timezone", "UTC"], "env": {"TZ": "UTC"}},
    }}), encoding="utf-8")
    db = where / "host.db"
    done = run(mcptap("wrap", str(config), "--db", str(db)))
    assert done.returncode == 0, done.stderr.decode()
    hosts = []
    for _ in range(2):  # two host processes, one after the other
        host = run([sdk_python, tool("sdk_host_client.py"), str(config)], timeout=180)
        assert host.returncode == 0, host.stderr.decode()[-3000:]
        hosts.append(json.loads(host.stdout.decode().strip().splitlines()[-1]))
    assert all("echo" in h["sdk"] and "get_current_time" in h["time"] for h in hosts)
    assert cli("analyze", "--db", str(db)).returncode in (0, 1)
    return db


def test_one_host_process_is_one_run_and_two_are_two(recorded):
    done = cli("runs", "--db", str(recorded), "--format", "json")
    assert done.returncode == 0, done.stderr.decode()
    runs = json.loads(done.stdout)["runs"]
    assert len(runs) == 2
    for r in runs:
        assert r["sessions"] == 2 and sorted(r["servers"]) == ["sdk", "time"] and r["frames"] >= 8
        assert r["client"]["exe"].startswith("python") and r["client"]["pid"] > 1
    assert runs[0]["client"]["pid"] != runs[1]["client"]["pid"]
    conn = sqlite3.connect(recorded)
    by_run = conn.execute("SELECT run, count(*) FROM sessions GROUP BY run").fetchall()
    conn.close()
    assert sorted(n for _, n in by_run) == [2, 2]
    table = cli("runs", "--db", str(recorded))
    lines = table.stdout.decode().splitlines()
    assert lines[0].split()[:3] == ["run", "started", "sessions"] and len(lines) == 3
    assert all(runs[k]["handle"] in lines[k + 1] for k in range(2))


def test_show_run_merges_both_servers_in_time_order(recorded):
    done = cli("show", "--db", str(recorded), "--run", "@1", "--format", "jsonl")
    assert done.returncode == 0, done.stderr.decode()
    records = [json.loads(line) for line in done.stdout.decode().splitlines()]
    head, frames = records[0], records[1:]
    assert head["record"] == "run" and len(head["session_ids"]) == 2
    assert {f["server"] for f in frames} == {"sdk", "time"}
    assert [f["ts"] for f in frames] == sorted(f["ts"] for f in frames)
    assert {f["session"] for f in frames} == set(head["session_ids"])
    text = cli("show", "--db", str(recorded), "--run", head["handle"])
    lines = text.stdout.decode().splitlines()
    assert len(lines) == len(frames)
    assert any(" sdk " in line and "tools/call" in line for line in lines)
    assert any(" time " in line and "initialize" in line for line in lines)
    bad = cli("show", "--db", str(recorded), "--run", "nope")
    assert bad.returncode == 2 and bad.stderr.decode().strip() == "mcptap: error: no run 'nope' (try `mcptap runs`)"


def test_the_pandas_api_reads_the_runs(recorded):
    pytest.importorskip("pandas")
    import mcptap.data as mt

    runs = mt.runs(str(recorded))
    assert list(runs["sessions"]) == [2, 2] and all(sorted(s) == ["sdk", "time"] for s in runs["servers"])
    sessions = mt.sessions(str(recorded))
    assert sessions.groupby("run").size().tolist() == [2, 2]
    assert set(sessions["run"]) == set(runs["run"])


def test_two_tees_of_one_process_tree_agree_without_talking(tmp_path):
    """Started by one shell (as a host that runs command lines through `sh -c` does), two tees name
    the same run: the shell is looked through to the process that ran it."""
    db = tmp_path / "two.db"
    echo = "import sys; [print(l, end='', flush=True) for l in sys.stdin]"
    line = " & ".join(f"{' '.join(mcptap('record', '--db', str(db), '--'))} {os.sys.executable} -c \"{echo}\" "
                      "</dev/null" for _ in range(2)) + " & wait"
    done = run(["sh", "-c", line])
    assert done.returncode == 0, done.stderr.decode()
    conn = sqlite3.connect(db)
    runs = {r[0] for r in conn.execute("SELECT run FROM sessions")}
    count = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
    conn.close()
    assert count == 2 and len(runs) == 1 and None not in runs
