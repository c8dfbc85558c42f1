"""`mcptap tui` driven by Textual's headless pilot over real databases (the list, the filter, the
detail, the pair, the findings, following a recording another process writes), and once in a real
pseudo-terminal."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import select
import subprocess
import time

import pytest

from tests.conftest import PROCESS_TIMEOUT_S, mcptap, run
from tests.support.sessions import handshake, ok, req, write_log

textual = pytest.importorskip("textual")

from textual.widgets import DataTable, Input, Static  # noqa: E402

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
        for _ in range(PAGE + 5):
            await pilot.press("j")
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
        await typed(pilot, 'method == "tools/call" and kind == request')
        await pilot.press("enter")
        table = app.query_one("#frames", DataTable)
        assert table.row_count == 1 and app.filter.startswith("method ==")
        await pilot.press("enter")
        shown = body(app)
        assert '"name": "echo"' in shown and "pair: frame" in shown
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


def test_in_a_real_terminal_it_draws_and_quits_on_q(db):
    pid, fd = pty.fork()
    if pid == 0:  # the child: mcptap tui in the pseudo-terminal
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        env.update(TERM="xterm-256color", NO_COLOR="1")
        os.execvpe(mcptap()[0], [*mcptap("tui", "--db", str(db))], env)
    seen = b""
    deadline = time.monotonic() + PROCESS_TIMEOUT_S
    try:
        while b"notifications/initialized" not in seen:
            assert time.monotonic() < deadline, seen[-2000:]
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    seen += os.read(fd, 65536)
                except OSError:
                    break
        assert b"notifications/initialized" in seen
        os.write(fd, b"q")
        while time.monotonic() < deadline:
            finished, status = os.waitpid(pid, os.WNOHANG)
            if finished:
                assert os.waitstatus_to_exitcode(status) == 0
                break
            try:
                select.select([fd], [], [], 0.1) and os.read(fd, 65536)
            except OSError:  # the terminal's other end closed: the process is ending
                pass
        else:
            raise AssertionError("mcptap tui did not quit on q")
    finally:
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(fd)


def test_without_the_extra_or_with_a_bad_filter_one_line(db):
    done = subprocess.run(mcptap("tui", "--db", str(db), "--filter", "kind =="), capture_output=True,
                          timeout=PROCESS_TIMEOUT_S)
    assert done.returncode == 2 and done.stderr.decode().count("\n") == 1 and b"Traceback" not in done.stderr
