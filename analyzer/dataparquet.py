"""The pandas API over a Parquet dataset (store/dataset.py) instead of a SQLite file: the same
calls (`mcptap.data.sessions`, `frames`, `messages`, `findings`, `exchanges`) and filters
(session, time range, severity, code, columns) pushed down to pyarrow's dataset scanner, so a
notebook runs on either. Display filters (`filter=`) read a SQLite database."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from mcptap import store
from mcptap.store import dataset


def is_dataset(db) -> bool:
    """A folder holding an mcptap dataset's marker."""
    try:
        return (Path(db) / dataset.MARKER).is_file()
    except TypeError:
        return False


def _ids(root, session: str | Sequence[str] | None) -> list[str] | None:
    """Sessions asked for (ids, unique id prefixes or labels), as ids; None: all."""
    return store.resolve_sessions(root, session)


def _seconds(when) -> float | None:
    if when is None:
        return None
    stamp = pd.Timestamp(when)
    if stamp.tzinfo is None:
        stamp = stamp.tz_localize("UTC")
    return stamp.timestamp()


def _pandas(table) -> pd.DataFrame:
    """Integers stay integers where some are missing (Int64), as the SQLite reads give them."""
    import pyarrow as pa

    return table.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)


def _frame(table, columns: Sequence[str], categorical: Iterable[str] = ()) -> pd.DataFrame:
    frame = _pandas(table)
    for column in ("ts", "started_at", "ended_at"):
        if column in frame:
            frame[column] = pd.to_datetime(frame[column], unit="s", utc=True)
    for column in categorical:
        if column in frame:
            frame[column] = frame[column].astype("category")
    return frame[list(columns)].reset_index(drop=True)


def _times(root, ids: list[str] | None):
    """(session_id, seq, ts, direction) of the frames, to place the derived rows in time."""
    return dataset.read(root, "frames", ids, columns=["session_id", "seq", "ts", "direction"])


def _between(frame: pd.DataFrame, start, end, column: str = "ts") -> pd.DataFrame:
    lo, hi = _seconds(start), _seconds(end)
    if lo is not None:
        frame = frame[frame[column] >= pd.Timestamp(lo, unit="s", tz="UTC")]
    if hi is not None:
        frame = frame[frame[column] < pd.Timestamp(hi, unit="s", tz="UTC")]
    return frame.reset_index(drop=True)


def sessions(root) -> pd.DataFrame:
    root = dataset.check(root)
    table = _pandas(dataset.read(root, "sessions").drop_columns(["day"]))
    counts = {s["id"]: s["frames"] for s in dataset.sessions(root)}
    table["frames"] = table["id"].map(counts).astype("Int64")
    times = dataset.read(root, "frames", columns=["session_id", "ts"]).group_by("session_id").aggregate([("ts", "max")])
    last = dict(zip(times.column("session_id").to_pylist(), times.column("ts_max").to_pylist()))
    end = table["ended_at"].where(table["ended_at"].notna(), table["id"].map(last))
    table["duration_s"] = (end - table["started_at"]).astype("float64")
    analysed = _pandas(dataset.read(root, "analyses", columns=["session_id", "revision", "revision_source", "errors",
                                                                "warnings", "infos"]))
    table = table.merge(analysed.rename(columns={"session_id": "id"}), on="id", how="left")
    for column in ("started_at", "ended_at"):
        table[column] = pd.to_datetime(table[column], unit="s", utc=True)
    table["transport"] = table["transport"].astype("category")
    return table.sort_values(["started_at", "id"]).reset_index(drop=True)


def frames(root, columns: list[str], *, session=None, start=None, end=None) -> pd.DataFrame:
    root = dataset.check(root)
    table = dataset.read(root, "frames", _ids(root, session))
    frame = _frame(table, list(dict.fromkeys([*columns, "ts"])), ("session_id", "direction"))
    if "incomplete" in frame:
        frame["incomplete"] = frame["incomplete"].astype(bool)
    return _between(frame, start, end).sort_values(["session_id", "seq"] if "seq" in frame else [])[columns] \
        .reset_index(drop=True)


def messages(root, columns: list[str], *, session=None, start=None, end=None) -> pd.DataFrame:
    root = dataset.check(root)
    ids = _ids(root, session)
    rows = dataset.read(root, "messages", ids).drop_columns(["day"])
    times = _times(root, ids).select(["session_id", "seq", "ts"]).rename_columns(["session_id", "frame_seq", "ts"])
    joined = rows.join(times, keys=["session_id", "frame_seq"], join_type="left outer")
    frame = _frame(joined, [c for c in columns if c != "tool_error"] + ["ts"], ("session_id", "direction", "kind",
                                                                             "method"))
    frame = _between(frame, start, end).sort_values(["session_id", "frame_seq", "idx"], na_position="first")
    return frame[[c for c in columns if c != "tool_error"]].reset_index(drop=True)


def findings(root, columns: list[str], *, session=None, start=None, end=None, severity=None,
             code=None) -> pd.DataFrame:
    root = dataset.check(root)
    ids = _ids(root, session)
    rows = dataset.read(root, "findings", ids).drop_columns(["day"])
    times = _times(root, ids).select(["session_id", "seq", "ts"]).rename_columns(["session_id", "frame_seq", "ts"])
    joined = rows.join(times, keys=["session_id", "frame_seq"], join_type="left outer")
    frame = _frame(joined, columns, ("session_id", "code", "severity"))
    for column, wanted in (("severity", severity), ("code", code)):
        if wanted is not None:
            frame = frame[frame[column].isin([wanted] if isinstance(wanted, str) else list(wanted))]
    return _between(frame, start, end).sort_values(["session_id", "frame_seq"], na_position="first") \
        .reset_index(drop=True)


def exchanges(root, *, session=None, start=None, end=None) -> pd.DataFrame:
    root = dataset.check(root)
    frame = _pandas(dataset.read(root, "exchanges", _ids(root, session)).drop_columns(["day"]))
    for column in ("started_at", "request_end", "response_at", "ended_at"):
        frame[column] = pd.to_datetime(frame[column], unit="s", utc=True)
    return _between(frame, start, end, "started_at").sort_values(["session_id", "started_at"]).reset_index(drop=True)
