"""The report's viewer in real headless Chromium (tests/support/browser.py): the report of a session
recorded live (`mcptap demo`: the bundled stdio server through the tee, the bundled HTTP server
through the proxy), filtered by typing, a frame clicked, a deep link opened, the diagram zoomed;
and a recording full of script payloads, which runs nothing and makes no request. The diagram's
geometry and the screenshots in docs/img/ are tests/faces/test_diagram.py's."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mcptap import store
from tests.support import browser
from tests.support.demo import demo_copy, demo_recording  # noqa: F401 - demo_recording: the fixture
from tests.support.inprocess import cli

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "img"


@pytest.fixture(scope="module")
def chrome():
    why = browser.missing()
    if why:
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    with browser.chromium() as driver:
        yield driver


@pytest.fixture(scope="module")
def demo(demo_recording, tmp_path_factory):
    """The report of a live recording: (page path, database path, the stdio and HTTP sessions' ids)."""
    return demo_copy(demo_recording, tmp_path_factory.mktemp("viewer"))


def rows(driver) -> list[dict]:
    """The frame rows on screen now (only those in sight are in the page), as their cells' text."""
    return driver.execute_script("""
        return [...document.querySelectorAll('#list .row')].filter(r => getComputedStyle(r).display !== 'none').map(r => ({
          index: +r.dataset.index, session: r.children[0].title, seq: +r.children[1].textContent,
          kind: r.children[4].textContent, method: r.children[5].textContent, latency: r.children[8].textContent,
          findings: r.children[10].textContent, selected: r.classList.contains('selected')}));""")


def type_filter(driver, text: str) -> None:
    from selenium.webdriver.common.keys import Keys

    box = driver.find_element("id", "filter")
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(Keys.BACKSPACE)
    if text:
        box.send_keys(text)
    browser.wait_for(lambda: box.get_attribute("data-applied") == text.strip(), what="the filter to apply")


def test_typing_a_filter_leaves_only_the_frames_it_matches_and_keeps_it_in_the_address(chrome, demo):
    browser.open_page(chrome, demo["page"].as_uri())
    total = len(rows(chrome))
    type_filter(chrome, 'method == "tools/call" and dir == "c2s"')
    shown = rows(chrome)
    assert shown and len(shown) < total
    assert {r["method"] for r in shown} == {"tools/call"} and {r["kind"] for r in shown} == {"request"}
    assert "filter=method%20%3D%3D%20%22tools%2Fcall%22" in chrome.current_url
    type_filter(chrome, 'finding == "stdout-noise" or kind == "invalid"')
    assert {r["kind"] for r in rows(chrome)} == {"unparseable", "invalid"}
    type_filter(chrome, "latency > 20ms")
    assert all(float(r["latency"].split()[0]) > 20 for r in rows(chrome)) and rows(chrome)
    type_filter(chrome, 'method == "tools/call" and (')
    assert "bad" in chrome.find_element("id", "filter").get_attribute("class")
    assert "parenthesis" in chrome.find_element("id", "filter-status").text or "ends" in \
        chrome.find_element("id", "filter-status").text
    url = demo["page"].as_uri() + "#filter=" + "session%20%3D%3D%20%22" + demo["http"][:18] + "%22"
    browser.open_page(chrome, url)
    assert chrome.find_element("id", "filter").get_attribute("value") == f'session == "{demo["http"][:18]}"'
    assert {r["session"] for r in rows(chrome)} == {demo["http"]}


def test_clicking_a_frame_shows_its_bytes_and_its_json_pretty_printed_and_collapsible(chrome, demo):
    browser.open_page(chrome, demo["page"].as_uri())
    first = chrome.find_element("css selector", "#list .row:not([hidden])")
    assert first.find_elements("css selector", "span")[5].text == "initialize"
    first.click()
    detail = chrome.find_element("id", "detail")
    browser.wait_for(lambda: "Frame 1 of session" in detail.text, what="the detail pane")
    assert '"method":"initialize"' in detail.find_element("css selector", "pre.bytes").text
    tree = detail.find_element("css selector", ".json")
    assert '"protocolVersion":' in tree.text and '"2025-11-25"' in tree.text
    branch = tree.find_element("css selector", "details details")
    assert branch.get_attribute("open") is not None
    branch.find_element("css selector", "summary").click()
    assert branch.get_attribute("open") is None  # collapsed
    pair = detail.find_element("css selector", "a.jump")
    assert "frame 3 (response)" in pair.text
    pair.click()
    browser.wait_for(lambda: "Frame 3 of session" in detail.text, what="the pair to open")
    assert [r["seq"] for r in rows(chrome) if r["selected"]] == [3]


def test_a_frame_with_a_finding_shows_it_with_its_spec_reference(chrome, demo):
    browser.open_page(chrome, demo["page"].as_uri() + f"#frame={demo['stdio']}:2")
    detail = chrome.find_element("id", "detail")
    browser.wait_for(lambda: "Frame 2 of session" in detail.text, what="the deep-linked frame")
    assert "stdout-noise" in detail.text and "spec: " in detail.text
    links = [a.get_attribute("href") for a in detail.find_elements("css selector", ".finding a")]
    assert any(href.endswith("docs/rules.md#stdout-noise") for href in links), links


def test_a_deep_link_opens_that_frame_and_an_http_frame_shows_its_exchange(chrome, demo):
    browser.open_page(chrome, demo["page"].as_uri() + f"#frame={demo['http'][:13]}:5")
    detail = chrome.find_element("id", "detail")
    browser.wait_for(lambda: f"Frame 5 of session {demo['http']}" in detail.text, what="the deep-linked frame")
    assert [(r["session"], r["seq"]) for r in rows(chrome) if r["selected"]] == [(demo["http"], 5)]
    assert "HTTP exchange" in detail.text and "POST http://127.0.0.1:" in detail.text
    assert "content-type" in detail.text.lower()
    chrome.find_element("css selector", "#list .row.selected").click()  # a click writes the frame's whole id
    assert chrome.current_url.endswith(f"#frame={demo['http']}%3A5")
    assert "session " + demo["http"] in chrome.find_element("id", "diagram-title").text
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(chrome).send_keys("jj").perform()  # j: the next frame, k: the one before
    browser.wait_for(lambda: f"Frame 7 of session {demo['http']}" in detail.text, what="j to select the next frames")
    ActionChains(chrome).send_keys("k").perform()
    browser.wait_for(lambda: f"Frame 6 of session {demo['http']}" in detail.text, what="k to select the frame before")
    ActionChains(chrome).send_keys("/").perform()
    assert chrome.switch_to.active_element.get_attribute("id") == "filter"


def test_zooming_the_diagram_spreads_its_arrows_in_time_and_an_arrow_opens_its_frame(chrome, demo):
    browser.open_page(chrome, demo["page"].as_uri())

    def arrows():
        return chrome.execute_script("""
            const svg = document.querySelector('#diagram svg');
            return {scale: +svg.dataset.scale, y: Object.fromEntries([...svg.querySelectorAll('g.arrow')].map(
              g => [g.dataset.index, +g.querySelector('line').getAttribute('y1')]))};""")

    before = arrows()
    assert len(before["y"]) == 17  # the stdio session: every frame at its time
    chrome.find_element("id", "zoom-fit").click()
    fitted = arrows()
    chrome.find_element("id", "zoom-in").click()
    zoomed = arrows()
    assert zoomed["scale"] == pytest.approx(2 * fitted["scale"], rel=1e-4)
    both = sorted(set(fitted["y"]) & set(zoomed["y"]), key=lambda k: fitted["y"][k])
    a, b = min(zip(both, both[1:]), key=lambda p: fitted["y"][p[1]] - fitted["y"][p[0]] or float("inf"))  # no idle gap between
    assert zoomed["y"][b] - zoomed["y"][a] == pytest.approx(2 * (fitted["y"][b] - fitted["y"][a]), rel=1e-3)
    chrome.execute_script("document.querySelector('#diagram g.arrow').dispatchEvent(new MouseEvent('click'))")
    browser.wait_for(lambda: "Frame" in chrome.find_element("id", "detail").text, what="the arrow's frame to open")


def test_the_latency_table_and_chart_hold_the_numbers_of_mcptap_analyze(chrome, demo):
    browser.open_page(chrome, demo["page"].as_uri())
    table = [[td.text for td in tr.find_elements("tag name", "td")]
             for tr in chrome.find_elements("css selector", "#latency tbody tr")]
    result = cli("analyze", "--db", str(demo["db"]))
    text = result.stdout.decode()
    for row in table:  # method, calls, errors, tool errors, unanswered, p50, p95, max: as the table prints them
        assert any(line.split() == row for line in text.splitlines()), row
    assert len(chrome.find_elements("css selector", "#latency-svg g.method")) == len(table)


CORPUS = json.loads((IMAGES.parents[1] / "tests" / "data" / "filter_corpus.json").read_text(encoding="utf-8"))


def test_the_report_s_script_selects_the_frames_of_every_corpus_filter_and_refuses_the_bad_ones_at_their_column(
        chrome, tmp_path):
    """The corpus tests/store/test_filter.py runs through SQL, here through the report's script."""
    db = tmp_path / "corpus.db"
    assert cli("import", "--db", str(db), str(IMAGES.parents[1] / CORPUS["database"])).returncode == 0
    page = tmp_path / "corpus.html"
    assert cli("report", "--db", str(db), "-o", str(page)).returncode == 0
    browser.open_page(chrome, page.as_uri())
    wrong = []
    for case in CORPUS["cases"]:
        got = chrome.execute_script("return window.mcptapFilter(arguments[0])", case["filter"])
        if got.get("frames") != case["frames"]:
            wrong.append((case["filter"], got, case["frames"]))
    for case in CORPUS["errors"]:
        got = chrome.execute_script("return window.mcptapFilter(arguments[0])", case["filter"])
        if got.get("column") != case["column"] or not got["error"].startswith(f"bad filter at column {case['column']}"):
            wrong.append((case["filter"], got, case["column"]))
    assert not wrong, wrong
    type_filter(chrome, CORPUS["cases"][0]["filter"])
    shown = [f"{r['session'][:13]}:{r['seq']}" for r in rows(chrome)]
    assert shown == [f"{'01a23348-5c71' if f.startswith('demo:') else '01a23348-6563'}:{f.split(':')[1]}"
                     for f in CORPUS["cases"][0]["frames"]]


HOSTILE_FRAMES = [
    ("c2s", '{"jsonrpc":"2.0","id":1,"method":"</script><script>window.__pwned=1</script>",'
            '"params":{"x":"<img src=x onerror=\\"window.__pwned=2\\">"}}'),
    ("s2c", '<img src=x onerror="window.__pwned=3"><svg onload="window.__pwned=4">'),
    ("c2s", '{"jsonrpc":"2.0","id":"javascript:window.__pwned=5","method":"javascript:window.__pwned=6"}'),
    ("s2c", '{"jsonrpc":"2.0","id":1,"result":{"text":"\u202egnp.exe\u202c <a href=\\"javascript:window.__pwned=7\\">x</a>"}}'),
    ("c2s", '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"\u0000\u001b[2J"}}'),
]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile-viewer")
    db = str(folder / "hostile.db")
    conn = store.connect(db)
    with store.write_transaction(conn):
        store.insert_session(conn, {"id": "s<script>x", "transport": "stdio", "label": "<b onmouseover=alert(1)>x</b>",
                                    "started_at": 1000.0, "ended_at": 1002.0})
        store.insert_frames(conn, "s<script>x", [(i + 1, 1000.0 + i * 0.01, d, raw.encode(), 0)
                                                 for i, (d, raw) in enumerate(HOSTILE_FRAMES)])
        store.insert_stderr(conn, "s<script>x", [(1, 1000.005, b"</script><script>window.__pwned=8</script>", 0)])
    conn.close()
    page = folder / "hostile.html"
    result = cli("report", "--db", db, "-o", str(page))
    assert result.returncode == 0, result.stderr
    return page


def test_a_recording_full_of_script_payloads_runs_nothing_shows_them_as_text_and_requests_nothing(chrome, hostile):
    chrome.get_log("performance")  # what earlier tests did
    browser.open_page(chrome, hostile.as_uri())
    for row in chrome.find_elements("css selector", "#list .row:not([hidden])"):
        row.click()  # every frame through the detail pane, its JSON tree and the diagram
        chrome.execute_script("document.getElementById('zoom-in').click()")
    type_filter(chrome, 'text contains "javascript"')
    assert chrome.execute_script("return window.__pwned") is None
    assert not chrome.find_elements("css selector", "#list img, #detail img, #detail a[href^='javascript'], "
                                                    "#stderr img, [onerror], [onload], [onmouseover]")
    assert chrome.execute_script("return document.scripts.length") == 2  # the data and the viewer's script
    type_filter(chrome, "")
    chrome.find_elements("css selector", "#list .row:not([hidden])")[3].click()
    detail = chrome.find_element("id", "detail").text
    assert "\\u202egnp.exe\\u202c" in detail and "\u202e" not in detail  # the bidi override shown as its escape
    chrome.find_elements("css selector", "#list .row:not([hidden])")[0].click()
    assert "</script><script>window.__pwned=1</script>" in chrome.find_element("id", "detail").text
    assert "</script><script>window.__pwned=8</script>" in chrome.find_element("id", "stderr").text
    assert "<b onmouseover=alert(1)>x</b>" in chrome.find_element("id", "sessions").text
    made = browser.requests(chrome)
    assert made and all(url == hostile.as_uri() for url in made), made
    severe = [e for e in chrome.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe  # no script error, no refused load (the page's policy)


def test_a_big_recording_puts_only_the_rows_in_sight_in_the_page(chrome, tmp_path):
    db = str(tmp_path / "big.db")
    conn = store.connect(db)
    frames = []
    for i in range(20_000):
        frames += [("c2s", b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % i), ("s2c", b'{"jsonrpc":"2.0","id":%d,"result":{}}' % i)]
    frames[20000] = ("s2c", b"not json")  # seq 20001: a finding in the middle
    with store.write_transaction(conn):
        store.insert_session(conn, {"id": "big", "transport": "stdio", "started_at": 1000.0, "ended_at": 1100.0})
        store.insert_frames(conn, "big", [(i + 1, 1000.0 + i * 0.002, d, raw, 0) for i, (d, raw) in enumerate(frames)])
    conn.close()
    page = tmp_path / "big.html"
    assert cli("report", "--db", db, "-o", str(page)).returncode == 0
    browser.open_page(chrome, page.as_uri() + "#frame=big:39999")
    assert "40,000 frames" in chrome.find_element("id", "filter-status").text
    assert len(chrome.find_elements("css selector", "#list .row")) < 60
    assert [r["seq"] for r in rows(chrome) if r["selected"]] == [39999]
    type_filter(chrome, "id == 19999")
    assert [r["seq"] for r in rows(chrome)] == [39999, 40000]
    assert len(chrome.find_elements("css selector", "#diagram g.arrow")) <= 1500
    trimmed = tmp_path / "trimmed.html"
    assert cli("report", "--db", db, "-o", str(trimmed), "--max-frames", "1000").returncode == 0
    browser.open_page(chrome, trimmed.as_uri())
    note = chrome.find_element("id", "left-out").text
    assert "of the 40,000 frames" in note and "within 20 of each finding" in note and "mcptap show --db" in note
    kept = chrome.execute_script("return window.mcptapFilter('seq > 0').frames")
    seqs = [int(f.split(":")[1]) for f in kept]
    assert seqs[:100] == list(range(1, 101)) and seqs[-100:] == list(range(39901, 40001))
    assert set(range(19981, 20022)) <= set(seqs) and len(seqs) < 300
