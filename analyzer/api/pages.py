"""The library's call that writes the HTML report: one self-contained viewer file."""

from __future__ import annotations

from collections.abc import Sequence

from mcptap.api.meters import Meter, _quiet


def report_html(db: str, output: str, *, sessions: Sequence[str] | None = None, run: str | None = None,
                max_frames: int = 200_000, meter: Meter | None = None) -> None:
    """The HTML report (`mcptap report`: the sessions, the frames with a display filter, the
    sequence diagram, latency; `-`: stdout), the database analysed first if it has not been; at
    most `max_frames` frames in the page (past it those near each finding and each session's
    ends); `run`: one run's sessions, the page opening on its timeline (a lane per server;
    RunNotFound). Needs `mcptap[notebook]` (MissingExtra)."""
    from mcptap import extras

    extras.need("notebook", "mcptap report")
    from mcptap.report import html

    with (meter or _quiet)() as shown:
        html.write(db, output, sessions=list(sessions) if sessions else None, run=run, progress=shown.advance,
                   stage=shown.stage, max_frames=max_frames)
