"""`mcptap tui` driven by Textual's headless pilot over real databases (the list, the filter, the
detail, the pair, the findings, the keys on screen, the mouse, following a recording another process
writes, the sessions and runs of a host recording live), and in a real pseudo-terminal (hostile
frames escaped, NO_COLOR)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time

import pytest

from tests.conftest import PROCESS_TIMEOUT_S, mcptap, run, tee
from tests.support.sessions import handshake, ok, req, write_log
from tests.support.terminal import Terminal

textual = pytest.importorskip("textual")

from textual.widgets import DataTable, Footer, Input, Static  # noqa: E402
from textual.widgets._footer import FooterKey  # noqa: E402

from mcptap.tui.app import PAGE, TapApp  # noqa: E402

FRAMES = handshake() + [("c2s", req(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})),
                        ("s2c", ok(1, {"content": [{"type": "text", "text": "hi"}]})),
                        ("c2s", req(2, "tools/call\u202e\x1b[2J")),
                        ("s2c", '{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}'),
                        ("s2c", "not json at all")] + [("c2s", req(10 + i, "ping")) for i in range(400)]


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tui")
    log, path = folder / "log.jsonl", folder / "t.db"
    write_log(log, FRAMES, "first")
    assert run(mcptap("import", "--db", str(path), "--no-redact", str(log))).returncode == 0
    assert run(mcptap("analyze", "--db", str(path))).returncode in (0, 1)
    return path


def drive(app: TapApp, script, size=(140, 45)):
    async def main():
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await script(app, pilot)
    asyncio.run(main())


async def wait_until(pilot, condition, what: str, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)


async def typed(pilot, text: str):
    for ch in text:
        await pilot.press({" ": "space", '"': "quotation_mark", "=": "equals_sign"}.get(ch, ch))


def body(app) -> str:
    return str(app.query_one("#body", Static).render())


def test_the_list_is_paged_and_j_past_the_page_loads_the_next(db):
    async def script(app, pilot):
        table = app.query_one("#frames", DataTable)
        assert app.total == len(FRAMES) and table.row_count == PAGE
        for _ in range(3):
            await pilot.press("j")
        assert table.cursor_row == 3
        table.move_cursor(row=PAGE - 3)
        await pilot.press("j", "j")
        assert table.cursor_row == PAGE - 1 and app.offset == 0
        await pilot.press("down")  # the arrow pages on as j does
        assert app.offset > 0 and app.offset + table.cursor_row == PAGE
        await pilot.press("j", "j", "down", "down", "j")
        assert app.offset > 0 and app.offset + table.cursor_row == PAGE + 5
        await pilot.press("G")
        assert app.offset + table.cursor_row == len(FRAMES) - 1
        await pilot.press("g")
        assert app.offset == 0 and table.cursor_row == 0
    drive(TapApp(str(db)), script)


def test_the_filter_the_detail_and_the_pair(db):
    async def script(app, pilot):
        await pilot.press("slash")
        assert app.query_one("#filter", Input).has_focus
        await typed(pilot, "method ")
        app.query_one("#filter", Input).value += '== "tools/call" and kind == request'
        await pilot.press("enter")
        table = app.query_one("#frames", DataTable)
        assert table.row_count == 1 and app.filter.startswith("method ==")
        await pilot.press("enter")
        shown = body(app)
        assert '"name": "echo"' in shown and "pair: frame" in shown
        assert '"content": [' in shown.split("its pair: frame 5")[1]  # the response, below the request
        await pilot.press("escape")
        await pilot.press("p")  # the response is not in this list: said so, nothing moves
        assert app.offset == 0
        await pilot.press("slash")
        app.query_one("#filter", Input).value = ""
        await pilot.press("enter")
        assert table.row_count == PAGE
        for _ in range(3):  # the tools/call request
            await pilot.press("j")
        assert app.rows[table.cursor_row]["k"] == "request"
        await pilot.press("p")
        assert app.rows[table.cursor_row]["k"] == "response"
    drive(TapApp(str(db)), script)


def test_a_bad_filter_is_said_on_the_status_line_and_the_list_stays(db):
    async def script(app, pilot):
        await pilot.press("slash")
        await typed(pilot, "kind ==")
        await pilot.press("enter")
        assert "filter:" in str(app.query_one("#status", Static).render())
        assert app.query_one("#frames", DataTable).row_count == PAGE
    drive(TapApp(str(db)), script)


def test_text_from_the_traffic_is_escaped(db):
    async def script(app, pilot):
        table = app.query_one("#frames", DataTable)
        for _ in range(5):
            await pilot.press("j")
        cells = [str(c) for c in table.get_row_at(table.cursor_row)]
        assert any("\\u202e" in c for c in cells) and not any("\u202e" in c or "\x1b" in c for c in cells)
        assert "\x1b" not in body(app) and "\u202e" not in body(app)
    drive(TapApp(str(db)), script)


def test_the_findings_view_filters_the_list_to_a_code(db):
    async def script(app, pilot):
        await pilot.press("F")
        findings = app.query_one("#findings", DataTable)
        assert findings.row_count >= 1 and findings.has_focus
        code = str(findings.get_row_at(0)[1])
        await pilot.press("enter")
        assert app.filter == f'finding == "{code}"' and app.query_one("#frames", DataTable).row_count >= 1
        assert f": {code}: " in body(app)  # the detail pane: the frame's findings
    drive(TapApp(str(db)), script)


def test_follow_shows_frames_another_process_records(tmp_path, db):
    live = tmp_path / "live.db"
    live.write_bytes(db.read_bytes())
    more = tmp_path / "more.jsonl"
    write_log(more, handshake() + [("c2s", req(i, "ping")) for i in range(1, 40)], "second")

    async def script(app, pilot):
        table = app.query_one("#frames", DataTable)
        assert app.following and app.offset + table.cursor_row == len(FRAMES) - 1
        done = await asyncio.to_thread(run, mcptap("import", "--db", str(live), "--no-redact", str(more)))
        assert done.returncode == 0
        await wait_until(pilot, lambda: app.total == len(FRAMES) + 42, "the imported frames")
        await wait_until(pilot, lambda: app.offset + table.cursor_row == app.total - 1, "the cursor at the end")
        assert app.query_one("#sessions", DataTable).row_count == 2
    drive(TapApp(str(live), follow=True), script)


HOSTILE = "tools/call\x1b]0;PWNED\x07\x1b[2J\u202e\x9b31m"
"""A method that, reaching the terminal as it is, would set the window's title, clear the screen,
turn the text around and colour it (C1 CSI)."""
SGR = re.compile(rb"\x1b\[([0-9;:]*)m")


def colours(output: bytes) -> list[bytes]:
    """The SGR sequences in `output` that set a colour (not the terminal's default one)."""
    out = []
    for params in SGR.findall(output):
        codes = [int(p or 0) for p in re.split(rb"[;:]", params)]
        if any(c in (38, 48) or 30 <= c <= 37 or 40 <= c <= 47 or 90 <= c <= 97 or 100 <= c <= 107 for c in codes):
            out.append(params)
    return out


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tui-hostile")
    log, path = folder / "log.jsonl", folder / "h.db"
    write_log(log, [("c2s", req(1, HOSTILE, {"name": "\x1b]52;c;cHduZWQ=\x07"})), *handshake(start_id=2)], "hostile")
    assert run(mcptap("import", "--db", str(path), "--no-redact", str(log))).returncode == 0
    return path


def in_terminal(db, env: dict, until: bytes) -> bytes:
    """`mcptap tui --db DB` in a real pseudo-terminal (25x80) with `env` added: what it wrote until
    `until` showed, then `q`; asserts it quits with 0."""
    keep = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    with Terminal(mcptap("tui", "--db", str(db)), {**keep, "TERM": "xterm-256color", **env}) as term:
        term.until(until, PROCESS_TIMEOUT_S)
        term.type(b"q")
        assert term.exit_code(PROCESS_TIMEOUT_S) == 0
        return term.seen


def test_in_a_real_terminal_a_hostile_frame_is_drawn_escaped_and_q_quits(hostile_db):
    seen = in_terminal(hostile_db, {"NO_COLOR": "1"}, until=b"PWNED")  # the detail pane: frame 1, pretty
    for raw in (b"\x1b]0;PWNED", b"\x1b]52;", b"\xc2\x9b", "\u202e".encode()):
        assert raw not in seen
    assert b"\\x1b]0;PWNED" in seen or b"\\u001b]0;PWNED" in seen  # drawn as an escape


@pytest.mark.parametrize("no_color", ["1", None])
def test_in_a_real_terminal_no_color_means_no_colour(db, no_color):
    seen = in_terminal(db, {"NO_COLOR": no_color} if no_color else {}, until=b"notifications/initialized")
    if no_color:
        assert colours(seen) == []
    else:
        assert len(colours(seen)) > 10


def test_without_the_extra_or_with_a_bad_filter_one_line(db):
    done = subprocess.run(mcptap("tui", "--db", str(db), "--filter", "kind =="), capture_output=True,
                          timeout=PROCESS_TIMEOUT_S)
    assert done.returncode == 2 and done.stderr.decode().count("\n") == 1 and b"Traceback" not in done.stderr


def test_the_keys_are_on_screen(db):
    async def script(app, pilot):
        footer = app.query_one(Footer)
        shown = {key.key: key for key in footer.query(FooterKey)}
        for key in ("j", "k", "enter", "slash", "f", "F", "p", "escape", "q"):
            assert key in shown and shown[key].region.width > 0, (key, sorted(shown))
            assert shown[key].region.y == 44  # on the screen's last line
    drive(TapApp(str(db)), script)


def test_a_click_on_a_frame_shows_its_detail(db):
    async def script(app, pilot):
        table = app.query_one("#frames", DataTable)
        assert table.cursor_row == 0 and '"method": "initialize"' in body(app)
        await pilot.click("#frames", offset=(5, 4))  # the header's line, then rows 1, 2, 3: the fourth row
        await wait_until(pilot, lambda: table.cursor_row == 3, "the clicked row")
        assert '"name": "echo"' in body(app)
    drive(TapApp(str(db)), script)


def test_G_on_a_filter_finds_its_whole_list_in_a_thread_then_shows_its_end(db):
    async def script(app, pilot):
        app._apply("method == ping")  # more than a page: answered with its first page, counting
        table = app.query_one("#frames", DataTable)
        assert app.filter == "method == ping" and table.row_count == PAGE
        await pilot.press("G")
        await wait_until(pilot, lambda: app.total == 400 and app.offset + table.cursor_row == 399, "the list's end")
        assert app.rows[table.cursor_row]["id"] == "409" and app.finding is None
    drive(TapApp(str(db)), script)


SERVER = [sys.executable, "-m", "mcptap.demo.server"]
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def recording(db, name: str) -> subprocess.Popen:
    """`mcptap record` of the bundled server, started by this process (the host: all its servers
    are one run), initialized."""
    proc = subprocess.Popen(tee(db, *SERVER, name=name), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    send(proc, INIT)
    assert b'"result"' in proc.stdout.readline()
    return proc


def send(proc: subprocess.Popen, message: dict) -> None:
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def test_sessions_runs_and_frames_appear_live_while_a_host_records(tmp_path):
    live = tmp_path / "live.db"
    procs = [recording(live, "alpha")]

    def cell(table, column: str) -> list[str]:
        k = [str(c.label) for c in table.ordered_columns].index(column)
        return [str(table.get_row_at(r)[k]) for r in range(table.row_count)]

    async def script(app, pilot):
        sessions, runs, frames = (app.query_one(f"#{w}", DataTable) for w in ("sessions", "runs", "frames"))
        await wait_until(pilot, lambda: runs.row_count == 1 and runs.display, "the run")
        procs.append(await asyncio.to_thread(recording, live, "beta"))
        await wait_until(pilot, lambda: sessions.row_count == 2, "the second session")
        await wait_until(pilot, lambda: runs.row_count == 1 and cell(runs, "sessions") == ["2"], "the run's second server")
        assert "alpha, beta" in cell(runs, "servers")[0] and cell(sessions, "state") == ["recording"] * 2
        assert f"pid {os.getpid()}" in cell(runs, "host")[0]  # this process: the host
        sessions.move_cursor(row=1)
        await asyncio.to_thread(send, procs[1], {"jsonrpc": "2.0", "id": 77, "method": "ping"})
        await wait_until(pilot, lambda: newest(app) == "77", "the ping at the list's end, followed")
        assert sessions.cursor_row == 1  # the sessions read again, the cursor where it was
        await pilot.press("r", "enter")  # the run's frames: every frame
        assert app.filter.startswith("run == ") and app.total == app.view.total == 6
        await pilot.press("slash")
        app.query_one("#filter", Input).value = 'server == "alpha"'
        await pilot.press("enter", "f")  # one server's frames, following
        alpha = app.short[next(s["id"] for s in app.view.sessions if s["label"] == "alpha")]
        assert app.following and set(cell(frames, "session")) == {alpha}
        await asyncio.to_thread(send, procs[0], {"jsonrpc": "2.0", "id": 78, "method": "ping"})
        await wait_until(pilot, lambda: newest(app) == "78", "alpha's ping, followed")
        assert set(cell(frames, "session")) == {alpha}
        await asyncio.to_thread(procs[1].stdin.close)  # beta's server ends: its tee ends the session
        await wait_until(pilot, lambda: cell(sessions, "state") == ["recording", "ended"], "beta's end")

    try:
        wait_for_rows(live)
        drive(TapApp(str(live), follow=True), script)
    finally:
        for proc in procs:
            proc.stdin.close()
            proc.wait(PROCESS_TIMEOUT_S)
            proc.stdout.close()


def newest(app) -> str | None:
    """The id of the frame under the cursor when it is the list's last."""
    table = app.query_one("#frames", DataTable)
    if not app.rows or app.offset + table.cursor_row != app.total - 1:
        return None
    return app.rows[table.cursor_row]["id"]


def wait_for_rows(path) -> None:
    from tests.conftest import rows, wait_for

    wait_for(lambda: rows(path, "SELECT 1 FROM frames", missing_ok=True), 20, "the first frame stored")


def test_follow_with_a_filter_starts_at_the_filters_last_frame(db):
    async def script(app, pilot):
        table = app.query_one("#frames", DataTable)
        await wait_until(pilot, lambda: app.total == 400 and app.offset + table.cursor_row == 399, "the list's end")
        assert app.following and app.rows[table.cursor_row]["id"] == "409"
    drive(TapApp(str(db), filter="method == ping", follow=True), script)


def test_the_mouse_wheel_past_the_page_loads_the_next(db):
    from textual import events

    async def wheel(pilot, event, times: int):
        for _ in range(times):
            await pilot._post_mouse_events([event], "#frames", offset=(5, 5))

    async def script(app, pilot):
        table = app.query_one("#frames", DataTable)
        table.scroll_end(animate=False)
        await pilot.pause()
        assert app.offset == 0 and table.scroll_y == table.max_scroll_y > 0
        await wheel(pilot, events.MouseScrollDown, 2)
        await wait_until(pilot, lambda: app.offset == PAGE // 2, "the next half page")
        await pilot.pause()
        assert table.row_count == PAGE and table.scroll_y >= PAGE // 2 - 60  # the rows in view stay in view
        table.scroll_home(animate=False)
        await pilot.pause()
        await wheel(pilot, events.MouseScrollUp, 2)
        await wait_until(pilot, lambda: app.offset == 0, "the page before")
    drive(TapApp(str(db)), script)
