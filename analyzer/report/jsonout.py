"""The machine-readable form every command shares (`--format json` and `--format jsonl`):
numbers as numbers, `null` for what is not known, each time twice (Unix seconds under the
database's own name, `started_at` or `ts`, and ISO 8601 UTC text beside it, `started` or
`time`), durations in seconds. A `json` document is written as it goes, one list item per line,
so that a list of 200,000 findings is never held whole as text; `jsonl` is one object per line."""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterable
from typing import IO, Any

import orjson

from mcptap.wire.textsafe import json_text

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def iso(ts: float | None) -> str | None:
    """`2025-11-30T10:00:00.010000Z` for Unix seconds; None for None or a time no calendar holds."""
    if ts is None:
        return None
    try:
        return (EPOCH + dt.timedelta(seconds=ts)).isoformat(timespec="microseconds").replace("+00:00", "Z")
    except (OverflowError, ValueError, TypeError):
        return None


class Raw:
    """JSON text put in a document as it is: a value exactly as the wire wrote it (`1.0`,
    `1e400`, a 30-digit id), which a parse and a new dump could change."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


def _fragment(obj: Any) -> Any:
    if isinstance(obj, Raw):
        return orjson.Fragment(obj.text)
    raise TypeError(f"{type(obj).__name__} is not JSON")


def seconds(value: float | None) -> float | None:
    """A duration in seconds to the microsecond (what clocks of Unix seconds in a double hold;
    the digits past it are noise of the subtraction); None stays None."""
    if value is None or not math.isfinite(value):
        return None
    return round(value, 6)


def dumps(obj: Any) -> str:
    """One compact JSON text. orjson (C speed) where it can; what it refuses (a lone surrogate
    from a hostile log, an integer past 64 bits) goes through the json module, escaped to ASCII
    so it can be written to any stream, with non-finite numbers as null as orjson gives them.
    A character a terminal would act on or hide (a control, a bidi override) is written as its
    JSON escape (textsafe.json_text): the same value, safe to print."""
    try:
        return json_text(orjson.dumps(obj, default=_fragment).decode())
    except TypeError:
        return json_text(json.dumps(_finite(obj), ensure_ascii=True, separators=(",", ":")))


def _finite(obj: Any) -> Any:
    if isinstance(obj, Raw):
        try:
            return json.loads(obj.text)
        except (ValueError, RecursionError):
            return obj.text
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


class Stream:
    """A member of a document whose items are written one per line as they come."""

    def __init__(self, items: Iterable):
        self.items = items


def write_document(out: IO[str], members: Iterable[tuple[str, Any]]) -> None:
    """A JSON object, member by member in the order given; a Stream member (or a list) as an
    array with one item per line."""
    out.write("{")
    for n, (key, value) in enumerate(members):
        out.write(("," if n else "") + "\n  " + dumps(key) + ": ")
        if isinstance(value, (Stream, list)):
            _write_array(out, value.items if isinstance(value, Stream) else value)
        else:
            out.write(dumps(value))
    out.write("\n}\n")


def _write_array(out: IO[str], items: Iterable) -> None:
    first = True
    for item in items:
        out.write(("[\n    " if first else ",\n    ") + dumps(item))
        first = False
    out.write("[]" if first else "\n  ]")


def write_lines(out: IO[str], items: Iterable) -> None:
    """JSON Lines: one compact object per line."""
    for item in items:
        out.write(dumps(item) + "\n")


def _stored_json(text: str | None, kind: type):
    """A cell stored as JSON text (a command line's array, a client's object) as its value when it
    is one of `kind`; else the text as it is."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        return text
    return value if isinstance(value, kind) else text


def _client(text: str | None):
    """The recorded client (stored as a JSON object)."""
    return _stored_json(text, dict)


def _command(text: str | None):
    """The recorded command line as a list (stored as a JSON array); the text if it is not one."""
    return _stored_json(text, list)


def session_object(s: dict, analysis: dict | None) -> dict:
    """SESSION, the one JSON object of a session in every command (`sessions`, `show`, `analyze`;
    docs/contract.md): its row with typed values, the times twice (Unix seconds, ISO 8601), its
    duration in seconds (to its end, or while it has none to its last frame), its frame counts,
    and what the analysis said (`analysis`: analyzed_at, revision, revision_source, kinds, errors,
    warnings, infos; null until one ran)."""
    end = s["ended_at"] if s["ended_at"] is not None else s["last_ts"]
    start = s["started_at"]
    a = analysis or {}
    return {
        "id": s["id"], "label": s["label"], "transport": s["transport"],
        "started_at": start, "started": iso(start),
        "ended_at": s["ended_at"], "ended": iso(s["ended_at"]),
        "duration_s": None if end is None or start is None else seconds(max(end - start, 0.0)),
        "frames": s["c2s"] + s["s2c"], "c2s": s["c2s"], "s2c": s["s2c"],
        "exit_status": s["exit_status"], "command": _command(s.get("command")), "upstream": s.get("upstream"),
        "source": s.get("source"), "replay_of": s.get("replay_of"), "recorder": s.get("recorder"),
        "host": s.get("host"), "pid": s.get("pid"), "run": s.get("run"), "client": _client(s.get("client")),
        "telemetry": _stored_json(s.get("telemetry"), dict),
        "analyzed_at": a.get("analyzed_at"), "analyzed": iso(a.get("analyzed_at")),
        "revision": a.get("revision"), "revision_source": a.get("revision_source"), "kinds": a.get("kinds"),
        "errors": a.get("errors"), "warnings": a.get("warnings"), "infos": a.get("infos"),
    }


def analysis_fields(summary: dict, analyzed_at: float) -> dict:
    """An analysis summary (the engine's: revision, revision_source, kinds, findings by severity)
    as SESSION's analysis members."""
    counts = summary.get("findings") or {}
    return {"revision": summary.get("revision"), "revision_source": summary.get("revision_source"),
            "kinds": summary.get("kinds"), "errors": counts.get("error", 0), "warnings": counts.get("warning", 0),
            "infos": counts.get("info", 0), "analyzed_at": analyzed_at}
