"""`mcptap wrap` and `mcptap unwrap`: a host's MCP config rewritten so that every stdio server (or
those named) starts behind `mcptap record --db DB --name NAME -- COMMAND ARGS...`, and back.

Only the `command` and `args` of those entries change (`env`, `cwd`, `type`, comments, order and
every other byte stay); HTTP servers are left alone and listed with the `mcptap proxy` command
that would record them. Wrapping twice changes nothing. Before the first write the file is kept
as it was beside it (CONFIG.mcptap-backup, with CONFIG.mcptap-backup.json saying what wrap last
wrote); a file is replaced whole, atomically, with its mode. `unwrap` gives the backup back byte
for byte when the file is still what wrap wrote; otherwise (the host or the user changed it
since) it unwraps only the wrapped entries, in place. A file that does not parse, that is
read-only, or that changes between the read and the write is left untouched, with one line."""

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
from mcptap.hostconfig import hosts, jsonc

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


def inner_command(command: str, args: list) -> list | None:
    """The server's own command line in a wrapped entry (`mcptap record ... -- CMD ARGS`), None
    when the entry is not wrapped."""
    name = os.path.basename(command).lower()
    if name in ("mcptap", "mcptap.exe"):
        rest = args
    elif args[:2] == ["-m", "mcptap"]:
        rest = args[2:]
    else:
        return None
    if not rest or rest[0] != "record" or "--" not in rest or not all(isinstance(a, str) for a in rest):
        return None
    inner = rest[rest.index("--") + 1:]
    return inner or None


def _entry_line(server: hosts.Server) -> list | None:
    command = server.command
    args_node = server.args
    args = args_node.plain() if args_node is not None else []
    if command is None or not isinstance(args, list):
        return None
    return [command.value, *args]


def plan_wrap(path: str | os.PathLike, db: str, names: list[str] | None = None) -> Plan:
    path = Path(path)
    data, root, text = _read(path)
    plan = Plan(path, data, data)
    found = hosts.servers(root)
    if names:
        unknown = sorted(set(names) - {s.name for s in found})
        if unknown:
            raise MCPTapError(f"no server {', '.join(map(repr, unknown))} in {path} (it has: "
                              f"{', '.join(s.name for s in found) or 'none'})")
    edits = []
    launcher = mcptap_command()
    for server in found:
        if names and server.name not in names:
            continue
        if server.kind == "http":
            plan.http.append((server.where, server.url or ""))
            continue
        line = _entry_line(server) if server.kind == "stdio" else None
        if line is None:
            continue
        if inner_command(line[0], line[1:]) is not None:
            plan.already.append(server.where)
            continue
        wrapped = [*launcher, "record", "--db", os.path.abspath(db), "--name", server.name, "--", *line]
        edits += _set_command(text, server, wrapped[0], wrapped[1:])
        plan.changed.append(server.where)
    plan.after = jsonc.edit(text, edits).encode("utf-8")
    return plan


def plan_unwrap(path: str | os.PathLike) -> Plan:
    path = Path(path)
    data, root, text = _read(path)
    plan = Plan(path, data, data, unwrapping=True)
    backup, state = _backup_paths(path)
    wrote = _wrote(state)
    found = hosts.servers(root)
    edits = []
    for server in found:
        line = _entry_line(server) if server.kind == "stdio" else None
        inner = inner_command(line[0], line[1:]) if line is not None else None
        if inner is None:
            if server.kind == "stdio":
                plan.already.append(server.where)
            continue
        edits += _set_command(text, server, inner[0], inner[1:])
        plan.changed.append(server.where)
    if wrote is not None and wrote == hashlib.sha256(data).hexdigest() and backup.is_file():
        plan.after, plan.restore = backup.read_bytes(), True
    else:
        plan.after = jsonc.edit(text, edits).encode("utf-8")
    return plan


def _set_command(text: str, server: hosts.Server, command: str, args: list) -> list[tuple[int, int, str]]:
    """The edits that make the entry's command and args these."""
    edits = [(server.command.start, server.command.end, json.dumps(command, ensure_ascii=False))]
    args_node = server.args
    if args_node is not None:
        edits.append((args_node.start, args_node.end, _array(text, args_node, args)))
        return edits
    key = next(k for name, k, v in server.node.members if v is server.command)
    indent = jsonc.indent_before(text, key.start)
    rendered = json.dumps(args, ensure_ascii=False)
    edits.append((server.command.end, server.command.end,
                  f',\n{indent}"args": {rendered}' if indent else f', "args": {rendered}'))
    return edits


def _array(text: str, node: jsonc.Node, items: list) -> str:
    """`items` as a JSON array written the way `node` was: one line, or an item a line."""
    written = text[node.start:node.end]
    if "\n" not in written or not node.items:
        return json.dumps(items, ensure_ascii=False)
    inner = jsonc.indent_before(text, node.items[0].start)
    closing = jsonc.indent_before(text, node.end - 1)
    return "[\n" + ",\n".join(inner + json.dumps(i, ensure_ascii=False) for i in items) + "\n" + closing + "]"


def _backup_paths(path: Path) -> tuple[Path, Path]:
    return path.with_name(path.name + BACKUP_SUFFIX), path.with_name(path.name + STATE_SUFFIX)


def _wrote(state: Path) -> str | None:
    try:
        return json.loads(state.read_text(encoding="utf-8")).get("wrote_sha256")
    except (OSError, ValueError, AttributeError):
        return None


def apply(plan: Plan, *, before_replace: Callable[[], None] | None = None) -> bool:
    """Write the plan (False: nothing to change). The file must still hold what the plan read."""
    if plan.after == plan.before:
        return False
    path = plan.path
    st = os.stat(path)
    if not st.st_mode & 0o222:
        raise MCPTapError(f"{path} is read-only: not changed")
    backup, state = _backup_paths(path)
    if before_replace is not None:
        before_replace()
    if path.read_bytes() != plan.before:
        raise MCPTapError(f"{path} changed while mcptap was rewriting it (the host wrote it?): not changed; "
                          "run it again")
    if not plan.restore and not backup.exists():
        _write_beside(backup, plan.before, st.st_mode)
    _write_beside(path, plan.after, st.st_mode, replace=True)
    if plan.restore:
        backup.unlink(missing_ok=True)
        state.unlink(missing_ok=True)
    elif plan.unwrapping:  # unwrapped in place: what wrap wrote is gone, the original stays kept
        state.unlink(missing_ok=True)
    else:
        wrapped_now = hashlib.sha256(plan.after).hexdigest()
        _write_beside(state, json.dumps({"wrote_sha256": wrapped_now}).encode(), st.st_mode, replace=True)
    return True


def _write_beside(path: Path, data: bytes, mode: int, replace: bool = False) -> None:
    """`data` as the file `path`, whole or not at all (a temporary file beside it, then renamed),
    with `mode` (and the owner of the file it replaces, where this process may give it)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "xb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode & 0o7777)
        if replace and path.exists():
            st = os.stat(path)
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except (OSError, AttributeError):
                pass
        os.replace(tmp, path)
    except OSError as exc:
        if tmp.exists():
            tmp.unlink()
        raise MCPTapError(f"cannot write {path}: {exc.strerror or exc}") from None


def proxy_hint(db: str, url: str) -> str:
    """The command that records an HTTP server the host reaches at `url` (the host is then
    pointed at the proxy's URL, the same path)."""
    return f"mcptap proxy --db {os.path.abspath(db)} --upstream {url}"
