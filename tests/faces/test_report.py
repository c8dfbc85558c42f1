"""`mcptap report` and the figures behind it: structure, escaping of hostile frames, huge frames,
long sessions, an empty database (the viewer in a real browser: tests/faces/test_viewer.py)."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re

import mcptap.data as mt
from mcptap import engine, plots, store
from mcptap.report import html as htmlreport
from mcptap.report import viewdata
from tests.conftest import mcptap
from tests.support.inprocess import cli

HOSTILE = b'{"jsonrpc":"2.0","id":1,"method":"<script>alert(1)</script>","params":{"x":"</pre><img src=x onerror=alert(2)>"}}'


def build(path, frames, session="s1", label="one"):
    conn = store.connect(str(path))
    with store.write_transaction(conn):
        store.insert_session(conn, {"id": session, "transport": "stdio", "label": label, "started_at": 1000.0,
                                    "ended_at": 1000.0 + len(frames) * 0.001 + 1})
        store.insert_frames(conn, session, [(i + 1, 1000.0 + i * 0.001, d, raw, 0) for i, (d, raw) in enumerate(frames)])
    conn.close()
    return str(path)


def document(page: str) -> dict:
    """The viewer's JSON document in a report page."""
    found = re.search(r'<script type="application/json" id="mcptap-data">(.*?)</script>', page, re.S)
    assert found, "no data element"
    return json.loads(found.group(1))


def test_a_frame_holding_script_is_data_the_page_cannot_mistake_for_markup(tmp_path):
    db = build(tmp_path / "hostile.db", [("c2s", HOSTILE), ("s2c", b"<b>not json</b>")])
    out = tmp_path / "r.html"
    result = cli("report", "--db", db, "-o", str(out))
    assert result.returncode == 0, result.stderr
    page = out.read_text(encoding="utf-8")
    assert "<script>alert" not in page and "<img src=x" not in page and "<b>not json" not in page
    assert page.count("<script") == 2 and page.count("</script>") == 2  # the data and the viewer, nothing else
    assert "\\u003cscript\\u003ealert(1)\\u003c/script\\u003e" in page  # inside the JSON, as escapes
    frames = document(page)["frames"]
    assert frames["raw"] == [HOSTILE.decode(), "<b>not json</b>"]  # the exact text, for textContent
    assert not re.search(r"(src|href)=['\"]https?:", page)  # self-contained: nothing fetched
    policy = html.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1))
    assert policy.startswith("default-src 'none'; script-src 'sha256-") and "unsafe" not in policy
    assert "stdout-noise" in {f[3] for f in document(page)["findings"]}


def test_the_policy_allows_exactly_the_viewers_own_script_and_styles(tmp_path):
    db = build(tmp_path / "one.db", [("c2s", b'{"jsonrpc":"2.0","id":1,"method":"ping"}')])
    page = htmlreport.render(db)
    script = re.search(r"<script>(.*)</script>", page, re.S).group(1)
    style = re.search(r"<style>(.*)</style>", page, re.S).group(1)
    policy = html.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1))
    for text in (script, style):
        digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in policy


def test_a_five_megabyte_frame_is_cut_for_display(tmp_path):
    big = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"' + b"x" * 5_000_000  # cut short
    db = build(tmp_path / "big.db", [("s2c", big)])  # not JSON: a finding, so the frame is listed
    page = htmlreport.render(db)
    assert len(page) < 1_000_000
    frames = document(page)["frames"]
    assert len(frames["raw"][0]) == viewdata.SHOWN_CHARS and frames["z"] == [len(big)]


def test_every_frame_of_a_long_session_is_in_the_viewer_its_bytes_within_the_budget(tmp_path, monkeypatch):
    frames = []
    for i in range(25_000):
        frames += [("c2s", b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % i), ("s2c", b'{"jsonrpc":"2.0","id":%d,"result":{}}' % i)]
    frames[30_000] = ("s2c", b"noise")  # a finding past the budget
    db = build(tmp_path / "long.db", frames)
    engine.analyze(db, fallback_revision="2025-11-25")
    fig = plots.sequence(db, "s1")  # the notebooks' figure stays bounded
    assert "200 of 50000 messages drawn" in fig.axes[0].get_title()
    monkeypatch.setattr(viewdata, "RAW_BUDGET", 100_000)
    doc = document(htmlreport.render(db))
    raw = doc["frames"]["raw"]
    assert len(doc["frames"]["seq"]) == 50_000 and doc["frames"]["seq"][-1] == 50_000
    assert raw[0] is not None and raw[-1] is None and sum(len(r) for r in raw if r) < 200_000
    assert all(raw[i] is not None for i in range(30_000 - viewdata.AROUND, 30_001 + viewdata.AROUND))
    assert raw[30_000] == "noise"
    assert doc["frames"]["p"][0] == 2 and doc["frames"]["l"][0] is not None  # paired, with its latency


def test_an_empty_database_gives_a_report_that_says_so(tmp_path):
    db = str(tmp_path / "empty.db")
    store.connect(db).close()
    assert "No sessions in this database." in htmlreport.render(db)
    for fig in (plots.latency(db), plots.findings_timeline(db)):
        assert fig.axes  # drawn, saying there is nothing


def test_figures_draw_what_the_data_api_gives(tmp_path):
    db = build(tmp_path / "few.db", [("c2s", b'{"jsonrpc":"2.0","id":1,"method":"ping"}'),
                                     ("s2c", b'{"jsonrpc":"2.0","id":1,"result":{}}'), ("s2c", b"noise")])
    engine.analyze(db, fallback_revision="2025-11-25")
    seq = plots.sequence(db, "s1")
    labels = [t.get_text() for t in seq.axes[0].texts]
    assert "request ping id=1" in labels and "response ping id=1" in labels and "unparseable" in labels
    assert len(mt.findings(db)) >= 1 and plots.findings_timeline(db).axes[0].collections
    assert plots.latency(db).axes[0].get_xlabel() == "latency (ms)"
