"""A large database analysed by worker processes and the process that started them, a group of
sessions each, largest first; each writes its sessions' rows itself (the messages index dropped
first, built once at the end), and a worker dies with the process that started it."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import sys
import threading
import time

from mcptap import store
from mcptap.engine.job import Job, failure, open_writer, reason_of
from mcptap.engine.results import SessionResult, merge_methods

PARALLEL_MIN_FRAMES = 50_000
"""Below this many frames, or with a single session, everything runs in this process."""

PARENT_CHECK_S = 0.5
"""How often a worker looks whether the process that started it is still there."""

PR_SET_PDEATHSIG = 1  # linux/prctl.h



def worker_count(workers: int | None, ids: list[str], sizes: dict[str, int]) -> int:
    if workers is not None:
        return max(1, min(workers, len(ids)))
    if len(ids) < 2 or sum(sizes.values()) < PARALLEL_MIN_FRAMES:
        return 1
    return max(1, min(os.cpu_count() or 1, len(ids)))


def in_workers(db_path, ids, sizes, n, fallback_revision, policy, store_it, progress, results,
               declared: bool = False) -> str | None:
    """Sessions shared out to `n` processes, largest first: `n - 1` worker processes and this
    one, which analyses the lightest group while they work (a process that only waited would
    still hold its memory). Each writes its sessions' rows into the database itself, in
    transactions of at most FLUSH_FRAMES frames: while one commits, the other goes on analysing
    (a write takes milliseconds, a flush's analysis far longer), so nothing is copied afterwards."""
    groups: list[list[str]] = [[] for _ in range(n)]
    loads = [0] * n
    for sid in sorted(ids, key=lambda s: -sizes[s]):
        i = loads.index(min(loads))
        groups[i].append(sid)
        loads[i] += sizes[sid]
    here = groups.pop(loads.index(min(loads)))
    from concurrent.futures import ProcessPoolExecutor, as_completed  # here: a small database needs no pool

    reason = _prepare(db_path, ids) if store_it else None
    store_it = store_it and reason is None  # not writable after all: the report all the same

    def take(done: list[SessionResult], reported: bool) -> None:
        nonlocal reason
        for result in done:
            results[result.summary["id"]] = result
            if result.not_stored_reason and reason is None:
                reason = result.not_stored_reason
            if progress is not None and not reported:
                progress(result.frames)

    try:
        with ProcessPoolExecutor(len(groups), mp_context=_pool_context(db_path), initializer=_worker_started,
                                 initargs=(os.getpid(),)) as pool:
            futures = [pool.submit(_run_group, db_path, group, store_it, fallback_revision, policy, declared)
                       for group in groups]  # the workers forked now, before this process's own analysis
            try:
                take(_run_group(db_path, here, store_it, fallback_revision, policy, declared, progress), True)
            except Exception as exc:  # noqa: BLE001 - as a worker's: its sessions failed, the others go on
                take([SessionResult({"id": sid}, [], {}, 0, failed=failure(exc)) for sid in here
                      if sid not in results], True)
            for future in as_completed(futures):
                try:
                    done = future.result()
                except Exception as exc:  # the worker died (killed, out of memory): its sessions failed
                    done = [SessionResult({"id": sid}, [], {}, 0, failed=failure(exc)) for sid in
                            groups[futures.index(future)] if sid not in results]
                take(done, False)
    finally:
        if store_it:  # the index back whatever happened (`_prepare` dropped it)
            writer, why = open_writer(db_path)
            try:
                if writer is not None:
                    store.ensure_message_indexes(writer)
            except (sqlite3.Error, OSError) as exc:
                why = reason_of(exc)
            finally:
                if writer is not None:
                    writer.close()
            reason = reason or why
    return reason


def _prepare(db_path: str, ids: list[str]) -> str | None:
    """Before the workers write: the sessions' earlier results deleted (while the index can find
    them) and the messages index dropped (`store.drop_message_index`). Why not, if not."""
    writer, reason = open_writer(db_path)
    if writer is None:
        return reason
    try:
        store.clear_analyses(writer, ids)
        store.drop_message_index(writer)
        return None
    except (sqlite3.Error, OSError) as exc:
        return reason_of(exc)
    finally:
        writer.close()


def _pool_context(db_path: str):
    """Workers forked from this process where that is safe (Linux, no other thread running: a
    progress bar's thread could hold a lock the child would inherit; and no connection of this
    process open on the database: SQLite's state of an open file must not cross a fork, or a
    worker's writes can be lost), so that they start with the analyzer already imported (the
    method tables take a third of a second to build); spawned otherwise."""
    from multiprocessing import get_context

    if sys.platform == "linux" and threading.active_count() == 1 and not _holds_open(db_path):
        return get_context("fork")
    return get_context("spawn")


def _holds_open(db_path: str) -> bool:
    """Whether this process has the database (or its -wal, -shm) open: a connection a caller
    keeps (a notebook's, or one waiting for the garbage collector)."""
    names = {os.path.realpath(db_path + suffix) for suffix in ("", "-wal", "-shm", "-journal")}
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return True
    for fd in fds:
        try:
            if os.readlink(f"/proc/self/fd/{fd}") in names:
                return True
        except OSError:
            continue
    return False


def _worker_started(parent: int) -> None:
    """A worker process dies with the process that started it: the kernel kills it when its
    parent goes (Linux, PR_SET_PDEATHSIG), and everywhere a thread of its own looks every
    PARENT_CHECK_S whether its parent is still the one that started it (a SIGKILLed `analyze`
    leaves no worker behind)."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # gone already, before the signal was asked for
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="mcptap-parent-watch", daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_S)
    os._exit(1)


def _run_group(db_path: str, group: list[str], store_it: bool, fallback_revision, policy,
               declared: bool = False, progress=None) -> list[SessionResult]:
    job = Job(db_path, fallback_revision, policy, store_it, progress, cleared=True, declared=declared)
    try:
        results, methods = [], {}
        for sid in group:  # the method statistics summed here: memory per method, not per session
            result = job.run_guarded(sid)
            merge_methods(methods, result.methods)
            result.methods = {}
            results.append(result)
        if results:
            results[0].methods = methods
        job.finish(results)
        return results
    finally:
        job.close()
