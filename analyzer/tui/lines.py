"""What `mcptap tui` shows, as plain text cells: a session's row, a run's row, a frame's row, a
frame's detail (its JSON pretty-printed, its pair, its findings). Every text from the traffic goes through
`printable` (control, bidi and invisible characters as escapes) before Textual sees it, and is
marked up as plain text only (never as Rich markup)."""

from __future__ import annotations

import json

from mcptap.wire.textsafe import printable

SESSION_COLUMNS = ("session", "label", "transport", "frames", "errors", "warnings", "state")
RUN_COLUMNS = ("run", "started", "sessions", "frames", "errors", "warnings", "host", "servers")
FRAME_COLUMNS = ("#", "session", "time", "dir", "kind", "method", "id", "latency", "findings")
ARROWS = {0: "→", 1: "←"}  # c2s, s2c
DETAIL_CHARS = 200_000


def safe(value) -> str:
    return "" if value is None else printable(str(value))


def session_cells(s: dict, handle: str | None) -> tuple[str, ...]:
    """One row of the session list (a session of LiveView.summary): `recording` until it has ended."""
    return (safe(handle or s["id"][-8:]), safe(s.get("label")), safe(s.get("transport")), f"{s.get('frames') or 0:,}",
            "" if s.get("errors") is None else str(s["errors"]), "" if s.get("warnings") is None else str(s["warnings"]),
            "recording" if s.get("ended_at") is None else "ended")


def run_cells(r: dict) -> tuple[str, ...]:
    """One row of the run list (a run of analyzer/report/runview.py `run_objects`)."""
    return (safe(r.get("handle") or r["run"]), safe((r.get("started") or "")[:19].replace("T", " ")),
            str(r.get("sessions") or 0), f"{r.get('frames') or 0:,}",
            "" if r.get("errors") is None else str(r["errors"]), "" if r.get("warnings") is None else str(r["warnings"]),
            safe(r.get("host")), safe(", ".join(map(str, r.get("servers") or []))))


def latency(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"


def frame_cells(row: dict, handle: str) -> tuple[str, ...]:
    """One row of the frame list (a row of LiveView.rows)."""
    severities = {severity for _, _, _, _, severity, _, _ in row.get("f") or []}
    findings = row.get("f") or []
    worst = next((sev for sev in ("error", "warning", "info") if sev in severities), "")
    shown = f"{len(findings)} {worst}" if findings else ""
    return (str(row["seq"]), safe(handle), f"{row['t']:.3f}", ARROWS.get(row["d"], "?"), safe(row["k"]),
            safe(row["m"]), safe(row["id"]), latency(row.get("l")), shown)


def pretty(raw: str | None) -> str:
    """A frame's bytes as text: its JSON indented when it parses, else as it is; escaped."""
    if raw is None:
        return ""
    text = raw[:DETAIL_CHARS]
    try:
        text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        pass
    return "\n".join(printable(line) for line in text.split("\n"))


def detail(frame: dict, handle: str, pair: dict | None = None) -> str:
    """The detail pane's text of a frame (LiveView.frame's dict), and below it its pair's JSON."""
    head = [f"session {safe(handle)}  frame {frame['seq']}  {ARROWS.get(frame['d'], '?')} "
            f"{'client → server' if frame['d'] == 0 else 'server → client'}  {frame['z']:,} bytes  t={frame['t']:.6f} s"]
    what = " ".join(part for part in (safe(frame["k"]), safe(frame["m"]), f"id {safe(frame['id'])}" if frame["id"] else "") if part)
    if what:
        head.append(what)
    if frame.get("p"):
        head.append(f"pair: frame {frame['p']} ({safe(frame.get('pk'))}), latency {latency(frame.get('l'))}  "
                    "[p: go to it]")
    for _, _, _, code, severity, message, related in frame.get("f") or []:
        head.append(f"{severity}: {safe(code)}: {safe(message)}" + (f" (frame {related})" if related else ""))
    if frame.get("x"):
        x = frame["x"]
        head.append(safe(f"HTTP {x.get('method', '')} {x.get('url', '')} → {x.get('status', '')}"))
    body = pretty(frame.get("raw"))
    if frame.get("cut"):
        body += "\n… [cut]"
    if pair is not None:
        body += (f"\n\n── its pair: frame {pair['seq']} ({safe(pair['k'])}) "
                 f"{ARROWS.get(pair['d'], '?')} ──\n" + pretty(pair.get("raw")) + ("\n… [cut]" if pair.get("cut") else ""))
    return "\n".join(head) + "\n\n" + body
