"""The Textual application of `mcptap tui`: the sessions and the runs, the frame list (a page at a
time from the live viewer's reads, so a database of millions of frames opens at once), the display
filter, a frame's detail (pretty JSON, its pair, its findings), the findings by code, and following
a recording as it grows. Keys are shown in the footer; the mouse works; with NO_COLOR set nothing
is coloured (the cursor is shown reversed instead). A filter's whole list is found in a thread, so
the screen never waits for it."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Footer, Input, Static

from mcptap.report.livedata import LiveView
from mcptap.store.filterlang import FilterError, parse
from mcptap.store.sessionrefs import handles
from mcptap.tui import lines

PAGE = 200
"""Frames held in the list at once; moving past either end loads the next page."""
POLL_S = 0.5
RUNS_EVERY_S = 3.0
"""While frames are recorded, the runs (their frames counted anew) are read again at most this
often; a new session is shown in its run at once."""


def quoted(text: str) -> str:
    """`text` as a filter's STRING."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Table(DataTable):
    """A DataTable whose Enter (open the row) is shown in the footer."""

    BINDINGS = [Binding("enter", "select_cursor", "Open")]


class FrameList(Table):
    """The frame list: the arrows, like j and k, and the mouse wheel past either end of the page
    load the next one."""

    BINDINGS = [Binding("down", "app.down", show=False), Binding("up", "app.up", show=False)]

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        if not (event.ctrl or event.shift) and self.scroll_y >= self.max_scroll_y:
            self.app.page_on(+1)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        if not (event.ctrl or event.shift) and self.scroll_y <= 0:
            self.app.page_on(-1)


class TapApp(App):
    """`mcptap tui` over one database."""

    TITLE = "mcptap"
    CSS = """
    #status { height: 1; background: $boost; }
    #top { height: 8; }
    #sessions { width: 1fr; }
    #runs { width: 1fr; display: none; }
    #frames { height: 1fr; }
    #findings { height: 1fr; display: none; }
    #detail { height: 45%; border-top: solid $accent; }
    #filter { display: none; }
    #filter.shown { display: block; }
    DataTable:nocolor > .datatable--cursor { text-style: reverse; }
    DataTable:nocolor > .datatable--header { text-style: bold underline; }
    """
    BINDINGS = [
        Binding("j", "down", "Down"), Binding("k", "up", "Up"),
        Binding("enter", "open", "Detail", show=True, priority=False),
        Binding("slash", "filter", "Filter"), Binding("f", "follow", "Follow"),
        Binding("F", "findings", "Findings"), Binding("p", "pair", "Pair"),
        Binding("s", "sessions", "Sessions"), Binding("r", "runs", "Runs"),
        Binding("g", "top", "Top", show=False), Binding("G", "bottom", "Bottom", show=False),
        Binding("escape", "back", "Back"), Binding("q", "quit", "Quit"),
    ]

    def __init__(self, db: str, *, filter: str = "", follow: bool = False):
        # NO_COLOR: Textual's own filter then drops every colour (without ansi_color it only greys them)
        super().__init__(ansi_color=True if os.environ.get("NO_COLOR") else None)
        self.view = LiveView(db)
        self.db, self.filter, self.following = db, filter.strip(), follow
        self.offset, self.rows, self.total, self.counting = 0, [], 0, False
        self.seen = self.view.changes
        self.runs_read = (-1, 0.0)  # (sessions, time.monotonic()) when the runs were last read
        self.runs_read_at = -1  # the database's change they were read at
        self.short: dict[str, str] = {}
        self.finding: str | None = None  # the filter a thread is finding the whole list of, while it does
        self.then: Callable[[], None] | None = None  # what to do once it has
        self.frames = FrameList(id="frames", cursor_type="row", zebra_stripes=True)
        self.sessions = Table(id="sessions", cursor_type="row", zebra_stripes=True)
        self.runs = Table(id="runs", cursor_type="row", zebra_stripes=True)
        self.codes = Table(id="findings", cursor_type="row")
        self.box = Input(placeholder="display filter, e.g. kind == error or finding  (Enter to apply, Esc to close)",
                         id="filter")
        self.body, self.status = Static(id="body"), Static(id="status")

    def compose(self) -> ComposeResult:
        yield self.status
        with Horizontal(id="top"):
            yield self.sessions
            yield self.runs
        yield self.box
        yield self.frames
        yield self.codes
        with VerticalScroll(id="detail"):
            yield self.body
        yield Footer()

    def on_mount(self) -> None:
        self.sessions.add_columns(*lines.SESSION_COLUMNS)
        self.runs.add_columns(*lines.RUN_COLUMNS)
        self.frames.add_columns(*lines.FRAME_COLUMNS)
        self.codes.add_columns("severity", "code", "findings")
        self.box.value = self.filter
        self._load_sessions()
        if self.following:
            self._to_end()
        else:
            self._load(0)
        self.frames.focus()
        self.call_after_refresh(self._load_runs)  # after the first rows are drawn
        self.set_interval(POLL_S, self._poll)

    # --- reading -------------------------------------------------------------------------
    def _load_sessions(self) -> None:
        summary = self.view.summary()
        self.short = handles([s["id"] for s in summary["sessions"]])
        at = self.sessions.cursor_row
        self.sessions.clear()
        for s in summary["sessions"]:
            self.sessions.add_row(*(Text(c) for c in lines.session_cells(s, self.short.get(s["id"]))), key=s["id"])
        self.sessions.move_cursor(row=at)  # where it was, as sessions are only ever added

    def _load_runs(self) -> None:
        from mcptap.report.runview import run_objects

        self.runs_read = (len(self.view.sessions), time.monotonic())
        self.runs_read_at = self.view.changes
        found = run_objects(self.view.conn())
        at = self.runs.cursor_row
        self.runs.clear()
        for r in found:
            self.runs.add_row(*(Text(c) for c in lines.run_cells(r)), key=r["run"])
        self.runs.move_cursor(row=at)
        self.runs.styles.display = "block" if found else "none"

    def _load(self, offset: int, *, cursor: int = 0, at_end: bool = False) -> None:
        if offset > 0 and not self._found(lambda: self._load(offset, cursor=cursor, at_end=at_end)):
            return
        try:
            page = self.view.rows(self.filter, max(0, offset), PAGE)
        except FilterError as exc:
            self._status(f"filter: {exc}")
            return
        self.offset, self.rows, self.total = page["offset"], page["rows"], page["total"]
        self.counting = bool(page.get("counting"))
        self.frames.clear()
        for k, row in enumerate(self.rows):
            sid = self.view.sessions[row["n"]]["id"]
            self.frames.add_row(*(Text(c) for c in lines.frame_cells(row, self.short.get(sid, sid[-8:]))), key=str(k))
        if self.rows:
            self.frames.move_cursor(row=len(self.rows) - 1 if at_end else min(cursor, len(self.rows) - 1))
        else:
            self.body.update(Text("no frame" + (" matches the filter" if self.filter else "")))
        self._status()

    def _found(self, then: Callable[[], None]) -> bool:
        """Whether the list's frames are all found (every frame, or the filter's once found); when
        not, a thread finds them and `then` runs once it has (if the filter is still the same)."""
        if not self.filter or self.view.counted(self.filter) is not None:
            return True
        text = self.filter

        def work() -> None:
            found = False
            try:
                self.view.selection(text)
                found = True
            finally:
                self.call_from_thread(done, found)

        def done(found: bool) -> None:
            after, self.finding, self.then = self.then, None, None
            if not found:  # not tried again on its own: the next key that needs it does
                self._status("the filter's frames could not be read")
            elif self.filter == text and after is not None:
                after()

        self.then = then
        if self.finding != text:
            self.finding = text
            self.run_worker(work, thread=True, group="filter", exit_on_error=False)
        self._status("finding the filter's frames…")
        return False

    def _length(self) -> int:
        """The list's length, its frames all found (see _found)."""
        found = self.view.counted(self.filter) if self.filter else None
        return self.view.total if found is None else len(found)

    def _status(self, note: str = "") -> None:
        at = self.offset + (self.frames.cursor_row if self.rows else 0) + (1 if self.rows else 0)
        total = f"{self.total:,}{'+' if self.counting else ''}"
        parts = [self.db, f"frame {at:,} of {total}", f"filter: {self.filter}" if self.filter else "all frames",
                 "following" if self.following else "", note]
        self.status.update(Text("  │  ".join(p for p in parts if p)))

    def _poll(self) -> None:
        self.view.refresh()
        sessions, at = self.runs_read
        if self.runs_read_at < self.view.changes and (
                sessions != len(self.view.sessions) or time.monotonic() - at >= RUNS_EVERY_S):
            self._load_runs()
        if self.view.changes == self.seen and not self.counting:
            return
        changed, self.seen = self.view.changes != self.seen, self.view.changes
        if changed:
            self._load_sessions()
        if self.following:
            self._to_end()
        else:
            self._load(self.offset, cursor=self.frames.cursor_row)

    def _to_end(self) -> None:
        if self._found(self._to_end):
            self._load(max(0, self._length() - PAGE), at_end=True)

    def _current(self) -> dict | None:
        row = self.frames.cursor_row
        if not self.rows or row is None or row >= len(self.rows):
            return None
        return self.rows[row]

    def _show(self, row: dict) -> None:
        sid = self.view.sessions[row["n"]]["id"]
        frame = self.view.frame(sid, row["seq"])
        pair = self.view.frame(sid, frame["p"]) if frame and frame["p"] else None
        self.body.update(Text(lines.detail(frame, self.short.get(sid, sid[-8:]), pair) if frame else "gone"))

    # --- events and actions ----------------------------------------------------------------
    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table is not self.frames:
            return
        row = self._current()
        if row is not None:
            self._show(row)
        self._status()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        table = event.data_table
        if table is self.sessions:
            self._apply(f"session == {quoted(str(event.row_key.value))}")
        elif table is self.runs:
            self._apply(f"run == {quoted(str(event.row_key.value))}")
        elif table is self.codes:
            code = str(table.get_row(event.row_key)[1])
            self.codes.styles.display, self.frames.styles.display = "none", "block"
            self._apply(f"finding == {quoted(code)}")
        elif table is self.frames:
            self.query_one("#detail", VerticalScroll).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._apply(event.value)

    def _apply(self, text: str) -> None:
        try:
            parse(text.strip()) if text.strip() else None
        except FilterError as exc:  # the list stays as it was, the box open to mend it
            self._status(f"filter: {exc}")
            return
        self.filter = text.strip()
        self.box.value = self.filter
        self.box.remove_class("shown")
        self.following = False
        self._load(0)
        self.frames.focus()

    def _focused_table(self) -> DataTable:
        return self.focused if isinstance(self.focused, DataTable) else self.frames

    def action_down(self) -> None:
        table = self._focused_table()
        if table is self.frames and self.rows and table.cursor_row >= len(self.rows) - 1:
            if self.counting or self.offset + len(self.rows) < self.total:
                here = self.offset + table.cursor_row
                self._load(here - PAGE // 2, cursor=PAGE // 2 + 1)
            return
        table.action_cursor_down()

    def action_up(self) -> None:
        table = self._focused_table()
        if table is self.frames and self.rows and table.cursor_row == 0 and self.offset > 0:
            start = max(0, self.offset - PAGE // 2)
            self._load(start, cursor=self.offset - start - 1)
            return
        table.action_cursor_up()

    def page_on(self, way: int) -> None:
        """Half a page on (+1) or back (-1), the frames in view staying in view (the mouse wheel)."""
        if way > 0 and not (self.counting or self.offset + len(self.rows) < self.total):
            return
        if way < 0 and self.offset == 0:
            return
        start = max(0, self.offset + way * (PAGE // 2))
        moved, top = start - self.offset, self.frames.scroll_y
        self._load(start, cursor=max(0, self.frames.cursor_row - moved))
        self.call_after_refresh(lambda: self.frames.scroll_to(y=max(0, top - moved), animate=False))

    def action_top(self) -> None:
        self._load(0)

    def action_bottom(self) -> None:
        self._to_end()

    def action_open(self) -> None:
        row = self._current()
        if row is not None:
            self._show(row)
            self.query_one("#detail", VerticalScroll).focus()

    def action_pair(self) -> None:
        row = self._current()
        if row is None or not row["p"]:
            return
        if not self._found(self.action_pair):
            return
        sid = self.view.sessions[row["n"]]["id"]
        where = self.view.locate(self.filter, sid, row["p"])
        if where < 0:
            self._status(f"frame {row['p']} is not in this list")
            return
        self._load(where - PAGE // 2, cursor=where - max(0, where - PAGE // 2))

    def action_filter(self) -> None:
        self.box.add_class("shown")
        self.box.focus()

    def action_follow(self) -> None:
        self.following = not self.following
        if self.following:
            self._to_end()
        self._status()

    def action_sessions(self) -> None:
        self.sessions.focus()

    def action_runs(self) -> None:
        if self.runs.row_count:
            self.runs.focus()
        else:
            self._status("no runs: sessions recorded by `mcptap record` or `mcptap proxy` form runs")

    def action_findings(self) -> None:
        if self.codes.styles.display == "block":
            self.codes.styles.display, self.frames.styles.display = "none", "block"
            self.frames.focus()
            return
        from mcptap.store import viewpages

        self.codes.clear()
        order = {"error": 0, "warning": 1, "info": 2}
        found = sorted(viewpages.findings_by_code(self.view.conn()), key=lambda got: (order.get(got[0], 3), -got[2], got[1]))
        for severity, code, count in found:
            self.codes.add_row(Text(severity), Text(lines.safe(code)), Text(f"{count:,}"))
        self.codes.styles.display, self.frames.styles.display = "block", "none"
        self.codes.focus()

    def action_back(self) -> None:
        if self.box.has_class("shown"):
            self.box.remove_class("shown")
        elif self.codes.styles.display == "block":
            self.action_findings()
        self.frames.focus()
