"""Runs: the sessions one host process starts form one run. A Claude Desktop config of two real
stdio servers is wrapped by `mcptap wrap` (which writes the host's name into each command line), and a
real host on the `mcp` SDK starts both at once, in two host processes running at the same time:
`mcptap runs`, `show --run` and the pandas API all see two runs of two sessions each, started by
"claude-desktop". Through `mcptap proxy`, one client's sessions (its address and User-Agent) are
one run and another User-Agent's another."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import urllib.request

import pytest

from tests.conftest import PROCESS_TIMEOUT_S, mcptap, run, tool
from tests.support.http_helpers import mcptap_proxy, sdk_client, sdk_http_server
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
    wrapped = json.loads(config.read_text(encoding="utf-8"))["mcpServers"]
    assert all("--host-app=claude-desktop" in entry["args"] for entry in wrapped.values())
    hosts = []
    # two host processes at once: what tells their runs apart is the process, not the time
    started = [subprocess.Popen([sdk_python, tool("sdk_host_client.py"), str(config)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE) for _ in range(2)]
    for host in started:
        out, err = host.communicate(timeout=180)
        assert host.returncode == 0, err.decode()[-3000:]
        hosts.append(json.loads(out.decode().strip().splitlines()[-1]))
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
        assert r["host_app"] == r["client"]["host_app"] == "claude-desktop"
        assert r["host"] == f"claude-desktop (pid {r['client']['pid']}, {r['client']['exe']})"
    assert runs[0]["client"]["pid"] != runs[1]["client"]["pid"]
    conn = sqlite3.connect(recorded)
    by_run = conn.execute("SELECT run, count(*) FROM sessions GROUP BY run").fetchall()
    conn.close()
    assert sorted(n for _, n in by_run) == [2, 2]
    table = cli("runs", "--db", str(recorded))
    lines = table.stdout.decode().splitlines()
    assert lines[0].split()[:3] == ["run", "started", "sessions"] and len(lines) == 3
    assert "host" in lines[0].split()
    assert all(runs[k]["handle"] in lines[k + 1] and f"claude-desktop (pid {runs[k]['client']['pid']}" in lines[k + 1]
               for k in range(2))


def test_show_run_merges_both_servers_in_time_order(recorded):
    done = cli("show", "--db", str(recorded), "--run", "@1", "--format", "jsonl")
    assert done.returncode == 0, done.stderr.decode()
    records = [json.loads(line) for line in done.stdout.decode().splitlines()]
    head, frames = records[0], records[1:]
    assert head["record"] == "run" and len(head["session_ids"]) == 2 and head["host_app"] == "claude-desktop"
    assert {f["server"] for f in frames} == {"sdk", "time"}
    assert [f["ts"] for f in frames] == sorted(f["ts"] for f in frames)
    assert {f["session"] for f in frames} == set(head["session_ids"])
    text = cli("show", "--db", str(recorded), "--run", head["handle"])
    heading, *lines = text.stdout.decode().splitlines()
    assert heading.startswith(f"run {head['handle']} ") and f"host {head['host']}" in heading
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
    assert list(runs["host_app"]) == ["claude-desktop"] * 2
    assert all(h.startswith("claude-desktop (pid ") for h in runs["host"])
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
    listed = json.loads(cli("runs", "--db", str(db), "--format", "json").stdout)["runs"]
    client = listed[0]["client"]  # no --host-app (a command line wrapped before wrap wrote it): the program
    assert listed[0]["host_app"] is None and "host_app" not in client
    assert client["pid"] == os.getpid()  # the shell looked through: this test's process started them
    assert listed[0]["host"] == f"{client['exe']} (pid {os.getpid()})"


def test_through_the_proxy_one_clients_sessions_are_one_run_and_another_user_agents_another(sdk_python, tmp_path):
    db = tmp_path / "http.db"
    with sdk_http_server(sdk_python, "json") as upstream, mcptap_proxy(db, upstream) as proxy:
        for _ in range(2):  # two client processes of one address and User-Agent: two sessions
            assert sdk_client(sdk_python, "legacy", "streamable", f"{proxy.url}/mcp")["echo"] == "héllo ✓"
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "other", "version": "1"}}}
        request = urllib.request.Request(f"{proxy.url}/mcp", data=json.dumps(hello).encode(), method="POST", headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "User-Agent": "another-host/1.0"})
        with urllib.request.urlopen(request, timeout=PROCESS_TIMEOUT_S) as answer:
            assert answer.status == 200
        assert proxy.stop() == 0, proxy.errors
    listed = json.loads(cli("runs", "--db", str(db), "--format", "json").stdout)["runs"]
    assert sorted(r["sessions"] for r in listed) == [1, 2]
    by_agent = {r["client"]["user_agent"]: r for r in listed}
    assert by_agent["another-host/1.0"]["sessions"] == 1
    assert by_agent["another-host/1.0"]["host"] == "127.0.0.1 another-host/1.0"
    assert all(r["client"]["address"] == "127.0.0.1" for r in listed)


def test_an_http_clients_run_goes_on_within_the_window_and_a_new_one_starts_after_it():
    from mcptap.addons.runs import HttpRuns

    runs = HttpRuns(window=300.0)
    first = runs.run_for("127.0.0.1", "ua", now=1000.0)
    assert runs.run_for("127.0.0.1", "ua", now=1290.0) == first
    assert runs.run_for("127.0.0.1", "ua", now=1580.0) == first  # within the window of the run's last session
    assert runs.run_for("127.0.0.2", "ua", now=1580.0) != first
    assert runs.run_for("127.0.0.1", "other", now=1580.0) != first
    assert runs.run_for("127.0.0.1", "ua", now=1881.0) != first


def test_the_viewer_names_the_runs_host_lane_by_the_host_wrap_named(recorded):
    from mcptap import store
    from mcptap.report import viewdata

    conn = store.open_existing(recorded)
    try:
        ids = [r[0] for r in conn.execute("SELECT id FROM sessions")]
        drawn = viewdata.runs_json(conn, ids)
    finally:
        conn.close()
    assert [len(r["sessions"]) for r in drawn] == [2, 2]
    assert [r["host"] for r in drawn] == ["claude-desktop"] * 2 and all(sorted(r["servers"]) == ["sdk", "time"]
                                                                       for r in drawn)


@pytest.mark.parametrize("given, app", [(["--host-app", "cursor"], "cursor"), (["--host-app=-odd\u202e"], "-odd\u202e"),
                                        ([], None)])
def test_record_keeps_the_host_app_it_is_given_with_the_host_process(tmp_path, given, app):
    db = tmp_path / "app.db"
    echo = "import sys; [print(l, end='', flush=True) for l in sys.stdin]"
    done = run(mcptap("record", "--db", str(db), *given, "--", os.sys.executable, "-c", echo))
    assert done.returncode == 0, done.stderr.decode()
    conn = sqlite3.connect(db)
    client = json.loads(conn.execute("SELECT client FROM sessions").fetchone()[0])
    conn.close()
    assert client.get("host_app") == app and client["pid"] == os.getpid()
    listed = json.loads(cli("runs", "--db", str(db), "--format", "json").stdout)["runs"]
    assert listed[0]["host_app"] == app
    table = cli("runs", "--db", str(db)).stdout.decode()
    shown = {"cursor": "cursor (pid", "-odd\u202e": "-odd\\u202e (pid", None: f"{client['exe']} (pid"}[app]
    assert "\u202e" not in table and shown in table
