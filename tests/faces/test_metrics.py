"""`mcptap view`'s Prometheus metrics at /metrics, read from a real server by prometheus_client's own
parser: the counts equal the database's, the token guards them like every other route, and the
Grafana dashboard in docs/ asks only for metrics that exist."""

from __future__ import annotations

import json
import re
import sqlite3
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.demo import demo_copy, demo_recording  # noqa: F401 - demo_recording: the fixture
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
