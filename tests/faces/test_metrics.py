"""The Prometheus metrics at /metrics, read by prometheus_client's own parser: `mcptap view`'s
count what the database holds, the token guards them like every other route; `mcptap proxy
--metrics-listen` counts what a real client and server said through it (a scrape reading a bounded
number of new frames), on a loopback address only; the Grafana dashboard in docs/ asks only for
metrics that exist."""

from __future__ import annotations

import json
import re
import sqlite3
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import mcptap, run, wait_for
from tests.support.demo import demo_copy, demo_recording  # noqa: F401 - demo_recording: the fixture
from tests.support.http_helpers import mcptap_proxy, sdk_client, sdk_http_server
from tests.support.inprocess import cli
from tests.support.sessions import req, write_log
from tests.support.viewing import viewing

parser = pytest.importorskip("prometheus_client.parser")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo(demo_recording, tmp_path_factory) -> Path:
    return demo_copy(demo_recording, tmp_path_factory.mktemp("metrics"))["db"]


def scrape(url: str) -> dict:
    base, _, query = url.partition("?")
    with urllib.request.urlopen(f"{base.rstrip('/')}/metrics?{query}", timeout=30) as answer:
        assert answer.headers["Content-Type"].startswith("text/plain")
        text = answer.read().decode()
    return {family.name: family for family in parser.text_string_to_metric_families(text)}


def test_the_metrics_count_what_the_database_holds(demo):
    with viewing(demo) as url:
        families = scrape(url)
    conn = sqlite3.connect(demo)
    frames = dict(((label, d), n) for label, d, n in conn.execute(
        "SELECT s.label, f.direction, count(*) FROM frames f JOIN sessions s ON s.id = f.session_id GROUP BY 1, 2"))
    findings = conn.execute("SELECT count(*) FROM findings").fetchone()[0]
    answered = dict(conn.execute("SELECT method, count(*) FROM messages WHERE kind = 'request' AND latency_s IS NOT "
                                 "NULL GROUP BY method"))
    conn.close()
    got = {(s.labels["server"], s.labels["direction"]): s.value for s in families["mcptap_frames"].samples
           if s.name == "mcptap_frames_total"}
    assert got == frames
    assert sum(s.value for s in families["mcptap_findings"].samples if s.name == "mcptap_findings_total") == findings
    counts: dict[str, float] = {}
    for s in families["mcptap_request_latency_seconds"].samples:
        if s.name == "mcptap_request_latency_seconds_count":
            counts[s.labels["method"]] = counts.get(s.labels["method"], 0) + s.value
    assert counts == answered
    infinite = [s for s in families["mcptap_request_latency_seconds"].samples
                if s.name.endswith("_bucket") and s.labels["le"] == "+Inf"]
    assert sum(s.value for s in infinite) == sum(answered.values())


def test_without_the_token_the_metrics_are_refused(demo):
    with viewing(demo) as url:
        base = url.partition("?")[0].rstrip("/")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{base}/metrics", timeout=30)
        assert refused.value.code == 403
        refused.value.close()


def test_the_grafana_dashboard_asks_for_metrics_that_exist():
    from mcptap.report import metrics

    dashboard = json.loads((ROOT / "docs" / "grafana-dashboard.json").read_text(encoding="utf-8"))
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    names = {n for e in exprs for n in re.findall(r"\bmcptap_[a-z_]+", e)}
    known = set(metrics.NAMES) | {f"mcptap_request_latency_seconds_{s}" for s in ("bucket", "count", "sum")}
    assert names and names <= known


def _families(text: str) -> dict:
    return {family.name: family for family in parser.text_string_to_metric_families(text)}


def _answered(db: Path) -> dict[str, int]:
    """Requests answered in the database, by method, paired here from the frames' JSON."""
    asked, answered = {}, {}
    conn = sqlite3.connect(db)
    for session, direction, raw in conn.execute("SELECT session_id, direction, raw FROM frames ORDER BY rowid"):
        msg = json.loads(raw)
        if not isinstance(msg, dict) or "id" not in msg:
            continue
        if "method" in msg:
            asked[(session, direction, json.dumps(msg["id"]))] = msg["method"]
        else:
            method = asked.pop((session, "s2c" if direction == "c2s" else "c2s", json.dumps(msg["id"])), None)
            if method is not None:
                answered[method] = answered.get(method, 0) + 1
    conn.close()
    return answered


def _by_direction(db: Path) -> dict[str, tuple[int, int]]:
    conn = sqlite3.connect(db)
    found = {d: (n, b) for d, n, b in conn.execute("SELECT direction, count(*), sum(size) FROM frames GROUP BY 1")}
    conn.close()
    return found


def _proxy_counts(url: str) -> tuple[dict, dict]:
    with urllib.request.urlopen(url, timeout=30) as answer:
        assert answer.headers["Content-Type"].startswith("text/plain")
        families = _families(answer.read().decode())
    frames = {s.labels["direction"]: s.value for s in families["mcptap_frames"].samples if s.name == "mcptap_frames_total"}
    size = {s.labels["direction"]: s.value for s in families["mcptap_frame_bytes"].samples
            if s.name == "mcptap_frame_bytes_total"}
    latency: dict[str, float] = {}
    for s in families["mcptap_request_latency_seconds"].samples:
        if s.name == "mcptap_request_latency_seconds_count":
            latency[s.labels["method"]] = latency.get(s.labels["method"], 0) + s.value
    assert "mcptap_findings" in families
    return {d: (frames[d], size[d]) for d in frames}, latency


def test_the_proxy_serves_metrics_of_what_a_real_client_and_server_said_through_it(sdk_python, tmp_path):
    db = tmp_path / "proxy.db"
    with sdk_http_server(sdk_python, "json") as upstream, \
            mcptap_proxy(db, upstream, "--metrics-listen", "127.0.0.1:0", "--name", "echo") as proxy:
        wait_for(lambda: any(b"/metrics" in line for line in proxy.stderr), 30, "the proxy to say where /metrics is")
        said = next(line for line in proxy.stderr if b"/metrics" in line).decode()
        url = re.search(r"http://\S+/metrics", said).group(0)
        assert _proxy_counts(url) == ({}, {})  # nothing recorded yet
        out = sdk_client(sdk_python, "legacy", "streamable", f"{proxy.url}/mcp")
        assert out["echo"] == "héllo ✓"
        wait_for(lambda: _answered(db).get("tools/call", 0) >= 2, 30, "the calls to be stored")
        got: dict = {}

        def caught_up() -> bool:
            got["counts"] = _proxy_counts(url)
            return bool(got["counts"][0]) and got["counts"] == (_by_direction(db), _answered(db))
        wait_for(caught_up, 30, "the scrape to count what the database holds")
        frames, latency = got["counts"]
        assert frames["c2s"][0] >= 4 and latency["tools/call"] >= 2 and "initialize" in latency
        with urllib.request.urlopen(url, timeout=30) as answer:
            assert 'server="echo"' in answer.read().decode()
        request = urllib.request.Request(url, headers={"Host": "rebound.example:80"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 403
        refused.value.close()
        assert proxy.stop() == 0, proxy.errors


@pytest.mark.parametrize("where", ["0.0.0.0:0", "192.0.2.1:9464", "example.com:9464", "[::]:0"])
def test_the_proxy_serves_metrics_on_a_loopback_address_only(tmp_path, where):
    result = run(mcptap("proxy", "--db", str(tmp_path / "p.db"), "--upstream", "http://127.0.0.1:9/mcp",
                        "--metrics-listen", where))
    assert result.returncode != 0
    err = result.stderr.decode()
    assert "--metrics-listen" in err and "loopback" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_scrape_reads_a_bounded_number_of_new_frames_and_pairs_answers_across_scrapes(tmp_path, monkeypatch):
    from mcptap.report import livemetrics
    from mcptap.store.connections import connect

    db = tmp_path / "live.db"
    connect(db).close()
    live = livemetrics.LiveMetrics(str(db), recorder="mcptap test", pid=4242)
    frames = [f for k in range(10) for f in (("c2s", req(k, "tools/call")), ("s2c", json.dumps({"jsonrpc": "2.0", "id": k,
                                                                                            "result": {}})))]
    frames += [("c2s", json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))]
    assert cli("import", "--db", str(db), str(write_log(tmp_path / "log.jsonl", frames))).returncode == 0
    other = write_log(tmp_path / "other.jsonl", [("c2s", req(1, "ping"))], session="other")
    assert cli("import", "--db", str(db), str(other)).returncode == 0
    conn = sqlite3.connect(db)
    conn.execute("UPDATE sessions SET recorder = 'mcptap test', pid = 4242, label = 'srv' WHERE id <> 'other'")
    conn.commit()
    conn.close()
    monkeypatch.setattr(livemetrics, "SCRAPE_ROWS", 7)
    read = [live.catch_up() for _ in range(4)]
    assert read == [7, 7, 7, 0]  # 22 frames stored, 21 of them ours, 7 rows of the table at a time
    assert live.mark == live.last == 22
    assert live.frames == {("srv", "c2s"): [11, sum(len(r.encode()) for d, r in frames if d == "c2s")],
                           ("srv", "s2c"): [10, sum(len(r.encode()) for d, r in frames if d == "s2c")]}
    assert sum(n for (_, method, _), (n, _) in live.latency.items() if method == "tools/call") == 10
    monkeypatch.setattr(livemetrics, "SCRAPE_SECONDS", 0.0)  # one batch a scrape
    more = [("c2s", req(k, "ping")) for k in range(30)]
    assert run(mcptap("import", "--db", str(db), str(write_log(tmp_path / "more.jsonl", more, session="more")))).returncode == 0
    families = _families(live.exposition()[0].decode())
    assert live.mark == 29 and live.last == 52  # one batch of 7 rows, the rest for the next scrape
    monkeypatch.setattr(livemetrics, "SCRAPE_SECONDS", 30.0)
    families = _families(live.exposition()[0].decode())
    assert live.mark == live.last == 52  # batch after batch until caught up
    assert {s.labels["method"] for s in families["mcptap_request_latency_seconds"].samples} == {"tools/call"}
    live.close()
