"""The Textual application of `mcptap tui`: the sessions, the frame list (a page at a time from
the live viewer's reads, so a database of millions of frames opens at once), the display filter,
a frame's detail (pretty JSON, its pair, its findings), the findings by code, and following a
recording as it grows. Keys are shown in the footer; the mouse works; NO_COLOR is honoured by
Textual itself."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Input, Static

from mcptap.report.livedata import LiveView
from mcptap.store.filterlang import FilterError
from mcptap.store.sessionrefs import handles
from mcptap.tui import lines

PAGE = 200
"""Frames held in the list at once; moving past either end loads the next page."""
POLL_S = 0.5


class TapApp(App):
    """`mcptap tui` over one database."""

    TITLE = "mcptap"
    CSS = """
    #status { height: 1; background: $boost; }
    #sessions { height: 7; }
    #frames { height: 1fr; }
    #findings { height: 1fr; display: none; }
    #detail { height: 45%; border-top: solid $accent; }
    #filter { display: none; }
    #filter.shown { display: block; }
    """
    BINDINGS = [
        Binding("j", "down", "Down"), Binding("k", "up", "Up"),
        Binding("enter", "open", "Detail", show=True, priority=False),
        Binding("slash", "filter", "Filter"), Binding("f", "follow", "Follow"),
        Binding("F", "findings", "Findings"), Binding("p", "pair", "Pair"),
        Binding("g", "top", "Top", show=False), Binding("G", "bottom", "Bottom", show=False),
        Binding("escape", "back", "Back"), Binding("q", "quit", "Quit"),
    ]

    def __init__(self, db: str, *, filter: str = "", follow: bool = False):
        super().__init__()
        self.view = LiveView(db)
        self.db, self.filter, self.following = db, filter.strip(), follow
        self.offset, self.rows, self.total, self.counting = 0, [], 0, False
        self.seen = self.view.changes
        self.short: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        yield DataTable(id="sessions", cursor_type="row", zebra_stripes=True)
        yield Input(placeholder="display filter, e.g. kind == error or finding  (Enter to apply, Esc to close)",
                    id="filter")
        yield DataTable(id="frames", cursor_type="row", zebra_stripes=True)
        yield DataTable(id="findings", cursor_type="row")
        with VerticalScroll(id="detail"):
            yield Static(id="body")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#sessions", DataTable).add_columns(*lines.SESSION_COLUMNS)
        self.query_one("#frames", DataTable).add_columns(*lines.FRAME_COLUMNS)
        self.query_one("#findings", DataTable).add_columns("severity", "code", "findings")
        self.query_one("#filter", Input).value = self.filter
        self._load_sessions()
        if self.following:
            self._load(max(0, self.view.total - PAGE), at_end=True)
        else:
            self._load(0)
        self.query_one("#frames", DataTable).focus()
        self.set_interval(POLL_S, self._poll)

    # --- reading -------------------------------------------------------------------------
    def _load_sessions(self) -> None:
        summary = self.view.summary()
        self.short = handles([s["id"] for s in summary["sessions"]])
        table = self.query_one("#sessions", DataTable)
        table.clear()
        for s in summary["sessions"]:
            table.add_row(*(Text(c) for c in lines.session_cells(s, self.short.get(s["id"]))), key=s["id"])

    def _load(self, offset: int, *, cursor: int = 0, at_end: bool = False) -> None:
        try:
            page = self.view.rows(self.filter, max(0, offset), PAGE)
        except FilterError as exc:
            self._say(f"filter: {exc}")
            return
        self.offset, self.rows, self.total = page["offset"], page["rows"], page["total"]
        self.counting = bool(page.get("counting"))
        table = self.query_one("#frames", DataTable)
        table.clear()
        for k, row in enumerate(self.rows):
            sid = self.view.sessions[row["n"]]["id"]
            table.add_row(*(Text(c) for c in lines.frame_cells(row, self.short.get(sid, sid[-8:]))), key=str(k))
        if self.rows:
            table.move_cursor(row=len(self.rows) - 1 if at_end else min(cursor, len(self.rows) - 1))
        else:
            self.query_one("#body", Static).update(Text("no frame" + (" matches the filter" if self.filter else "")))
        self._status()

    def _status(self, note: str = "") -> None:
        table = self.query_one("#frames", DataTable)
        at = self.offset + (table.cursor_row if self.rows else 0) + (1 if self.rows else 0)
        total = f"{self.total:,}{'+' if self.counting else ''}"
        parts = [self.db, f"frame {at:,} of {total}", f"filter: {self.filter}" if self.filter else "all frames",
                 "following" if self.following else "", note]
        self.query_one("#status", Static).update(Text("  │  ".join(p for p in parts if p)))

    def _say(self, note: str) -> None:
        self._status(note)

    def _poll(self) -> None:
        self.view.refresh()
        if self.view.changes == self.seen and not self.counting:
            return
        self.seen = self.view.changes
        self._load_sessions()
        table = self.query_one("#frames", DataTable)
        if self.following:
            total = self.view.rows(self.filter, 0, 1)["total"] if self.filter else self.view.total
            self._load(max(0, total - PAGE), at_end=True)
        else:
            self._load(self.offset, cursor=table.cursor_row)

    def _current(self) -> dict | None:
        table = self.query_one("#frames", DataTable)
        if not self.rows or table.cursor_row is None or table.cursor_row >= len(self.rows):
            return None
        return self.rows[table.cursor_row]

    def _show(self, row: dict) -> None:
        sid = self.view.sessions[row["n"]]["id"]
        frame = self.view.frame(sid, row["seq"])
        body = lines.detail(frame, self.short.get(sid, sid[-8:])) if frame else "gone"
        self.query_one("#body", Static).update(Text(body))

    # --- events and actions ----------------------------------------------------------------
    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id != "frames":
            return
        row = self._current()
        if row is not None:
            self._show(row)
        self._status()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "sessions":
            self._apply(f'session == "{event.row_key.value}"')
        elif event.data_table.id == "findings":
            code = str(event.data_table.get_row(event.row_key)[1])
            self.query_one("#findings", DataTable).styles.display = "none"
            self.query_one("#frames", DataTable).styles.display = "block"
            self._apply(f'finding == "{code}"')
        elif event.data_table.id == "frames":
            self.query_one("#detail", VerticalScroll).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._apply(event.value)

    def _apply(self, text: str) -> None:
        self.filter = text.strip()
        self.query_one("#filter", Input).value = self.filter
        self.query_one("#filter", Input).remove_class("shown")
        self.following = False
        self._load(0)
        self.query_one("#frames", DataTable).focus()

    def action_down(self) -> None:
        table = self.focused if isinstance(self.focused, DataTable) else self.query_one("#frames", DataTable)
        if table.id == "frames" and self.rows and table.cursor_row >= len(self.rows) - 1:
            if self.offset + len(self.rows) < self.total:
                here = self.offset + table.cursor_row
                self._load(here - PAGE // 2, cursor=PAGE // 2 + 1)
            return
        table.action_cursor_down()

    def action_up(self) -> None:
        table = self.focused if isinstance(self.focused, DataTable) else self.query_one("#frames", DataTable)
        if table.id == "frames" and self.rows and table.cursor_row == 0 and self.offset > 0:
            start = max(0, self.offset - PAGE // 2)
            self._load(start, cursor=self.offset - start - 1)
            return
        table.action_cursor_up()

    def action_top(self) -> None:
        self._load(0)

    def action_bottom(self) -> None:
        self._load(max(0, self.total - PAGE), at_end=True)

    def action_open(self) -> None:
        row = self._current()
        if row is not None:
            self._show(row)
            self.query_one("#detail", VerticalScroll).focus()

    def action_pair(self) -> None:
        row = self._current()
        if row is None or not row["p"]:
            return
        sid = self.view.sessions[row["n"]]["id"]
        where = self.view.locate(self.filter, sid, row["p"])
        if where < 0:
            self._say(f"frame {row['p']} is not in this list")
            return
        self._load(where - PAGE // 2, cursor=where - max(0, where - PAGE // 2))

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.add_class("shown")
        box.focus()

    def action_follow(self) -> None:
        self.following = not self.following
        if self.following:
            self.action_bottom()
        self._status()

    def action_findings(self) -> None:
        table = self.query_one("#findings", DataTable)
        frames = self.query_one("#frames", DataTable)
        if table.styles.display == "block":
            table.styles.display, frames.styles.display = "none", "block"
            frames.focus()
            return
        table.clear()
        order = {"error": 0, "warning": 1, "info": 2}
        found = sorted(self.view_findings(), key=lambda got: (order.get(got[0], 3), -got[2], got[1]))
        for severity, code, count in found:
            table.add_row(Text(severity), Text(lines.safe(code)), Text(f"{count:,}"))
        table.styles.display, frames.styles.display = "block", "none"
        table.focus()

    def view_findings(self) -> list[tuple[str, str, int]]:
        from mcptap.store import viewpages

        return viewpages.findings_by_code(self.view.conn())

    def action_back(self) -> None:
        box = self.query_one("#filter", Input)
        if box.has_class("shown"):
            box.remove_class("shown")
        elif self.query_one("#findings", DataTable).styles.display == "block":
            self.action_findings()
        self.query_one("#frames", DataTable).focus()
