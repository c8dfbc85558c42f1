"""A host's config wrapped by `mcptap wrap`, then each wrapped server started as the host starts
it (the exact `command` and `args` of the rewritten file, with its `env`) and driven by the real
`mcp` SDK client: the real servers answer through the tee, and each session is recorded under
the server's name."""

import json
import os
import sqlite3

import pytest

from mcptap.hostconfig import hosts, jsonc
from tests.conftest import run, tool
from tests.support.inprocess import cli


def layout(host: str, servers: dict) -> tuple[str, str]:
    """(file name, text) of a config of `host` holding `servers`, as that host writes it."""
    if host == "vscode":
        typed = {k: {"type": "stdio", **v} for k, v in servers.items()}
        return "mcp.json", "// the workspace's servers\n" + json.dumps({"servers": typed}, indent=2)[:-2] + ",\n}\n"
    if host == "vscode-settings":
        return "settings.json", json.dumps({"editor.fontSize": 14, "mcp": {"servers": servers}}, indent=4)
    if host == "claude-code":  # ~/.claude.json: one server for every project, one for a project only
        first, second = list(servers)
        return ".claude.json", json.dumps({"numStartups": 3, "mcpServers": {first: servers[first]},
                                           "projects": {"/home/me/app": {"mcpServers": {second: servers[second]}}}})
    if host == "cursor":
        return "mcp.json", json.dumps({"mcpServers": {k: {**v, "disabled": False} for k, v in servers.items()}})
    return "claude_desktop_config.json", json.dumps({"mcpServers": servers}, indent=2)


@pytest.mark.parametrize("host", ["claude-desktop", "claude-code", "cursor", "vscode", "vscode-settings"])
def test_each_wrapped_server_started_as_the_host_starts_it_is_recorded_under_its_name(
        tmp_path, sdk_python, time_server, host):
    servers = {
        "sdk": {"command": sdk_python, "args": [tool("sdk_server.py")], "env": {"MCPTAP_TEST_MARK": "sdk"}},
        "time": {"command": time_server[0], "args": ["--local-timezone", "UTC"], "env": {"TZ": "UTC"}},
    }
    name, text = layout(host, servers)
    config = tmp_path / name
    config.write_text(text, encoding="utf-8")
    db = tmp_path / "host.db"
    done = cli("wrap", str(config), "--db", str(db))
    assert done.returncode == 0, done.stderr.decode()
    entries = {s.name: s.node.plain() for s in hosts.servers(jsonc.parse(config.read_text(encoding="utf-8")))}
    for name, kind in (("sdk", "sdk"), ("time", "time")):
        entry = entries[name]
        env = {**os.environ, "MCPTAP_TEST_SERVER_ENV": json.dumps(entry["env"])}
        client = run([sdk_python, tool("sdk_client.py"), "legacy", kind, "--", entry["command"], *entry["args"]],
                     timeout=120, env=env)
        assert client.returncode == 0, client.stderr.decode()[-2000:]
    conn = sqlite3.connect(db)
    labels = [r[0] for r in conn.execute("SELECT label FROM sessions ORDER BY started_at")]
    counts = dict(conn.execute("SELECT label, count(*) FROM frames JOIN sessions ON sessions.id = session_id "
                               "GROUP BY label"))
    conn.close()
    assert labels == ["sdk", "time"] and counts["sdk"] >= 6 and counts["time"] >= 4
    assert cli("unwrap", str(config)).returncode == 0
    assert config.read_text(encoding="utf-8") == text
