"""mcptap.data.latency: the per-method service response time table of a database, a `messages()`
frame or an `operations()` frame, counted by operation as `mcptap analyze` counts (the analysis'
join, analyzer/analysis/logical_operations.py `counted`), percentiles by nearest rank (analysis/latency.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mcptap.analysis import latency as latency_mod

TASK_STEPS = ["task-poll", "task-update", "task-result", "task-cancel"]
"""A task's steps that are also calls of their own (their methods' rows, as `mcptap analyze` counts)."""


def mark_tool_errors(read: pd.DataFrame, failed: set) -> None:
    if failed:
        read["tool_error"] = [(str(s), int(f), None if pd.isna(i) else int(i)) in failed
                              for s, f, i in zip(read["session_id"], read["frame_seq"], read["idx"])]
    else:
        read["tool_error"] = pd.Series(False, index=read.index, dtype="bool")


def mark_operations(read: pd.DataFrame, members: dict) -> None:
    """The joined-operation columns (`operation`, `step`, `operation_latency_s`: the analysis'
    join, analysis/logical_operations.py members) of each row of a frame of a joined operation; missing
    on the others, each an operation of its own."""
    places = [members.get(str(s), {}).get(int(f)) if members else None
              for s, f in zip(read["session_id"], read["frame_seq"])]
    read["operation"] = pd.Series([p.operation if p is not None else None for p in places], index=read.index,
                                  dtype="object")
    read["step"] = pd.Series([p.step if p is not None else None for p in places], index=read.index, dtype="object")
    read["operation_latency_s"] = pd.Series([p.latency_s if p is not None and p.answer else None for p in places],
                                            index=read.index, dtype="float64")


def blank_operations(read: pd.DataFrame, columns: list[str]) -> None:
    """The joined-operation columns, missing on every row (a Parquet dataset holds no frames to
    join operations from)."""
    for column in columns:
        read[column] = pd.Series(np.nan if column == "operation_latency_s" else None, index=read.index,
                                 dtype="float64" if column == "operation_latency_s" else "object")


def of_messages(msgs: pd.DataFrame) -> pd.DataFrame:
    """data.latency() of a messages frame."""
    return _count(_calls(msgs), with_tool_errors="tool_error" in msgs.columns)


def _calls(msgs: pd.DataFrame) -> pd.DataFrame:
    """The requests of a messages frame as `_count` reads them: each request with the outcome of
    its answer (error, tool_error, ok; unanswered without one) and, from the joined-operation
    columns, its operation, step and the operation's latency when its answer ends it."""
    from mcptap.analysis import paired

    kind = msgs["kind"].astype(str)
    has = {c: c in msgs.columns for c in ("operation", "step", "operation_latency_s", "tool_error", "session_id")}
    sids = msgs["session_id"].astype(str) if has["session_id"] else pd.Series("", index=msgs.index)
    answers = {}
    for sid, seq, k, failed, ended in zip(
            sids, msgs["frame_seq"] if "frame_seq" in msgs else [None] * len(msgs), kind,
            msgs["tool_error"] if has["tool_error"] else [False] * len(msgs),
            msgs["operation_latency_s"] if has["operation_latency_s"] else [np.nan] * len(msgs)):
        if k in ("response", "error") and seq is not None:
            answers[(sid, int(seq))] = (paired.ERROR if k == "error" else paired.TOOL_ERROR if failed is True
                                        else paired.OK, None if pd.isna(ended) else float(ended))
    requests = msgs[kind == "request"]
    rows = []
    nothing = [None] * len(requests)
    for sid, seq, idx, method, answer, lat, op, step in zip(
            sids[requests.index], requests["frame_seq"] if "frame_seq" in requests else nothing,
            requests["idx"] if "idx" in requests else nothing, requests["method"], requests["paired_frame"],
            requests["latency_s"], requests["operation"] if has["operation"] else nothing,
            requests["step"] if has["step"] else nothing):
        outcome, ended = (paired.UNANSWERED, None) if pd.isna(answer) else answers.get((sid, int(answer)),
                                                                                     (paired.OK, None))
        rows.append((sid, None if op is None or pd.isna(op) else op, seq, None if idx is None or pd.isna(idx) else idx,
                     str(method), outcome, None if step is None or pd.isna(step) else step,
                     None if pd.isna(lat) else float(lat), ended))
    return pd.DataFrame(rows, columns=_REQUEST_COLUMNS)


_REQUEST_COLUMNS = ["session_id", "operation", "seq", "idx", "method", "outcome", "step", "latency_s",
                    "operation_latency_s"]


def _count(requests: pd.DataFrame, *, with_tool_errors: bool) -> pd.DataFrame:
    """The latency table of these requests (`_REQUEST_COLUMNS`), as `mcptap analyze` counts: in a
    session, a method that starts a joined operation (more than one request) is counted by
    operation through analysis/logical_operations.py `counted` (each of its operations one call, timed
    whole); every other request (and a task's polls, result and cancel) is a call of its own."""
    from mcptap.analysis import paired
    from mcptap.analysis.logical_operations import Timed, counted

    keys = [(s, o) for s, o in zip(requests["session_id"], requests["operation"])]
    groups: dict = {}
    for key, seq, method in zip(keys, requests["seq"], requests["method"]):
        if key[1] is not None:
            groups.setdefault(key, []).append((seq, method))
    starts = {(key[0], min(members)[1]) for key, members in groups.items() if len(members) > 1}
    starter = {key: min(members)[1] for key, members in groups.items()}
    by_operation = pd.Series([k[1] is not None and (k[0], starter[k]) in starts for k in keys], index=requests.index,
                             dtype=bool)
    alone = requests[~by_operation | requests["step"].isin(TASK_STEPS)]
    outcome = alone["outcome"].astype(str)
    calls = pd.DataFrame({"method": alone["method"].astype(str), "calls": 1,
                          "latency_s": alone["latency_s"].astype("float64"),
                          "errors": (outcome == paired.ERROR).astype(int),
                          "tool_errors": (outcome == paired.TOOL_ERROR).astype(int),
                          "unanswered": outcome.isin([paired.UNANSWERED, paired.CANCELLED]).astype(int)})
    joined = requests[by_operation]
    timed = [Timed((sid, op), int(seq), 0 if idx is None or pd.isna(idx) else int(idx), method, outcome, step,
                   None if lat is None or pd.isna(lat) else float(lat))
             for sid, op, seq, idx, method, outcome, step, lat in zip(
                 joined["session_id"], joined["operation"], joined["seq"], joined["idx"], joined["method"],
                 joined["outcome"], joined["step"], joined["operation_latency_s"])]
    found = [{"method": c.method, "calls": 1, "latency_s": np.nan if c.latency_s is None else c.latency_s,
              "errors": int(c.error), "tool_errors": int(c.tool_error), "unanswered": int(c.unanswered)}
             for c in counted(timed)]
    if found:
        calls = pd.concat([calls, pd.DataFrame(found)], ignore_index=True)
    grouped = calls.groupby("method", observed=True)
    table = pd.DataFrame({
        "calls": grouped["calls"].sum().astype("int64"), "errors": grouped["errors"].sum().astype("int64"),
        **({"tool_errors": grouped["tool_errors"].sum().astype("int64")} if with_tool_errors else {}),
        "unanswered": grouped["unanswered"].sum().astype("int64"),
        "p50_s": grouped["latency_s"].agg(lambda v: _percentile(v, 0.5)),
        "p95_s": grouped["latency_s"].agg(lambda v: _percentile(v, 0.95)),
        "max_s": grouped["latency_s"].max(),
    })
    table.index.name = "method"
    return table.astype({c: "float64" for c in ("p50_s", "p95_s", "max_s")}).sort_values(
        "calls", ascending=False, kind="stable")


def of_operations(ops: pd.DataFrame) -> pd.DataFrame:
    """latency() of an operations() frame (`_count`)."""
    from mcptap.analysis import paired

    asked = ops[ops["outcome"].astype(str) != paired.NOTIFICATION]
    requests = pd.DataFrame({
        "session_id": asked["session_id"].astype(str), "operation": asked["operation"].astype(object),
        "seq": asked["seq"], "idx": asked["idx"].astype(object), "method": asked["method"].astype(str),
        "outcome": asked["outcome"].astype(str),
        "step": asked["step"].astype(object).where(asked["step"].notna(), None),
        "latency_s": asked["latency_s"].astype("float64"),
        "operation_latency_s": asked["operation_latency_s"].astype("float64")}, columns=_REQUEST_COLUMNS)
    return _count(requests, with_tool_errors=True)


def _percentile(values: pd.Series, q: float) -> float:
    """The q-quantile by nearest rank, the definition of every face (analysis/latency.py)."""
    found = latency_mod.nearest_rank(values.dropna().tolist(), q)
    return np.nan if found is None else found
