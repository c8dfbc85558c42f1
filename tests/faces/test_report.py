"""`mcptap report` and the figures behind it: structure, escaping of hostile frames, huge frames,
long sessions, an empty database; and, where Chromium is installed, a real render."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

import mcptap.data as mt
from mcptap import engine, plots, store
from mcptap.report import html as htmlreport
from tests.conftest import mcptap, run

HOSTILE = b'{"jsonrpc":"2.0","id":1,"method":"<script>alert(1)</script>","params":{"x":"</pre><img src=x onerror=alert(2)>"}}'


def build(path, frames, session="s1", label="one"):
    conn = store.connect(str(path))
    with store.write_transaction(conn):
        store.insert_session(conn, {"id": session, "transport": "stdio", "label": label, "started_at": 1000.0,
                                    "ended_at": 1000.0 + len(frames) * 0.001 + 1})
        store.insert_frames(conn, session, [(i + 1, 1000.0 + i * 0.001, d, raw, 0) for i, (d, raw) in enumerate(frames)])
    conn.close()
    return str(path)


def test_a_frame_holding_script_is_shown_as_text(tmp_path):
    db = build(tmp_path / "hostile.db", [("c2s", HOSTILE), ("s2c", b"<b>not json</b>")])
    out = tmp_path / "r.html"
    result = run(mcptap("report", "--db", db, "-o", str(out)))
    assert result.returncode == 0, result.stderr
    page = out.read_text(encoding="utf-8")
    assert "<script" not in page and "<img src=x" not in page and "<b>not json" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;b&gt;not json&lt;/b&gt;" in page
    assert not re.search(r"(src|href)=['\"]https?:", page)  # self-contained: nothing fetched
    assert page.count("<img alt='sequence diagram") == 1 and "data:image/png;base64," in page
    assert "Frames around the findings" in page and "stdout-noise" in page


def test_a_five_megabyte_frame_is_cut_for_display(tmp_path):
    big = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"' + b"x" * 5_000_000  # cut short
    db = build(tmp_path / "big.db", [("s2c", big)])  # not JSON: a finding, so the frame is listed
    page = htmlreport.render(db)
    assert len(page) < 1_000_000 and "characters in all" in page


def test_a_long_session_is_summarised_not_drawn_whole(tmp_path):
    frames = []
    for i in range(25_000):
        frames += [("c2s", b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % i), ("s2c", b'{"jsonrpc":"2.0","id":%d,"result":{}}' % i)]
    db = build(tmp_path / "long.db", frames)
    engine.analyze(db, fallback_revision="2025-11-25")
    fig = plots.sequence(db, "s1")
    assert "200 of 50000 messages drawn" in fig.axes[0].get_title()
    assert len(fig.axes[0].texts) < 1000
    assert "Session s1" in htmlreport.render(db)


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


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def test_the_report_renders_in_headless_chromium_with_a_sequence_diagram(tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("no chromium on this machine (.ci/run installs Debian's chromium)")
    from PIL import Image

    db = build(tmp_path / "r.db", [("c2s", b'{"jsonrpc":"2.0","id":1,"method":"ping"}'),
                                   ("s2c", b'{"jsonrpc":"2.0","id":1,"result":{}}')])
    page = tmp_path / "r.html"
    htmlreport.write(db, str(page))
    shot = tmp_path / "r.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri()],
                   capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    assert shot.exists()
    image = Image.open(shot).convert("L")
    colours = image.getcolors(maxcolors=1 << 16)
    assert colours is not None and len(colours) > 20  # text and a drawn diagram, not a blank page
    import base64
    import io

    diagram = re.search(r"class='sequence' src='data:image/png;base64,([^']+)'", page.read_text(encoding="utf-8"))
    drawn = Image.open(io.BytesIO(base64.b64decode(diagram.group(1)))).convert("L")
    inked = sum(count for count, level in drawn.getcolors(maxcolors=1 << 16) if level < 200)
    assert inked > 2000  # lanes, arrows and labels
