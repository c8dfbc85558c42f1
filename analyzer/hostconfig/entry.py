"""One server entry of a host's config put behind `mcptap record` and taken back, as edits of the
file's text that undo each other exactly.

Wrap replaces the `command` string with mcptap's and inserts at the head of `args` (before its
first item, after any comment there) mcptap's own arguments (`record --db=DB [--host-app=HOST]
--name=NAME --`, HOST the host's name when the file tells it) followed by the server's command token as it was
written; the server's args stay where they were, as they were written (comments among them).
NAME is the entry's key token as written, so `mcptap record` gets the very name whatever it is
(`--name=--`, `--name=-beta`). An entry without `args` gets one, and its path is remembered by
the caller, so that unwrap removes it again. Unwrap puts the command token back and deletes what
wrap inserted; it reads the older form (`--db DB --name NAME --`, args rewritten whole) too."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from mcptap.hostconfig import jsonc
from mcptap.hostconfig.hosts import Server

VALUE_OPTIONS = frozenset({"--db", "--name", "--max-frame", "--redact-key", "--redact-path", "--host-app"})
"""The options of `mcptap record` that take a value (as the next argument, or after `=`)."""

Edit = tuple[int, int, str]


@dataclass
class Wrapped:
    """Where a wrapped entry's own command line is in its `args`."""

    command: jsonc.Node  # the server's command token
    rest: list[jsonc.Node]  # the server's own args


def wrapped(server: Server) -> Wrapped | None:
    """The server's own command line in a wrapped entry (`mcptap record ... -- CMD ARGS...`, by
    either launcher: the mcptap script, or an interpreter with `-m mcptap`); None when the entry
    is not wrapped. The server's own args may be of any JSON type."""
    command, args = server.command, server.args
    if command is None or args is None or args.kind != "array":
        return None
    items = args.items
    if os.path.basename(command.value).lower() in ("mcptap", "mcptap.exe"):
        at = 0
    elif [n.value if n.kind == "string" else None for n in items[:2]] == ["-m", "mcptap"]:
        at = 2
    else:
        return None
    if at >= len(items) or items[at].kind != "string" or items[at].value != "record":
        return None
    at += 1
    while at < len(items):
        node = items[at]
        if node.kind != "string":
            return None
        if node.value == "--":
            break
        at += 2 if node.value in VALUE_OPTIONS else 1
    if at + 1 >= len(items) or items[at + 1].kind != "string":
        return None
    return Wrapped(items[at + 1], items[at + 2:])


def wrap_edits(text: str, server: Server, launcher: list[str], db: str,
               host_app: str | None = None) -> tuple[list[Edit], bool]:
    """The edits that put the (stdio, unwrapped) entry behind `launcher record --db=DB
    [--host-app=HOST_APP] --name=NAME --`, and whether they add an `args` member."""
    command, args = server.command, server.args
    ours = [_json(a) for a in [*launcher[1:], "record", f"--db={db}", *([f"--host-app={host_app}"] if host_app else [])]]
    ours += ['"--name=' + text[server.key.start + 1:server.key.end], '"--"', text[command.start:command.end]]
    edits = [(command.start, command.end, _json(launcher[0]))]
    if args is None:
        key = server.command_key
        indent = jsonc.indent_before(text, key.start)
        newline = "\r\n" if "\r\n" in text else "\n"
        body = "[" + ", ".join(ours) + "]"
        edits.append((command.end, command.end, f',{newline}{indent}"args": {body}' if indent else f', "args": {body}'))
        return edits, True
    if not args.items:
        return edits + [(args.start + 1, args.start + 1, ", ".join(ours))], False
    gap = text[args.start + 1:args.items[0].start]
    separator = ", "
    if "\n" in gap:  # an item a line: ours too, each on its line at the first item's indent
        line = gap[gap.rfind("\n") + 1:]
        separator = ",\r\n" if "\r\n" in gap else ",\n"
        separator += line[:len(line) - len(line.lstrip())]
    at = args.items[0].start
    edits.append((at, at, separator.join(ours) + separator))
    return edits, False


def unwrap_edits(text: str, server: Server, found: Wrapped, added: bool) -> list[Edit]:
    """The edits that give the wrapped entry its own command back and take out what wrap put in
    its `args` (the whole member when wrap `added` it and it holds nothing else)."""
    command, args = server.command, server.args
    edits = [(command.start, command.end, text[found.command.start:found.command.end])]
    if added and not found.rest:
        key = next(k for _, k, v in server.node.members if v is args)
        if key.start > command.end and text[command.end:key.start].strip() == ",":
            return edits + [(command.end, args.end, "")]
    first = args.items[0]  # wrap's arguments come first, the server's own follow
    if found.rest:
        return edits + [(first.start, found.rest[0].start, "")]
    edits.append((first.start, found.command.end, ""))
    after = jsonc.next_token(text, found.command.end)
    if after is not None and after[1] == ",":  # a trailing comma the host put after it
        edits.append((after[2], after[2] + 1, ""))
    return edits


def _json(value: str) -> str:
    return json.dumps(value)  # ASCII: any path or name, a lone surrogate too, is written as escapes
