"""`mcptap view` as a real server (a subprocess on a loopback port) over a recorded real session
(`mcptap demo`), in real headless Chromium (tests/support/browser.py): filtered by typing (the
server evaluates the filter), a frame clicked, a deep link opened, the diagram zoomed, script
payloads that run nothing, foreign Host, Origin and missing tokens refused, and a frame stored
while the page is open appearing in it. Its screenshot in docs/img/ is tests/faces/test_diagram.py's."""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request

import pytest

from mcptap import store
from mcptap.engine import selection
from tests.conftest import mcptap, run
from tests.faces.test_viewer import HOSTILE_FRAMES, chrome, rows, type_filter  # noqa: F401 - chrome: the fixture
from tests.support import browser
from tests.support.demo import demo_copy, demo_recording  # noqa: F401 - demo_recording: the fixture
from tests.support.viewing import viewing


@pytest.fixture(scope="module")
def demo(demo_recording, tmp_path_factory):
    """A live recording served by `mcptap view`: the demo's sessions and the URL."""
    recorded = demo_copy(demo_recording, tmp_path_factory.mktemp("view"))
    with viewing(recorded["db"]) as url:
        yield {**recorded, "url": url}


def status_of(url: str, headers: dict | None = None) -> int:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_request_without_the_token_or_with_a_foreign_host_or_origin_is_refused(demo):
    url, base = demo["url"], demo["url"].split("?")[0]
    assert status_of(url) == 200
    assert status_of(base) == 403
    assert status_of(base + "?token=wrong") == 403
    assert status_of(base + "api/summary") == 403
    assert status_of(base + "api/summary", {"X-Mcptap-Token": url.split("token=")[1]}) == 200
    assert status_of(url, {"Host": "evil.example:80"}) == 421
    assert status_of(url, {"Origin": "http://evil.example"}) == 403
    assert status_of(url, {"Origin": "http://localhost:9"}) == 200


def test_without_a_token_the_page_is_served_and_the_database_is_only_read(demo_recording, tmp_path):
    recorded = demo_copy(demo_recording, tmp_path)
    before = hashlib.sha256(recorded["db"].read_bytes()).hexdigest()
    with viewing(recorded["db"], "--no-token") as url:
        assert "token" not in url
        assert status_of(url) == 200 and status_of(url + "api/rows?filter=kind%20%3D%3D%20request") == 200
        assert status_of(url + "api/rows?filter=kind%20%3D%3D") == 400
    assert hashlib.sha256(recorded["db"].read_bytes()).hexdigest() == before


@pytest.mark.parametrize("args", [["--listen", "0.0.0.0:0"], ["--listen", "nope"]])
def test_a_listen_address_that_is_not_loopback_is_one_line_and_exit_2(tmp_path, args):
    db = tmp_path / "x.db"
    store.connect(str(db)).close()
    result = run(mcptap("view", "--db", str(db), *args), timeout=60)
    assert result.returncode == 2 and result.stderr.count(b"\n") == 1, result.stderr


def test_typing_a_filter_leaves_only_the_matching_frames_which_the_server_selected(chrome, demo):
    browser.open_page(chrome, demo["url"])
    browser.wait_for(lambda: rows(chrome), what="the first rows")
    assert "34 frames" in chrome.find_element("id", "filter-status").text
    text = 'method == "tools/call" and dir == "c2s"'
    expected = sorted((sid, seq) for sid, seqs in selection.select(str(demo["db"]), text).items() for seq in seqs)
    type_filter(chrome, text)
    shown = browser.wait_for(lambda: [r for r in rows(chrome) if r["method"]], what="the filtered rows")
    assert sorted((r["session"], r["seq"]) for r in shown) == expected and len(expected) > 2
    assert {r["method"] for r in shown} == {"tools/call"} and {r["kind"] for r in shown} == {"request"}
    assert f"{len(expected)} of 34 frames" in chrome.find_element("id", "filter-status").text
    type_filter(chrome, 'method == "tools/call" and (')
    assert "bad" in chrome.find_element("id", "filter").get_attribute("class")
    assert "column" in chrome.find_element("id", "filter-status").text
    type_filter(chrome, "")
    browser.wait_for(lambda: len(rows(chrome)) > 20, what="every frame again")


def test_clicking_a_row_shows_its_json_pretty_printed_and_its_pair(chrome, demo):
    browser.wait_for(lambda: browser.open_page(chrome, demo["url"]) and chrome.find_elements("id", "latency"),
                     what="the page with its latency table (worked out in a thread)")
    first = browser.wait_for(lambda: chrome.find_elements("css selector", "#list .row[data-seq='1']"), what="row 1")[0]
    first.click()
    detail = chrome.find_element("id", "detail")
    browser.wait_for(lambda: "Frame 1 of session" in detail.text, what="the detail pane")
    tree = detail.find_element("css selector", ".json")
    assert '"protocolVersion":' in tree.text and '"2025-11-25"' in tree.text
    detail.find_element("css selector", "a.jump").click()
    browser.wait_for(lambda: "Frame 3 of session" in detail.text, what="the pair")
    assert [r["seq"] for r in rows(chrome) if r["selected"]] == [3]


def test_a_deep_link_opens_the_frame_with_its_http_exchange(chrome, demo):
    browser.open_page(chrome, demo["url"] + f"#frame={demo['http'][:13]}:5")
    detail = chrome.find_element("id", "detail")
    browser.wait_for(lambda: f"Frame 5 of session {demo['http']}" in detail.text, what="the deep-linked frame")
    assert "HTTP exchange" in detail.text and "POST http://127.0.0.1:" in detail.text
    browser.wait_for(lambda: [(r["session"], r["seq"]) for r in rows(chrome) if r["selected"]] == [(demo["http"], 5)],
                     what="the frame's row selected")


def test_zooming_the_diagram_spreads_its_arrows_in_time(chrome, demo):
    browser.open_page(chrome, demo["url"])

    def arrows():
        return chrome.execute_script("""
            const svg = document.querySelector('#diagram svg');
            return svg && {scale: +svg.dataset.scale, y: Object.fromEntries([...svg.querySelectorAll('g.arrow')].map(
              g => [g.dataset.seq, +g.querySelector('line').getAttribute('y1')]))};""")

    fitted = browser.wait_for(lambda: (a := arrows()) and len(a["y"]) == 17 and a, what="the session's 17 arrows")
    chrome.find_element("id", "zoom-in").click()
    zoomed = browser.wait_for(lambda: (a := arrows()) and a["scale"] != fitted["scale"] and a["y"] and a,
                              what="the zoomed diagram")
    assert zoomed["scale"] == pytest.approx(2 * fitted["scale"], rel=1e-4)
    both = sorted(set(fitted["y"]) & set(zoomed["y"]), key=lambda k: fitted["y"][k])
    a, b = min(zip(both, both[1:]), key=lambda p: fitted["y"][p[1]] - fitted["y"][p[0]] or float("inf"))  # no idle gap between
    assert zoomed["y"][b] - zoomed["y"][a] == pytest.approx(2 * (fitted["y"][b] - fitted["y"][a]), rel=1e-3)


def test_a_frame_stored_while_the_page_is_open_appears_in_it(chrome, demo_recording, tmp_path):
    recorded = demo_copy(demo_recording, tmp_path)
    with viewing(recorded["db"]) as url:
        browser.open_page(chrome, url + "#filter=" + "session%20%3D%3D%20%22" + recorded["stdio"] + "%22")
        browser.wait_for(lambda: len(rows(chrome)) == 17, what="the session's 17 frames")
        conn = store.connect(str(recorded["db"]))
        with store.write_transaction(conn):
            store.insert_frames(conn, recorded["stdio"], [(18, 2e9, "c2s", b'{"jsonrpc":"2.0","id":99,"method":"ping"}', 0)])
        conn.close()
        grown = browser.wait_for(lambda: [r for r in rows(chrome) if r["seq"] == 18], timeout=15, what="frame 18")
        assert grown[0]["method"] == "ping" and grown[0]["kind"] == "request"


def api(url: str, path: str, **params) -> dict:
    import json
    from urllib.parse import urlencode

    base, token = url.split("?token=")
    request = urllib.request.Request(base + "api/" + path + "?" + urlencode(params), headers={"X-Mcptap-Token": token})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def test_a_filters_first_page_comes_before_its_count_which_the_page_shows_when_it_arrives(chrome, tmp_path):
    db = str(tmp_path / "many.db")
    conn = store.connect(db)
    with store.write_transaction(conn):
        for k in range(3):
            sid = f"session-{k}"
            store.insert_session(conn, {"id": sid, "transport": "stdio", "label": sid, "started_at": 1000.0 + k * 100,
                                        "ended_at": 1090.0 + k * 100})
            store.insert_frames(conn, sid, [(i + 1, 1000.0 + k * 100 + i * 0.01, "c2s",
                                             b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % i, 0) for i in range(2000)])
    conn.close()
    with viewing(db) as url:
        first = api(url, "rows", filter="seq > 1 and seq < 1990", offset=0, limit=100)
        assert first["counting"] and first["total"] == 100 and [r["seq"] for r in first["rows"]] == list(range(2, 102))
        def count():
            answer = api(url, "rows", filter="seq > 1 and seq < 1990", offset=0, limit=0)
            return None if answer.get("counting") else answer

        counted = browser.wait_for(count, timeout=60, what="the count")
        assert counted["total"] == 3 * 1988
        later = api(url, "rows", filter="seq > 1 and seq < 1990", offset=1988, limit=2)
        assert [(r["n"], r["seq"]) for r in later["rows"]] == [(1, 2), (1, 3)]
        browser.open_page(chrome, url)
        browser.wait_for(lambda: rows(chrome), what="the first rows")
        type_filter(chrome, "seq > 2 and seq < 1990")
        status = chrome.find_element("id", "filter-status")
        browser.wait_for(lambda: status.text == "5,961 of 6,000 frames", timeout=60, what="the count")
        chrome.execute_script("document.getElementById('list').scrollTop = 1e9")
        browser.wait_for(lambda: [r for r in rows(chrome) if r["seq"] == 1989 and r["session"] == "session-2"],
                         what="the filter's last frame")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("hostile-view") / "hostile.db")
    conn = store.connect(db)
    with store.write_transaction(conn):
        store.insert_session(conn, {"id": "s<script>x", "transport": "stdio", "label": "<b onmouseover=alert(1)>x</b>",
                                    "started_at": 1000.0, "ended_at": 1002.0})
        store.insert_frames(conn, "s<script>x", [(i + 1, 1000.0 + i * 0.01, d, raw.encode(), 0)
                                                 for i, (d, raw) in enumerate(HOSTILE_FRAMES)])
        store.insert_stderr(conn, "s<script>x", [(1, 1000.005, b"</script><script>window.__pwned=8</script>", 0)])
    conn.close()
    with viewing(db) as url:
        yield url


def test_script_payloads_in_frames_run_nothing_and_show_as_text(chrome, hostile):
    chrome.get("about:blank")  # no page of an earlier test polls a server that is gone
    chrome.get_log("performance")
    chrome.get_log("browser")
    browser.open_page(chrome, hostile)
    shown = browser.wait_for(lambda: chrome.find_elements("css selector", "#list .row[data-seq]"), what="the rows")
    for row in shown:
        row.click()
        chrome.execute_script("document.getElementById('zoom-in').click()")
    detail = chrome.find_element("id", "detail")
    browser.wait_for(lambda: "Frame 5 of session" in detail.text, what="the last frame's detail")
    assert chrome.execute_script("return window.__pwned") is None
    assert not chrome.find_elements("css selector", "#list img, #detail img, #detail a[href^='javascript'], "
                                                    "#stderr img, [onerror], [onload], [onmouseover]")
    assert chrome.execute_script("return document.scripts.length") == 3  # the empty data, the config, the script
    shown[0].click()
    browser.wait_for(lambda: "</script><script>window.__pwned=1</script>" in detail.text, what="frame 1 as text")
    browser.wait_for(lambda: "window.__pwned=8" in chrome.find_element("id", "stderr").text, what="stderr as text")
    origin = hostile.split("/?")[0]
    made = browser.requests(chrome)
    assert made and all(u.startswith(origin + "/") for u in made), made
    severe = [e for e in chrome.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe
