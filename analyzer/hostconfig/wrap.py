"""`mcptap wrap` and `mcptap unwrap`: a host's MCP config rewritten so that every stdio server (or
those named) starts behind `mcptap record --db=DB --host-app=HOST --name=NAME -- COMMAND ARGS...` (HOST: the
host whose config it is, claude-desktop, cursor...; left out when neither `--host` nor the file's
name tells), and back.

Only the `command` of those entries changes and mcptap's arguments are put at the head of their
`args` (hostconfig/entry.py: `env`, `cwd`, `type`, comments, order and every other byte stay);
HTTP servers are left alone and listed with the `mcptap proxy` command that would record them.
Wrapping twice changes nothing. Beside the file wrap keeps it as the host last wrote it, unwrapped
(CONFIG.mcptap-backup), and CONFIG.mcptap-backup.json says what wrap last wrote, the backup's hash
and which entries wrap gave an `args`; a wrap after the host changed the file brings both up to
date. `unwrap` gives the backup back byte for byte when the file is still what wrap wrote;
otherwise it unwraps the wrapped entries in place, which gives back every byte wrap changed.
A symlinked config stays a link (its target is rewritten). A file is replaced whole, atomically,
with its mode (hostconfig/replace.py). A file that does not parse, that is read-only, or that
changes between the read and the rename is left untouched, with one line; one the host writes in
place as it is renamed over (or replaces just after) gets the host's version back, with one line."""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mcptap.errors import MCPTapError
from mcptap.hostconfig import entry, hosts, jsonc
from mcptap.hostconfig.replace import Held, Staged, is_file, unchanged

BACKUP_SUFFIX = ".mcptap-backup"
STATE_SUFFIX = ".mcptap-backup.json"


@dataclass
class Plan:
    """What wrap or unwrap would do to one file."""

    path: Path
    before: bytes
    after: bytes
    changed: list[str] = field(default_factory=list)  # the servers whose entry changes, by where
    already: list[str] = field(default_factory=list)  # wrap: wrapped before; unwrap: not wrapped
    http: list[tuple[str, str]] = field(default_factory=list)  # (where, url): left alone
    restore: bool = False  # unwrap: the backup, byte for byte
    unwrapping: bool = False
    backup: bytes | None = None  # wrap: the backup's new content (None: it stays as it is)
    state: dict | None = None  # wrap: the state's new content

    def diff(self) -> str:
        a = self.before.decode("utf-8", "replace").splitlines(keepends=True)
        b = self.after.decode("utf-8", "replace").splitlines(keepends=True)
        return "".join(difflib.unified_diff(a, b, str(self.path), f"{self.path} (wrapped)" if not self.restore
                                            else f"{self.path} (unwrapped)"))


def mcptap_command() -> list[str]:
    """This mcptap as a host would start it: the `mcptap` script beside this interpreter, else
    the interpreter with `-m mcptap` (absolute paths both)."""
    script = Path(sys.executable).parent / ("mcptap.exe" if sys.platform == "win32" else "mcptap")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script.absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "mcptap"]


def _read(path: Path) -> tuple[bytes, jsonc.Node, str]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise MCPTapError(f"no config file at {path}") from None
    except OSError as exc:
        raise MCPTapError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
        return data, jsonc.parse(text), text
    except (UnicodeDecodeError, jsonc.JsoncError) as exc:
        raise MCPTapError(f"{path} is not a JSON config: {exc}") from None


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _backup_paths(path: Path) -> tuple[Path, Path]:
    return path.with_name(path.name + BACKUP_SUFFIX), path.with_name(path.name + STATE_SUFFIX)


def _state(path: Path) -> dict:
    """What wrap last wrote: {"wrote_sha256", "backup_sha256", "added_args": [[member names]...]}
    (a missing or unreadable state: {})."""
    try:
        state = json.loads(_backup_paths(path)[1].read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _added(state: dict) -> set[tuple]:
    added = state.get("added_args")
    if not isinstance(added, list):
        return set()
    return {tuple(p) for p in added if isinstance(p, list) and all(isinstance(n, str) for n in p)}


def _kept(path: Path, state: dict, data: bytes) -> bytes | None:
    """The backup when it describes the file (`data` is what wrap last wrote, and the backup is
    the one wrap kept then); else None."""
    try:
        kept = _backup_paths(path)[0].read_bytes()
    except OSError:
        return None
    if state.get("wrote_sha256") != _sha(data) or state.get("backup_sha256", _sha(kept)) != _sha(kept):
        return None
    return kept


def _unwrapped(text: str, found: list[hosts.Server], added: set[tuple]) -> tuple[str, list[str]]:
    """The text with every wrapped entry unwrapped in place, and those entries (by where)."""
    edits, changed = [], []
    for server in found:
        inner = entry.wrapped(server) if server.kind == "stdio" else None
        if inner is not None:
            edits += entry.unwrap_edits(text, server, inner, server.path in added)
            changed.append(server.where)
    return jsonc.edit(text, edits), changed


def plan_wrap(path: str | os.PathLike, db: str, names: list[str] | None = None, host: str | None = None) -> Plan:
    """What wrapping the file would change. Each wrapped entry names its host (`--host-app`):
    `host`, else the host the file's name and folder tell (hosts.host_of), else none."""
    path = Path(path)
    host = host or hosts.host_of(path)
    data, root, text = _read(path)
    plan = Plan(path, data, data)
    found = hosts.servers(root)
    if names:
        unknown = sorted(set(names) - {s.name for s in found})
        if unknown:
            raise MCPTapError(f"no server {', '.join(map(repr, unknown))} in {path} (it has: "
                              f"{', '.join(s.name for s in found) or 'none'})")
    state = _state(path)
    added = _added(state)
    edits = []
    launcher = mcptap_command()
    for server in found:
        if names and server.name not in names:
            continue
        if server.kind == "http":
            plan.http.append((server.where, server.url or ""))
            continue
        if server.kind != "stdio" or (server.args is not None and server.args.kind != "array"):
            continue
        if entry.wrapped(server) is not None:
            plan.already.append(server.where)
            continue
        more, adds = entry.wrap_edits(text, server, launcher, os.path.abspath(db), host)
        edits += more
        if adds:
            added.add(server.path)
        plan.changed.append(server.where)
    plan.after = jsonc.edit(text, edits).encode("utf-8")
    kept = _kept(path, state, data)
    if kept is None:  # the first wrap, or the host wrote the file since wrap did: keep the host's own
        kept = plan.backup = _unwrapped(text, found, added)[0].encode("utf-8")
    if plan.after != plan.before or plan.backup is not None:
        live = {s.path for s in hosts.servers(jsonc.parse(plan.after.decode("utf-8")))}
        plan.state = {"wrote_sha256": _sha(plan.after), "backup_sha256": _sha(kept),
                      "added_args": sorted(list(p) for p in added & live)}
    if plan.after == plan.before and not plan.already:
        plan.backup = plan.state = None  # nothing of wrap's in the file: nothing to keep
    return plan


def plan_unwrap(path: str | os.PathLike) -> Plan:
    path = Path(path)
    data, root, text = _read(path)
    plan = Plan(path, data, data, unwrapping=True)
    state = _state(path)
    found = hosts.servers(root)
    after, plan.changed = _unwrapped(text, found, _added(state))
    plan.already = [s.where for s in found if s.kind == "stdio" and s.where not in plan.changed]
    kept = _kept(path, state, data)
    if kept is not None:
        plan.after, plan.restore = kept, True
    else:
        plan.after = after.encode("utf-8")
    return plan


def apply(plan: Plan, *, before_replace: Callable[[], None] | None = None) -> bool:
    """Write the plan (False: nothing to change). The file must hold what the plan read until it
    is renamed over; else nothing is changed and MCPTapError says so. `before_replace` runs
    once everything is staged, just before that check (a test's way to be the host writing)."""
    backup, state = _backup_paths(plan.path)
    drop_state = plan.unwrapping and (plan.after != plan.before or plan.restore) and state.exists()
    if plan.after == plan.before and plan.backup is None and plan.state is None and not drop_state:
        return False
    target = Path(os.path.realpath(plan.path))  # a symlink stays one: its target is rewritten
    try:
        st = os.stat(target)
    except OSError as exc:
        raise MCPTapError(f"cannot write {plan.path}: {exc.strerror or exc}") from None
    if not st.st_mode & 0o222:
        raise MCPTapError(f"{plan.path} is read-only: not changed")
    staged: list[Staged] = []
    held = Held(target)  # the file read: a write in place before the rename lands in it
    try:
        if held.now() != plan.before:
            raise MCPTapError(f"{plan.path} changed while mcptap was rewriting it (the host wrote it?): "
                              "not changed; run it again")
        config = Staged(target, plan.after, st) if plan.after != plan.before else None
        staged.append(config)
        kept = Staged(backup, plan.backup, st) if plan.backup is not None else None
        staged.append(kept)
        said = Staged(state, json.dumps(plan.state).encode(), st) if plan.state is not None else None
        staged.append(said)
        if before_replace is not None:
            before_replace()
        if not unchanged(target, plan.before):
            raise MCPTapError(f"{plan.path} changed while mcptap was rewriting it (the host wrote it?): "
                              "not changed; run it again")
        if kept is not None:
            kept.commit()
        if config is not None:
            identity = config.identity
            config.commit()
            _still_ours(plan, target, held, identity, st)
        if said is not None:
            said.commit()
    finally:
        held.close()
        for one in staged:
            if one is not None:
                one.discard()
    if plan.restore:
        backup.unlink(missing_ok=True)
    if drop_state:  # unwrapped: what wrap wrote is gone (the backup of the host's file stays, in place)
        state.unlink(missing_ok=True)
    return True


def _still_ours(plan: Plan, target: Path, held: Held, identity: tuple[int, int], st: os.stat_result) -> None:
    """After the rename: the file read must still hold what was read (a host writing in place up
    to the rename wrote there) and the path must be the file renamed over it. Else the host's
    version is put back (its write in place; a file it renamed over the path is left as it is)
    and MCPTapError says so."""
    theirs = held.now()
    if theirs != plan.before:
        if is_file(target, identity):
            Staged(target, theirs, st).commit()
    elif is_file(target, identity):
        return
    raise MCPTapError(f"{plan.path} changed while mcptap was rewriting it (the host wrote it?): the host's "
                      "version is kept; run it again")


def proxy_hint(db: str, url: str) -> str:
    """The command that records an HTTP server the host reaches at `url` (the host is then
    pointed at the proxy's URL, the same path)."""
    return f"mcptap proxy --db {os.path.abspath(db)} --upstream {url}"
