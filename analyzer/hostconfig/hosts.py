"""Where hosts keep their MCP servers: each host's config files, where in a file the servers are,
and which entries are stdio servers (a command to spawn) and which are HTTP (a URL).

- Claude Desktop: `claude_desktop_config.json`, `mcpServers`.
- Cursor: `~/.cursor/mcp.json` (and a project's `.cursor/mcp.json`), `mcpServers`.
- Claude Code: a project's `.mcp.json`, `mcpServers`; `~/.claude.json`, `mcpServers` and each
  project's under `projects.<folder>.mcpServers`.
- VS Code: `mcp.json` (the user's, or a workspace's `.vscode/mcp.json`), `servers`; `settings.json`,
  `mcp.servers`. Both may hold comments and trailing commas.

A file is read for every one of those places at once (its content tells which it has); `--host`
names the host whose default file to take."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from mcptap.hostconfig.jsonc import Node

SERVER_MAPS = (("mcpServers",), ("servers",), ("mcp", "servers"), ("projects", "*", "mcpServers"))
"""The places of server maps in a config file, as paths of member names (`*`: every member)."""

HTTP_TYPES = frozenset({"http", "sse", "streamable-http", "streamableHttp", "streamable_http"})


def _app_data() -> Path:
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def default_config(host: str) -> Path:
    """The host's own config file on this machine (it may not exist)."""
    if host == "claude-desktop":
        return _app_data() / "Claude" / "claude_desktop_config.json"
    if host == "cursor":
        return Path.home() / ".cursor" / "mcp.json"
    if host == "claude-code":
        return Path.home() / ".claude.json"
    if host == "vscode":
        return _app_data() / "Code" / "User" / "mcp.json"
    raise ValueError(f"unknown host {host!r}; known: {', '.join(HOSTS)}")


HOSTS = ("claude-desktop", "claude-code", "cursor", "vscode")


def host_of(path: str | os.PathLike) -> str | None:
    """The host whose config a file is, by its name and folder (None: it does not say):
    `claude_desktop_config.json`; `.claude.json` or `.mcp.json`; `.cursor/mcp.json`;
    `.vscode/` or VS Code's user folder (`Code/User/`)."""
    parts = Path(os.path.abspath(path)).parts
    name, folder = parts[-1], parts[-2] if len(parts) > 1 else ""
    if name == "claude_desktop_config.json":
        return "claude-desktop"
    if name in (".claude.json", ".mcp.json"):
        return "claude-code"
    if folder == ".cursor" and name == "mcp.json":
        return "cursor"
    if name in ("mcp.json", "settings.json") and (folder == ".vscode" or parts[-3:-1] == ("Code", "User")):
        return "vscode"
    return None


@dataclass(eq=False)
class Server:
    """One entry of a server map."""

    name: str  # its key: the label its sessions get
    where: str  # where it is in the file, for messages: mcpServers.time, projects./home/me/app.mcpServers.time
    node: Node  # its object
    key: Node | None = None  # its key's string token
    path: tuple[str, ...] = ()  # the member names from the root to it

    @property
    def command_key(self) -> Node | None:
        """The key token of the member `command` is the value of."""
        command = self.command
        return next((k for _, k, v in self.node.members if v is command), None)

    @property
    def command(self) -> Node | None:
        node = self.node.get("command")
        return node if node is not None and node.kind == "string" else None

    @property
    def args(self) -> Node | None:
        return self.node.get("args")

    @property
    def url(self) -> str | None:
        node = self.node.get("url") or self.node.get("serverUrl")
        return node.value if node is not None and node.kind == "string" else None

    @property
    def kind(self) -> str:
        """stdio (a command to spawn), http (a URL), or other (neither: left alone)."""
        type_node = self.node.get("type")
        declared = type_node.value if type_node is not None and type_node.kind == "string" else None
        if declared in HTTP_TYPES or (declared is None and self.url is not None and self.command is None):
            return "http"
        if self.command is not None and declared in (None, "stdio"):
            return "stdio"
        return "other"


def servers(root: Node) -> list[Server]:
    """Every server entry of the file, in the file's order."""
    found: list[Server] = []
    if root.kind != "object":
        return found
    for path in SERVER_MAPS:
        for where, node in _at(root, path, ()):
            if node.kind != "object":
                continue
            for name, key, entry in node.members:
                if entry.kind == "object":
                    found.append(Server(name, ".".join(where + (name,)), entry, key, where + (name,)))
    return sorted(found, key=lambda s: s.node.start)


def _at(node: Node, path: tuple, where: tuple):
    if not path:
        yield where, node
        return
    if node.kind != "object":
        return
    head, rest = path[0], path[1:]
    for name, _, value in node.members:
        if head == "*" or name == head:
            yield from _at(value, rest, where + (name,))
