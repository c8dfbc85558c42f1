"""A Parquet dataset of recorded sessions (docs/contract.md, Parquet datasets): DIR/_mcptap.json
(the format and its version), then DIR/<table>/day=YYYY-MM-DD/part-<uuid>.parquet, Hive-partitioned
by the UTC day each session started; the tables and columns of store/tablecopy.py. Written from
SQLite files and by the fleet engines; a session written again replaces its rows (the new part
is in place before the old rows go, so a crash leaves duplicates a rerun removes, never a loss).
One writer at a time (a lock file). Needs pyarrow (mcptap[parquet])."""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from mcptap.errors import MCPTapError
from mcptap.outfile import NO_OPTIONS, WriteOptions
from mcptap.store import tablecopy
from mcptap.store.connections import open_existing
from mcptap.wire.textsafe import printable

FORMAT = "mcptap-parquet"
VERSION = 1
MARKER = "_mcptap.json"
LOCK = "_mcptap.lock"
DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")


class DatasetError(MCPTapError):
    """Not a dataset mcptap can read or write (named in one line)."""


def day_of(started_at: float) -> str:
    return datetime.datetime.fromtimestamp(started_at, datetime.timezone.utc).strftime("%Y-%m-%d")


def check(path: str | os.PathLike, *, create: bool = False) -> Path:
    """The dataset's folder, its marker checked (made, for a new or empty folder, when `create`)."""
    root = Path(path)
    marker = root / MARKER
    if create and (not root.exists() or (root.is_dir() and not any(root.iterdir()))):
        root.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({"format": FORMAT, "version": VERSION}) + "\n", encoding="utf-8")
    if not root.is_dir():
        raise DatasetError(f"{root} is not a folder (a Parquet dataset is a folder mcptap export --format parquet made)")
    try:
        info = json.loads(marker.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(f"{root} is not an mcptap dataset (no {MARKER}; make one with "
                           f"mcptap export --format parquet -o {root})") from None
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{marker} cannot be read: {exc}") from None
    if not isinstance(info, dict) or info.get("format") != FORMAT or not isinstance(info.get("version"), int):
        raise DatasetError(f"{marker} does not describe an mcptap dataset")
    if info["version"] > VERSION:
        raise DatasetError(f"{root} was written by a newer mcptap (dataset version {info['version']}; "
                           f"this one reads up to {VERSION}): upgrade mcptap")
    return root


def held(root: str | os.PathLike, *names: str) -> Path:
    """`root`/`names` resolved (symbolic links followed), refused unless it is inside `root`:
    every path made from what a dataset holds (a partition's day) goes through here before
    anything is read, written or removed there."""
    base = Path(root).resolve()
    path = base.joinpath(*names).resolve()
    if path != base and base not in path.parents:
        shown = printable("/".join(names))
        raise DatasetError(f"{root} is damaged: {shown} leads outside the dataset; nothing was written")
    return path


def partition(root: str | os.PathLike, table: str, day) -> Path:
    """The folder of (table, day), held inside the dataset; a day that is not YYYY-MM-DD (a
    partition name decoded to `../..`, say) is refused."""
    if not isinstance(day, str) or not DAY.match(day):
        raise DatasetError(f"{root} is damaged: a partition of {table} is named "
                           f"day={printable(repr(day))[:80]}, not a day (YYYY-MM-DD); nothing was written")
    return held(root, table, f"day={day}")


@contextlib.contextmanager
def locked(root: Path):
    """The dataset to one writer at a time."""
    with open(root / LOCK, "a", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _parts(root: Path, table: str, day: str) -> list[Path]:
    found = partition(root, table, day).glob("part-*.parquet")
    return sorted(p for p in found if p.is_file() and held(root, table, f"day={day}", p.name))


class PartWriter:
    """One new part of (table, day), written under a hidden name and put in place by `commit`."""

    def __init__(self, root: Path, table: str, day: str):
        import pyarrow.parquet as pq

        folder = partition(root, table, day)
        folder.mkdir(parents=True, exist_ok=True)
        self.final = folder / f"part-{uuid.uuid4().hex}.parquet"
        self.temp = folder / f".{self.final.name}.tmp"
        self.rows = 0
        self.writer = pq.ParquetWriter(self.temp, tablecopy.arrow_schema(table), compression="zstd")

    def write(self, batch) -> None:
        if batch.num_rows:
            self.writer.write_batch(batch)
            self.rows += batch.num_rows

    def commit(self) -> Path | None:
        """The part in place (None, and nothing left, when it got no row)."""
        self.writer.close()
        if not self.rows:
            self.temp.unlink()
            return None
        os.replace(self.temp, self.final)
        return self.final

    def abandon(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()
        with contextlib.suppress(OSError):
            self.temp.unlink()


def drop_sessions(root: Path, table: str, day: str, session_ids: Iterable[str], keep: Sequence[Path] = ()) -> None:
    """The rows of these sessions gone from the parts of (table, day) other than `keep`: a part
    holding any is written again without them (or removed, when nothing else is left)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    key = "id" if table == "sessions" else "session_id"
    gone = sorted(set(session_ids))
    for part in _parts(Path(root), table, day):
        if part in keep:
            continue
        try:
            present = pq.read_table(part, columns=[key]).column(key)
            hit = pc.is_in(present, value_set=strings(gone))
            if not pc.any(hit).as_py():
                continue
            rest = pq.read_table(part).filter(pc.invert(hit))
        except (pa.ArrowException, OSError) as exc:
            raise DatasetError(f"{root} is damaged: {part.name} of {table} cannot be read ({unreadable(exc)})") from None
        if rest.num_rows == 0:
            part.unlink()
            continue
        temp = part.with_name(f".{part.name}.tmp")
        pq.write_table(rest, temp, compression="zstd")
        os.replace(temp, part)


def strings(values: Sequence[str]):
    import pyarrow as pa

    return pa.array(values, type=pa.string())


def write_sessions(root: Path, tables: Sequence[str], days: dict[str, list[str]],
                   batches: Callable[[str, str], Iterable]) -> int:
    """For each day's sessions and each table, a new part of their rows (`batches(table, session)`),
    then their rows gone from older parts. Rows written, in all."""
    written = 0
    for day, ids in sorted(days.items()):
        for table in tables:
            part = PartWriter(root, table, day)
            try:
                for sid in ids:
                    for batch in batches(table, sid):
                        part.write(batch)
                placed = part.commit()
            except BaseException:
                part.abandon()
                raise
            written += part.rows
            drop_sessions(root, table, day, ids, keep=[placed] if placed else [])
    return written


def export_database(db_path: str, out: str | os.PathLike, options: WriteOptions = NO_OPTIONS) -> list[str]:
    """The sessions of one SQLite file (all, or those `options.sessions` names) into the dataset
    at `out`, made if new: every recorded table and, where the database holds them, the analysis's.
    Their ids, in start order."""
    progress = options.progress
    root = check(out, create=True)
    conn = open_existing(db_path)
    try:
        ids = tablecopy.session_ids_of(conn, list(options.sessions) or None)
        starts = tablecopy.session_starts(conn, ids)
        days: dict[str, list[str]] = {}
        for sid in ids:
            days.setdefault(day_of(starts[sid]), []).append(sid)

        def batches(table: str, sid: str):
            for batch in tablecopy.session_batches(conn, table, sid):
                if progress is not None and table == "frames":
                    progress(batch.num_rows)
                yield batch

        with locked(root):
            write_sessions(root, tablecopy.RECORDED + tablecopy.DERIVED, days, batches)
    finally:
        conn.close()
    return ids


def read(root: Path, table: str, session_ids: Sequence[str] | None = None, columns: Sequence[str] | None = None):
    """A table's rows (of these sessions) as one Arrow table of tablecopy's schema plus `day`."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    schema = tablecopy.arrow_schema(table).append(pa.field("day", pa.string()))
    if not (root / table).is_dir():
        return schema.empty_table() if columns is None else schema.empty_table().select(list(columns))
    key = "id" if table == "sessions" else "session_id"
    where = None if session_ids is None else ds.field(key).isin(list(session_ids))
    try:
        data = ds.dataset(root / table, format="parquet", schema=schema, partitioning="hive",
                          exclude_invalid_files=False, ignore_prefixes=[".", "_"])
        return data.to_table(columns=list(columns) if columns else None, filter=where)
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(f"{root} is damaged: its {table} cannot be read ({unreadable(exc)})") from None


def unreadable(exc: BaseException | str) -> str:
    """An error reading a dataset's parts, in one printable line of at most 300 characters."""
    return printable(" ".join(str(exc).split()))[:300]


def verify(root: Path, tables: Sequence[str]) -> None:
    """Every part of these tables readable (its footer) and each column of the kind tablecopy
    gives it (text where text is due, numbers where numbers are): a damaged dataset refused in
    one line before any engine reads it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def kind(t) -> str:
        if pa.types.is_integer(t):
            return "int64"
        if pa.types.is_floating(t):
            return "float64"
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return "string"
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            return "binary"
        return "null" if pa.types.is_null(t) else str(t)

    for table in tables:
        wanted = dict(tablecopy.COLUMNS[table])
        base = root / table
        parts = sorted(base.glob("*/part-*.parquet")) if base.is_dir() else []
        for part in parts:
            try:
                schema = pq.read_schema(part)
            except (pa.ArrowException, OSError) as exc:
                raise DatasetError(f"{root} is damaged: {printable(part.name)} of {table} cannot be read "
                                   f"({unreadable(exc)})") from None
            for field in schema:
                got = kind(field.type)
                if field.name in wanted and got not in (wanted[field.name], "null"):
                    raise DatasetError(f"{root} is damaged: {printable(part.name)} of {table} holds "
                                       f"{field.name} as {printable(str(field.type))}, not {wanted[field.name]}")


def sessions(root: Path) -> list[dict]:
    """Each session of the dataset (id, day, started_at, frames), in start order."""
    import pyarrow.compute as pc

    meta = read(root, "sessions", columns=["id", "started_at", "day"]).to_pylist()
    counts = pc.value_counts(read(root, "frames", columns=["session_id"]).column("session_id")).to_pylist()
    frames = {c["values"]: c["counts"] for c in counts}
    for row in meta:
        row["frames"] = frames.get(row["id"], 0)
    return sorted(meta, key=lambda r: (r["started_at"], r["id"]))
