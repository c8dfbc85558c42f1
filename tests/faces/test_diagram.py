"""The sequence diagram of both faces (the report's page and `mcptap view`) in real headless
Chromium (tests/support/browser.py), read by its SVG geometry: on a live recording (`mcptap demo`)
and on a session of 200,000 frames, no two labels' boxes meet at the default zoom or zoomed in,
idle gaps are drawn short, labels left out are counted, a long session is a density band that a
click zooms into until it is arrows, and the display filter's frames are marked. The screenshots
in docs/img/ are taken here from the current code: `pytest tests/faces/test_diagram.py
--update-screenshots` writes them; without it the same pictures are taken into a temporary
folder and those in docs/img/ must be there, of the same size."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from mcptap import store
from tests.faces.test_viewer import IMAGES, chrome, type_filter  # noqa: F401 - chrome: the fixture
from tests.support import browser
from tests.support.demo import demo_copy, demo_recording  # noqa: F401 - demo_recording: the fixture
from tests.support.inprocess import cli
from tests.support.viewing import viewing

pytestmark = pytest.mark.slow

LABELS = """
const svg = document.querySelector('#diagram svg');
return svg && [...svg.querySelectorAll('text')].map(t => { const b = t.getBBox();
  return {text: t.textContent, x: b.x, y: b.y, w: b.width, h: b.height, arrow: t.classList.contains('arrow-label')}; });"""

DIAGRAM = """
const svg = document.querySelector('#diagram svg');
return svg && {scale: +svg.dataset.scale, gaps: svg.dataset.gaps === '1', arrows: svg.querySelectorAll('g.arrow').length,
  hits: svg.querySelectorAll('g.arrow.hit').length, dims: svg.querySelectorAll('g.arrow.dim').length,
  idle: svg.querySelectorAll('g.idle').length, density: svg.querySelectorAll('g.density rect').length,
  densityHits: svg.querySelectorAll('g.density rect.hit').length,
  more: [...svg.querySelectorAll('tspan.more')].reduce((a, t) => a + (+t.textContent.slice(1)), 0),
  status: document.getElementById('zoom-status').textContent};"""


def overlaps(labels: list[dict]) -> list[tuple[str, str]]:
    """The pairs of labels whose boxes meet."""
    out = []
    for k, a in enumerate(labels):
        for b in labels[k + 1:]:
            if a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]:
                out.append((a["text"], b["text"]))
    return out


def drawn(driver, *, arrows: bool | None = None) -> dict:
    """The diagram once drawn (with arrows, or a density band, when asked), its labels' boxes none of which meet."""
    def ready():
        d = driver.execute_script(DIAGRAM)
        if not d or not d["gaps"] or "asking" in d["status"] or (arrows is True and not d["arrows"]) or (arrows is False and not d["density"]):
            return None
        return d
    state = browser.wait_for(ready, what="the diagram")
    labels = driver.execute_script(LABELS)
    assert not overlaps(labels), overlaps(labels)
    return {**state, "labels": labels}


def write_long_session(db: Path, pairs: int = 100_000, seed: int = 38) -> None:
    """One stdio session of 2 × `pairs` frames: requests answered within a few ms, in bursts of
    1,000 frames with idle gaps of up to five minutes between them."""
    rnd = random.Random(seed)
    frames, t = [], 1000.0
    for i in range(pairs):
        if i % 500 == 0:
            t += rnd.choice((0.5, 2.0, 30.0, 300.0)) * rnd.random()
        frames.append((t, "c2s", b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"search"}}' % i))
        t += 0.0005 + rnd.random() * 0.004
        frames.append((t, "s2c", b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}' % i))
        t += rnd.random() * 0.002
    conn = store.connect(str(db))
    with store.write_transaction(conn):
        store.insert_session(conn, {"id": "long", "transport": "stdio", "started_at": 1000.0, "ended_at": t})
        store.insert_frames(conn, "long", [(k + 1, ts, d, raw, 0) for k, (ts, d, raw) in enumerate(frames)])
    conn.close()


@pytest.fixture(scope="module")
def demo(demo_recording, tmp_path_factory):
    """A live recording (`mcptap demo`) as both faces show it: its report page and `mcptap view`'s URL."""
    recorded = demo_copy(demo_recording, tmp_path_factory.mktemp("diagram"))
    with viewing(recorded["db"]) as url:
        yield {"report": recorded["page"].as_uri(), "view": url, "stdio": recorded["stdio"]}


@pytest.fixture(scope="module")
def long(tmp_path_factory):
    """A session of 200,000 frames as both faces show it."""
    folder = tmp_path_factory.mktemp("long")
    db = folder / "long.db"
    write_long_session(db)
    page = folder / "long.html"
    assert cli("report", "--db", str(db), "-o", str(page)).returncode == 0
    with viewing(db) as url:
        yield {"report": page.as_uri(), "view": url}


@pytest.mark.parametrize("face", ["report", "view"])
def test_the_demo_s_labels_never_overlap_its_idle_gaps_are_drawn_short_and_those_left_out_are_counted(chrome, demo, face):
    browser.open_page(chrome, demo[face])
    fitted = drawn(chrome, arrows=True)
    assert fitted["arrows"] == 17  # the stdio session, whole: zoomed to fit on open
    assert fitted["idle"] >= 1 and "idle gaps drawn short" in fitted["status"]
    named = [label for label in fitted["labels"] if label["arrow"]]
    # most of them named at the fitted zoom (how many depends on the live demo's timing: 11 to 14 seen)
    assert len(named) >= 9 and len(named) + fitted["more"] == 17
    width = chrome.execute_script("return document.querySelector('#diagram svg').width.baseVal.value")
    assert all(0 <= label["x"] and label["x"] + label["w"] <= width for label in fitted["labels"])
    for _ in range(3):
        chrome.find_element("id", "zoom-in").click()
        zoomed = drawn(chrome)
        assert zoomed["scale"] > fitted["scale"]
    chrome.find_element("id", "zoom-fit").click()
    assert drawn(chrome, arrows=True)["scale"] == pytest.approx(fitted["scale"], rel=1e-4)


@pytest.mark.parametrize("face", ["report", "view"])
def test_a_count_of_labels_left_out_zooms_in_until_they_have_room(chrome, demo, face):
    browser.open_page(chrome, demo[face])
    before = drawn(chrome, arrows=True)
    assert before["more"] > 0
    chrome.execute_script("document.querySelector('#diagram tspan.more').dispatchEvent(new MouseEvent('click', {bubbles: true}))")
    after = browser.wait_for(lambda: (d := drawn(chrome)) and d["scale"] > before["scale"] and d, what="the zoom")
    assert after["scale"] >= 2 * before["scale"] * 0.999


@pytest.mark.parametrize("face", ["report", "view"])
def test_a_session_of_200000_frames_is_a_density_band_that_zooms_to_arrows_whose_labels_never_overlap(chrome, long, face):
    browser.open_page(chrome, long[face], timeout=60)
    band = drawn(chrome, arrows=False)
    assert band["arrows"] == 0 and "200,000 frames in sight" in band["status"]
    for _ in range(12):  # a click on the band's busiest row zooms in four times there
        if drawn(chrome)["arrows"]:
            break
        scale = drawn(chrome)["scale"]
        chrome.execute_script("""
            const bars = [...document.querySelectorAll('#diagram g.density rect')];
            const widest = bars.reduce((a, b) => +b.getAttribute('width') > +a.getAttribute('width') ? b : a);
            const box = widest.getBoundingClientRect();
            widest.dispatchEvent(new MouseEvent('click', {bubbles: true, clientX: box.x + box.width / 2, clientY: box.y + box.height / 2}));""")
        browser.wait_for(lambda: (d := drawn(chrome)) and d["scale"] > scale, what="the zoom")
    near = drawn(chrome, arrows=True)
    assert 0 < near["arrows"] <= 2 * chrome.execute_script("return document.getElementById('diagram').clientHeight") / 3
    assert [label for label in near["labels"] if label["arrow"]]


@pytest.mark.parametrize("face", ["report", "view"])
def test_the_display_filter_s_frames_are_marked_in_the_diagram(chrome, demo, face):
    browser.open_page(chrome, demo[face])
    drawn(chrome, arrows=True)
    type_filter(chrome, 'method == "tools/call" and dir == "c2s"')
    marked = browser.wait_for(lambda: (d := drawn(chrome)) and d["hits"] and d, timeout=30, what="the marks")
    assert marked["hits"] == 3 and marked["dims"] == 14  # the demo's three tools/call requests
    type_filter(chrome, "")
    assert browser.wait_for(lambda: (d := drawn(chrome)) and not d["hits"] and not d["dims"] and d, what="no marks")


@pytest.mark.parametrize("face", ["report", "view"])
def test_the_display_filter_s_frames_are_marked_in_the_density_band(chrome, long, face):
    browser.open_page(chrome, long[face], timeout=60)
    drawn(chrome, arrows=False)
    type_filter(chrome, "seq <= 600")
    assert browser.wait_for(lambda: drawn(chrome, arrows=False)["densityHits"], what="the marks")


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


def test_the_screenshots_in_docs_are_taken_from_the_current_code(chrome, demo, long, request, tmp_path):
    write = request.config.getoption("--update-screenshots")
    folder = IMAGES if write else tmp_path

    def shoot(name: str, selector: str | None = None) -> None:
        path = folder / name
        if selector:
            element = chrome.find_element("css selector", selector)
            chrome.execute_script("arguments[0].scrollIntoView()", element)
            assert element.screenshot(str(path))
        else:
            assert chrome.save_screenshot(str(path))

    def select(seq: int) -> None:
        row = browser.wait_for(lambda: chrome.find_elements("css selector", f"#list .row[data-seq='{seq}']"), what=f"row {seq}")
        row[0].click()
        browser.wait_for(lambda: f"Frame {seq} of session" in chrome.find_element("id", "detail").text, what="the detail")

    browser.open_page(chrome, demo["report"])
    type_filter(chrome, 'method == "tools/call" or finding')
    select(2)  # the line of noise on stdout, and its finding
    chrome.execute_script("document.getElementById('viewer').scrollIntoView()")
    drawn(chrome, arrows=True)
    shoot("viewer-filter.png")
    type_filter(chrome, "")
    select(3)
    shoot("viewer-detail.png", ".panes")
    chrome.find_element("id", "zoom-fit").click()
    drawn(chrome, arrows=True)
    shoot("viewer-diagram.png", ".panes.lower")
    browser.open_page(chrome, long["report"], timeout=60)
    drawn(chrome, arrows=False)
    shoot("diagram-density.png", ".diagrampane")
    browser.open_page(chrome, demo["view"])
    select(5)
    chrome.execute_script("document.getElementById('viewer').scrollIntoView()")
    drawn(chrome, arrows=True)
    shoot("view-live.png")
    names = ("viewer-filter.png", "viewer-detail.png", "viewer-diagram.png", "diagram-density.png", "view-live.png")
    for name in names:
        kept = IMAGES / name
        assert kept.is_file(), f"docs/img/{name}: pytest tests/faces/test_diagram.py --update-screenshots"
        assert png_size(kept) == png_size(folder / name), f"docs/img/{name} is stale: pytest tests/faces/test_diagram.py --update-screenshots"
    readme = (IMAGES.parents[1] / "README.md").read_text(encoding="utf-8")
    assert "docs/img/viewer-filter.png" in readme


def test_mcptap_view_answers_a_window_past_its_limit_as_a_density_and_a_session_s_longest_idle_gaps(tmp_path):
    from mcptap.report import livedata

    db = tmp_path / "gaps.db"
    times = [0.5, 0.501, 0.502, 3.0, 3.001, 10.0, 10.002, 10.004]  # idle 0-0.5 (before the first), 0.502-3, 3.001-10
    conn = store.connect(str(db))
    with store.write_transaction(conn):
        store.insert_session(conn, {"id": "s", "transport": "stdio", "started_at": 100.0, "ended_at": 111.0})
        store.insert_frames(conn, "s", [(k + 1, 100.0 + t, "c2s" if k % 2 == 0 else "s2c", b'{"jsonrpc":"2.0","method":"ping"}', 0)
                                        for k, t in enumerate(times)])
    conn.close()
    view = livedata.LiveView(str(db))
    gaps = view.gaps("s")
    assert gaps[0] == [0.0, 0.5] and gaps[1] == pytest.approx([3.001, 10.0]) and gaps[2] == pytest.approx([0.502, 3.0])
    arrows = view.window("s", 0, 11, 100)
    assert [r["seq"] for r in arrows["rows"]] == list(range(1, 9)) and "density" not in arrows
    band = view.window("s", 0, 11, 4)
    assert band["rows"] == [] and band["total"] == 8 and sum(band["density"]["counts"]) == 8
    assert band["density"]["counts"][int(3.0 / 11 * livedata.DENSITY_BUCKETS)] == 2  # 3.0 and 3.001 s
    view.selection("seq <= 2")
    marked = view.window("s", 0, 11, 100, "seq <= 2")
    assert [r["v"] for r in marked["rows"]] == [1, 1, 0, 0, 0, 0, 0, 0]
    assert "v" not in view.window("s", 0, 11, 100, "seq <=")["rows"][0]  # not a filter: nothing marked
    assert sum(view.window("s", 0, 11, 4, "seq <= 2")["density"]["hits"]) == 2
