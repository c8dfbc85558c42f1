"""A run's timeline in both faces (`mcptap report --run RUN`'s page and `mcptap view`'s #run=RUN) in
real headless Chromium, on a real run: two stdio servers wrapped by `mcptap wrap` and started by one
real host on the `mcp` SDK (tests/e2e/test_runs.py's recording). Read by its SVG geometry: a lane
for the host and one per server, each arrow between the host's lane and its own server's, every
frame of the run drawn, no two labels' boxes meeting, the display filter's `server` and `run`
fields marking their frames; and `mcptap view`'s answers for a run's window and idle gaps. The
screenshot docs/look.md shows is taken here (`--update-screenshots` writes it, as
tests/faces/test_diagram.py does its own)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from mcptap import store
from tests.support.inprocess import cli
from tests.e2e.test_runs import recorded  # noqa: F401 - the fixture: a real two-server run, twice
from tests.faces.test_diagram import drawn, png_size
from tests.faces.test_viewer import IMAGES, chrome, type_filter  # noqa: F401 - chrome: the fixture
from tests.support import browser
from tests.support.viewing import viewing

LANES = """
const svg = document.querySelector('#diagram svg');
const lanes = [...svg.querySelectorAll('line.lifeline')].map(l => ({lane: +l.dataset.lane, x: +l.getAttribute('x1')}));
const arrows = [...svg.querySelectorAll('g.arrow')].map(g => { const l = g.querySelector('line');
  return {session: g.dataset.session, seq: +g.dataset.seq, lane: +g.dataset.lane, hit: g.classList.contains('hit'),
          xs: [+l.getAttribute('x1'), +l.getAttribute('x2')], head: g.querySelector('path').getAttribute('d')}; });
return {count: +svg.dataset.lanes, track: svg.dataset.track, lanes, arrows,
        names: [...svg.querySelectorAll('text.lane-name')].map(t => t.textContent),
        title: document.getElementById('diagram-title').textContent};"""


@pytest.fixture(scope="module")
def timeline(recorded, tmp_path_factory):  # noqa: F811 - the imported fixture
    """The newest run: its id, its sessions in start order with their servers, its report page and
    `mcptap view`'s URL."""
    listed = cli("runs", "--db", str(recorded), "--format", "json")
    newest = json.loads(listed.stdout)["runs"][-1]
    conn = sqlite3.connect(recorded)
    sessions = conn.execute("SELECT id, label FROM sessions WHERE run = ? ORDER BY started_at, id",
                            (newest["run"],)).fetchall()
    frames = conn.execute("SELECT count(*) FROM frames JOIN sessions s ON s.id = session_id WHERE s.run = ?",
                          (newest["run"],)).fetchone()[0]
    conn.close()
    page = tmp_path_factory.mktemp("run") / "run.html"
    done = cli("report", "--db", str(recorded), "--run", newest["handle"], "-o", str(page), timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    with viewing(recorded) as url:
        yield {"run": newest["run"], "sessions": sessions, "frames": frames, "report": page.as_uri(),
               "view": url + "#run=" + newest["run"]}


def lanes_drawn(driver) -> dict:
    """The timeline once drawn whole (every arrow in sight, no two labels meeting)."""
    drawn(driver, arrows=True)
    return driver.execute_script(LANES)


@pytest.mark.parametrize("face", ["report", "view"])
def test_a_run_s_timeline_has_a_lane_per_server_and_each_arrow_ends_on_its_server_s_lane(chrome, timeline, face):
    browser.open_page(chrome, timeline[face])
    shown = browser.wait_for(lambda: (d := lanes_drawn(chrome)) and d["track"] == "r:" + timeline["run"] and d,
                             what="the run's timeline")
    servers = [label for _, label in timeline["sessions"]]
    assert shown["count"] == len(servers) + 1 == 3
    assert shown["names"][1:] == servers and shown["names"][0]  # the host's lane, then the servers' in start order
    x = {lane["lane"]: lane["x"] for lane in shown["lanes"]}
    assert sorted(x) == [0, 1, 2] and x[0] < x[1] < x[2]
    lane_of = {sid: k + 1 for k, (sid, _) in enumerate(timeline["sessions"])}
    assert len(shown["arrows"]) == timeline["frames"]  # the whole run, fitted
    for arrow in shown["arrows"]:
        assert arrow["lane"] == lane_of[arrow["session"]]
        ends = sorted(arrow["xs"])  # the line stops 6 px short of its head
        assert abs(ends[0] - x[0]) <= 6 and abs(ends[1] - x[arrow["lane"]]) <= 6
        tip = float(arrow["head"][1:].split()[0])
        assert tip == pytest.approx(x[arrow["lane"]]) or tip == pytest.approx(x[0])
    assert {a["lane"] for a in shown["arrows"]} == {1, 2}
    assert "Timeline of run" in shown["title"]


@pytest.mark.parametrize("face", ["report", "view"])
def test_the_display_filter_s_server_and_run_fields_mark_a_run_s_frames(chrome, timeline, face):
    browser.open_page(chrome, timeline[face])
    lanes_drawn(chrome)
    sid, server = timeline["sessions"][1]
    type_filter(chrome, f'server == "{server}"')
    marked = browser.wait_for(lambda: (d := lanes_drawn(chrome)) and any(a["hit"] for a in d["arrows"]) and d,
                              timeout=30, what="the marks")
    assert {a["session"] for a in marked["arrows"] if a["hit"]} == {sid}
    assert all(a["hit"] == (a["session"] == sid) for a in marked["arrows"])
    type_filter(chrome, f'run == "{timeline["run"]}"')
    everything = browser.wait_for(lambda: (d := lanes_drawn(chrome)) and all(a["hit"] for a in d["arrows"]) and d,
                                  timeout=30, what="every frame marked")
    assert len(everything["arrows"]) == timeline["frames"]
    browser.wait_for(lambda: chrome.find_element("id", "filter-status").text.startswith(f"{timeline['frames']} of "),
                     what="the run's frames counted")


def test_a_run_s_link_in_mcptap_view_opens_its_timeline_and_lists_its_frames(chrome, timeline):
    browser.open_page(chrome, timeline["view"].split("#")[0])
    first = lanes_drawn(chrome)
    assert first["count"] == 2  # a session's diagram: client | server
    link = chrome.find_element("css selector", f"#runs tr[data-run='{timeline['run']}'] a.run-link")
    link.click()
    shown = browser.wait_for(lambda: (d := lanes_drawn(chrome)) and d["track"] == "r:" + timeline["run"] and d,
                             what="the run's timeline")
    assert shown["count"] == 3
    browser.wait_for(lambda: chrome.find_element("id", "filter-status").text.startswith(f"{timeline['frames']} of "),
                     what="the run's frames listed")
    assert f"run={timeline['run']}" in chrome.execute_script("return location.hash")


def test_report_run_names_an_unknown_run_in_one_line_and_fails(tmp_path):
    db = tmp_path / "none.db"
    conn = store.connect(str(db))
    conn.close()
    done = cli("report", "--db", str(db), "--run", "nope", "-o", str(tmp_path / "r.html"))
    assert done.returncode != 0 and not (tmp_path / "r.html").exists()
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcptap: error: no run 'nope'"), lines


def write_run(db) -> None:
    """A run of two stdio sessions 0.5 s apart: frames of `a` at 0.1-0.2 s and 5.0 s of the run,
    of `b` at 0.6 s and 5.1 s; idle for both from 0.6 to 5.0 s."""
    conn = store.connect(str(db))
    with store.write_transaction(conn):
        for sid, start, times in (("a", 100.0, [0.1, 0.2, 5.0]), ("b", 100.5, [0.1, 4.6])):
            store.insert_session(conn, {"id": sid, "transport": "stdio", "started_at": start, "label": sid,
                                        "run": "run-1234", "client": json.dumps({"exe": "host", "pid": 7})})
            store.insert_frames(conn, sid, [(k + 1, start + t, "c2s", b'{"jsonrpc":"2.0","method":"ping"}', 0)
                                            for k, t in enumerate(times)])
    conn.close()


def test_mcptap_view_answers_a_run_s_window_across_its_sessions_and_the_gaps_they_share(tmp_path):
    from mcptap.report import livedata, liveruns

    db = tmp_path / "run.db"
    write_run(db)
    view = livedata.LiveView(str(db))
    assert view.summary()["runs"][0]["sessions"] == ["a", "b"] and view.summary()["runs"][0]["host"] == "host"
    window = liveruns.window(view, "run-1234", 0, 6, 100)
    assert sorted((r["n"], r["seq"], r["t"]) for r in window["rows"]) == [
        (0, 1, 0.1), (0, 2, 0.2), (0, 3, 5.0), (1, 1, 0.1), (1, 2, 4.6)]  # t: from each row's own session
    assert [(r["n"], r["seq"]) for r in liveruns.window(view, "run-1234", 0.5, 1.0, 100)["rows"]] == [(1, 1)]
    band = liveruns.window(view, "run-1234", 0, 6, 2)
    assert band["total"] == 5 and sum(band["density"]["counts"]) == 5
    assert band["density"]["counts"][int(5.1 / 6 * livedata.DENSITY_BUCKETS)] == 1  # b's 4.6 s is 5.1 s of the run
    gaps = liveruns.gaps(view, "run-1234")
    assert gaps[0] == pytest.approx([0.6, 5.0])  # the longest stretch without a frame of either session
    assert all(not (a < 0.6 < b) and not (a < 5.0 < b) for a, b in gaps)
    assert liveruns.window(view, "nope", 0, 6, 100) == {"rows": [], "every": 1, "total": 0} and liveruns.gaps(view, "nope") == []


def test_a_run_s_page_lists_its_frames_in_time_order_and_a_frame_opens_on_the_timeline(chrome, timeline):
    browser.open_page(chrome, timeline["report"])
    lanes_drawn(chrome)
    rows = chrome.execute_script("""return [...document.querySelectorAll('#list .row:not([hidden])')]
      .filter(r => r.dataset.seq).sort((a, b) => +a.dataset.pos - +b.dataset.pos)
      .map(r => ({session: r.dataset.session, seq: +r.dataset.seq, t: parseFloat(r.querySelector('.c-t').textContent)}));""")
    assert len(rows) >= 10
    assert [r["t"] for r in rows] == sorted(r["t"] for r in rows)  # from the run's start, across its servers
    assert {r["session"] for r in rows} == {sid for sid, _ in timeline["sessions"]}
    sid = timeline["sessions"][1][0]
    row = next(r for r in rows if r["session"] == sid)
    chrome.find_element("css selector", f"#list .row[data-session='{sid}'][data-seq='{row['seq']}']").click()
    browser.wait_for(lambda: f"frame={sid}" in chrome.execute_script("return location.hash"), what="the frame's link")
    shown = lanes_drawn(chrome)
    assert shown["track"] == "r:" + timeline["run"]  # still the run's timeline, the frame among its arrows
    assert f"run={timeline['run']}" in chrome.execute_script("return location.hash")
    selected = chrome.execute_script("return [...document.querySelectorAll('#diagram g.arrow.selected')].map(g => g.dataset.session + ':' + g.dataset.seq)")
    assert selected == [f"{sid}:{row['seq']}"]


def test_the_run_timeline_screenshot_in_docs_is_taken_from_the_current_code(chrome, timeline, request, tmp_path):
    folder = IMAGES if request.config.getoption("--update-screenshots") else tmp_path
    browser.open_page(chrome, timeline["report"])
    lanes_drawn(chrome)
    pane = chrome.find_element("css selector", ".panes.lower")
    chrome.execute_script("arguments[0].scrollIntoView()", pane)
    assert pane.screenshot(str(folder / "run-timeline.png"))
    kept = IMAGES / "run-timeline.png"
    assert kept.is_file() and png_size(kept) == png_size(folder / "run-timeline.png"), \
        "docs/img/run-timeline.png: pytest tests/faces/test_run_timeline.py --update-screenshots"
    assert "img/run-timeline.png" in (IMAGES.parent / "look.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def busy(tmp_path_factory):
    """A run of two sessions of 3,000 frames each, interleaved in time: its report page and view URL."""
    folder = tmp_path_factory.mktemp("busy")
    db = folder / "busy.db"
    conn = store.connect(str(db))
    with store.write_transaction(conn):
        for sid, start in (("a", 100.0), ("b", 100.001)):
            store.insert_session(conn, {"id": sid, "transport": "stdio", "started_at": start, "label": sid,
                                        "run": "busy-run", "client": json.dumps({"exe": "host", "pid": 7})})
            store.insert_frames(conn, sid, [(k + 1, start + k * 0.002, "c2s" if k % 2 == 0 else "s2c",
                                             b'{"jsonrpc":"2.0","method":"ping"}', 0) for k in range(3000)])
    conn.close()
    page = folder / "busy.html"
    assert cli("report", "--db", str(db), "--run", "busy-run", "-o", str(page), timeout=300).returncode == 0
    with viewing(db) as url:
        yield {"report": page.as_uri(), "view": url + "#run=busy-run"}


@pytest.mark.parametrize("face", ["report", "view"])
def test_a_busy_run_is_one_density_band_of_all_its_servers_frames_and_marks_the_filter_s(chrome, busy, face):
    browser.open_page(chrome, busy[face])
    band = drawn(chrome, arrows=False)
    assert band["arrows"] == 0 and "6,000 frames in sight" in band["status"]
    assert chrome.execute_script("return document.querySelector('#diagram svg').dataset.lanes") == "3"
    type_filter(chrome, 'server == "b"')
    assert browser.wait_for(lambda: drawn(chrome, arrows=False)["densityHits"], timeout=30, what="the marks")
