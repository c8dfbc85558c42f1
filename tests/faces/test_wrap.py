"""`mcptap wrap` and `mcptap unwrap` on real config files of each host: every stdio server behind
`mcptap record`, nothing else changed, twice is once, unwrap gives the file back byte for byte;
bad input (a file that does not parse, a read-only one, one changed between read and write)
leaves the file untouched, with one line and exit 2."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from mcptap.errors import MCPTapError
from mcptap.hostconfig import jsonc
from mcptap.hostconfig import wrap as wrap_mod
from tests.conftest import mcptap, run
from tests.support.inprocess import cli

CLAUDE_DESKTOP = """{
  "mcpServers": {
    "time": {
      "command": "uvx",
      "args": ["mcp-server-time", "--local-timezone=UTC"]
    },
    "files": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/docs"],
      "env": {"DEBUG": "1"}
    }
  },
  "globalShortcut": "Ctrl+Space"
}
"""
CURSOR = """{
  "mcpServers": {
    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "disabled": true},
    "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${env:TOKEN}"}}
  }
}
"""
CLAUDE_CODE_PROJECT = """{
  "mcpServers": {
    "git": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git"], "env": {}},
    "docs": {"type": "http", "url": "http://127.0.0.1:9000/mcp"}
  }
}
"""
CLAUDE_CODE_USER = """{
  "numStartups": 12,
  "mcpServers": {"time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"]}},
  "projects": {
    "/home/me/app": {
      "allowedTools": [],
      "mcpServers": {"sqlite": {"type": "stdio", "command": "uvx", "args": ["mcp-server-sqlite", "--db", "app.db"],
                                "cwd": "/home/me/app"}}
    },
    "/home/me/empty": {"mcpServers": {}}
  }
}
"""
VSCODE_MCP = """// the workspace's MCP servers
{
  "inputs": [{"type": "promptString", "id": "token", "password": true}],
  "servers": {
    "time": {
      "type": "stdio",
      "command": "uvx",
      "args": [
        "mcp-server-time", // the PyPI server
      ],
      "env": {"TZ": "UTC"},
    },
    "bare": { "command": "my-server" },
    /* a remote one */
    "remote": {"type": "http", "url": "https://example.com/mcp"},
  },
}
"""
VSCODE_SETTINGS = """{
  "editor.fontSize": 14, // big
  "mcp": {
    "servers": {
      "time": {"command": "uvx", "args": ["mcp-server-time"],},
    },
  },
}
"""
HOSTS = {"claude_desktop_config.json": CLAUDE_DESKTOP, "mcp.json": CURSOR, ".mcp.json": CLAUDE_CODE_PROJECT,
         ".claude.json": CLAUDE_CODE_USER, "vscode-mcp.json": VSCODE_MCP, "settings.json": VSCODE_SETTINGS}
APP = {"claude_desktop_config.json": "claude-desktop", ".mcp.json": "claude-code", ".claude.json": "claude-code"}
"""The host each file's name tells (`--host-app`); the others, in a folder that tells nothing, none."""
STDIO = {"claude_desktop_config.json": ["time", "files"], "mcp.json": ["memory"], ".mcp.json": ["git"],
         ".claude.json": ["time", "sqlite"], "vscode-mcp.json": ["time", "bare"], "settings.json": ["time"]}


def entries(text: str) -> dict[str, dict]:
    from mcptap.hostconfig import hosts

    return {s.name: s.node.plain() for s in hosts.servers(jsonc.parse(text))}


def wrapped_line(entry: dict) -> list:
    return [entry["command"], *entry.get("args", [])]


@pytest.fixture(params=sorted(HOSTS))
def config(request, tmp_path) -> tuple[Path, str]:
    path = tmp_path / request.param
    path.write_text(HOSTS[request.param], encoding="utf-8")
    os.chmod(path, 0o640)
    return path, request.param


def test_wrap_puts_every_stdio_server_behind_mcptap_record_and_changes_nothing_else(config, tmp_path):
    path, name = config
    before = entries(path.read_text(encoding="utf-8"))
    db = tmp_path / "rec.db"
    done = cli("wrap", str(path), "--db", str(db))
    assert done.returncode == 0, done.stderr
    after = entries(path.read_text(encoding="utf-8"))
    assert list(after) == list(before)
    for server, entry in after.items():
        if server not in STDIO[name]:
            assert entry == before[server]  # HTTP servers (and entries that are none) left alone
            continue
        line = wrapped_line(entry)
        app = [f"--host-app={APP[name]}"] if name in APP else []
        assert line[line.index("record"):line.index("--") + 1] == ["record", f"--db={db}", *app, f"--name={server}", "--"]
        assert line[line.index("--") + 1:] == wrapped_line(before[server])
        assert Path(line[0]).is_absolute() and "mcptap" in " ".join(line[:3])
        assert {k: v for k, v in entry.items() if k not in ("command", "args")} == \
            {k: v for k, v in before[server].items() if k not in ("command", "args")}  # env, cwd, type, disabled
    assert oct(path.stat().st_mode & 0o777) == "0o640"
    assert (tmp_path / (path.name + ".mcptap-backup")).read_text(encoding="utf-8") == HOSTS[name]
    if name in ("mcp.json", ".mcp.json", "vscode-mcp.json"):
        assert "an HTTP server, left alone" in done.stdout.decode() and "mcptap proxy" in done.stdout.decode()


def test_wrapping_twice_changes_nothing_and_unwrap_gives_the_file_back_byte_for_byte(config, tmp_path):
    path, name = config
    assert cli("wrap", str(path), "--db", str(tmp_path / "rec.db")).returncode == 0
    once = path.read_bytes()
    again = cli("wrap", str(path), "--db", str(tmp_path / "rec.db"))
    assert again.returncode == 0 and path.read_bytes() == once
    assert again.stdout.decode().count("already wrapped") == len(STDIO[name])
    done = cli("unwrap", str(path))
    assert done.returncode == 0 and "restored as it was" in done.stdout.decode()
    assert path.read_text(encoding="utf-8") == HOSTS[name]
    assert not (tmp_path / (path.name + ".mcptap-backup")).exists()


def test_unwrap_after_the_host_changed_the_file_unwraps_the_wrapped_entries_and_keeps_the_change(tmp_path):
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(CLAUDE_DESKTOP, encoding="utf-8")
    assert cli("wrap", str(path), "--db", str(tmp_path / "rec.db")).returncode == 0
    changed = path.read_text(encoding="utf-8").replace('"Ctrl+Space"', '"Alt+Space"')
    path.write_text(changed, encoding="utf-8")
    done = cli("unwrap", str(path))
    assert done.returncode == 0, done.stderr
    assert path.read_text(encoding="utf-8") == CLAUDE_DESKTOP.replace('"Ctrl+Space"', '"Alt+Space"')
    again = cli("unwrap", str(path))  # nothing wrapped: the host's change is not undone by the backup
    assert again.returncode == 0 and "nothing wrapped" in again.stdout.decode()
    assert path.read_text(encoding="utf-8") == CLAUDE_DESKTOP.replace('"Ctrl+Space"', '"Alt+Space"')


def test_dry_run_prints_the_change_as_a_diff_and_writes_nothing(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(VSCODE_SETTINGS, encoding="utf-8")
    done = cli("wrap", str(path), "--db", str(tmp_path / "rec.db"), "--dry-run")
    assert done.returncode == 0
    out = done.stdout.decode()
    assert out.startswith(f"--- {path}\n") and '-      "time": {"command": "uvx"' in out and '"record"' in out
    assert path.read_text(encoding="utf-8") == VSCODE_SETTINGS
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json"]


def test_server_wraps_only_the_servers_named_and_an_unknown_name_is_an_error(tmp_path):
    path = tmp_path / ".claude.json"
    path.write_text(CLAUDE_CODE_USER, encoding="utf-8")
    assert cli("wrap", str(path), "--db", str(tmp_path / "r.db"), "--server", "sqlite").returncode == 0
    after = entries(path.read_text(encoding="utf-8"))
    assert "record" in after["sqlite"]["args"] and after["time"]["args"] == ["mcp-server-time"]
    before = path.read_bytes()
    done = cli("wrap", str(path), "--db", str(tmp_path / "r.db"), "--server", "nope")
    assert done.returncode == 2 and "no server 'nope'" in done.stderr.decode() and path.read_bytes() == before


def test_host_finds_that_hosts_own_config(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".claude.json").write_text(CLAUDE_CODE_USER, encoding="utf-8")
    env = {**os.environ, "HOME": str(home)}
    done = cli("wrap", "--host", "claude-code", "--db", str(tmp_path / "r.db"), env=env)
    assert done.returncode == 0, done.stderr
    assert "record" in entries((home / ".claude.json").read_text(encoding="utf-8"))["time"]["args"]
    assert "--host-app=claude-code" in entries((home / ".claude.json").read_text(encoding="utf-8"))["time"]["args"]
    assert cli("unwrap", "--host", "claude-code", env=env).returncode == 0
    assert (home / ".claude.json").read_text(encoding="utf-8") == CLAUDE_CODE_USER


@pytest.mark.parametrize("content, said", [
    ('{"mcpServers": {"time": {"command": "uvx",, }}}', "is not a JSON config"),
    ("\xff\xfe not text", "is not a JSON config"),
])
def test_a_file_that_does_not_parse_is_one_line_exit_2_and_untouched(tmp_path, content, said):
    path = tmp_path / "claude_desktop_config.json"
    path.write_bytes(content.encode("latin-1"))
    for command in ("wrap", "unwrap"):
        done = cli(command, str(path), *(["--db", str(tmp_path / "r.db")] if command == "wrap" else []))
        err = done.stderr.decode()
        assert done.returncode == 2 and err.count("\n") == 1 and said in err, err
    assert path.read_bytes() == content.encode("latin-1") and sorted(os.listdir(tmp_path)) == [path.name]


@pytest.mark.parametrize("args, said", [
    ((), "name the CONFIG file, or --host"),
    (("--host", "emacs"), "unknown host 'emacs'"),
    (("/nonexistent/mcp.json",), "no config file at /nonexistent/mcp.json"),
])
def test_bad_arguments_are_one_line_and_exit_2(args, said):
    done = cli("wrap", *args)
    err = done.stderr.decode()
    assert done.returncode == 2 and err.count("\n") == 1 and said in err, err


def test_a_read_only_config_is_not_changed(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(CURSOR, encoding="utf-8")
    os.chmod(path, 0o444)
    done = cli("wrap", str(path), "--db", str(tmp_path / "r.db"))
    assert done.returncode == 2 and "read-only" in done.stderr.decode()
    assert path.read_text(encoding="utf-8") == CURSOR and sorted(os.listdir(tmp_path)) == ["mcp.json"]


def test_a_config_another_process_changed_between_read_and_write_is_left_as_that_process_wrote_it(tmp_path):
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(CLAUDE_DESKTOP, encoding="utf-8")
    plan = wrap_mod.plan_wrap(path, str(tmp_path / "r.db"))
    theirs = CLAUDE_DESKTOP.replace("Ctrl+Space", "Alt+Space")
    with pytest.raises(MCPTapError, match="changed while mcptap was rewriting it"):
        wrap_mod.apply(plan, before_replace=lambda: path.write_text(theirs, encoding="utf-8"))
    assert path.read_text(encoding="utf-8") == theirs
    assert not [p for p in os.listdir(tmp_path) if p != path.name and not p.endswith(".mcptap-backup")]


def test_the_launcher_is_this_mcptap_by_absolute_path():
    line = wrap_mod.mcptap_command()
    assert Path(line[0]).is_absolute()
    assert line == [str(Path(sys.executable).parent / "mcptap")] or line[1:] == ["-m", "mcptap"]
    assert json.dumps(line)


@pytest.mark.parametrize("where, host", [
    ("Claude/claude_desktop_config.json", "claude-desktop"), (".cursor/mcp.json", "cursor"),
    ("app/.mcp.json", "claude-code"), ("home/.claude.json", "claude-code"), ("app/.vscode/mcp.json", "vscode"),
    ("Code/User/mcp.json", "vscode"), ("Code/User/settings.json", "vscode"), ("app/mcp.json", None),
    ("app/settings.json", None), ("servers.json", None)])
def test_the_host_a_config_belongs_to_is_told_by_its_name_and_folder(where, host):
    from mcptap.hostconfig import hosts

    assert hosts.host_of(Path("/somewhere") / where) == host


def test_a_config_the_host_name_is_written_into_is_unwrapped_in_place_without_it(tmp_path):
    cursor = tmp_path / ".cursor"
    cursor.mkdir()
    path = cursor / "mcp.json"
    path.write_text(CURSOR, encoding="utf-8")
    assert cli("wrap", str(path), "--db", str(tmp_path / "r.db")).returncode == 0
    assert "--host-app=cursor" in entries(path.read_text(encoding="utf-8"))["memory"]["args"]
    path.write_text(path.read_text(encoding="utf-8").replace('"disabled": true', '"disabled": false'), encoding="utf-8")
    assert cli("unwrap", str(path)).returncode == 0  # the host changed it: unwrapped in place, not restored
    assert path.read_text(encoding="utf-8") == CURSOR.replace('"disabled": true', '"disabled": false')
