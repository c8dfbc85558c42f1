"""End to end with fastmcp: a real fastmcp server hides a tool from its session and announces it with
`notifications/tools/list_changed`, as the specification asks; the `mcp` SDK's client lists the tools
before and after, over stdio (`mcptap record`) and over HTTP (`mcptap proxy`). Announcing a change is
legal: the analysis reports the tool's removal as an `info` change, never a warning (the neighbour, the
same removal unannounced, is a warning: tests/analysis/test_declared.py)."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.conftest import analyze_json, assert_no_false_findings, assert_no_security_findings, mcptap, run, tee, tool
from tests.support.http_helpers import free_port, http_server, mcptap_proxy


def hide(client_python: str, mode: str, transport: str, where: str) -> dict:
    result = run([client_python, tool("sdk_list_changed_client.py"), mode, transport, where], timeout=120)
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-3000:]
    out = json.loads(result.stdout.splitlines()[-1])
    assert (out["before"], out["hide"], out["after"]) == (["hide", "secret"], "hidden", ["hide"]), out
    return out


def assert_the_removal_is_an_announced_change(db) -> None:
    assert_no_security_findings(assert_no_false_findings(db))
    _, report = analyze_json(db)
    removed = [f for f in report["findings"] if f["code"] == "definition-removed"]
    assert [f["severity"] for f in removed] == ["info"], report["findings"]
    assert 'tool "secret"' in removed[0]["message"] and "announced by list_changed" in removed[0]["message"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_fastmcp_hiding_a_tool_behind_list_changed_over_stdio_is_no_warning(db, fastmcp_python, mode):
    server = shlex.join(tee(db, fastmcp_python, tool("fastmcp_server.py"), "stdio", name="fastmcp"))
    hide(fastmcp_python, mode, "stdio", server)
    assert_the_removal_is_an_announced_change(db)
    shown = run(mcptap("show", "--db", str(db), "fastmcp"))  # the transcript says it under the new listing
    assert shown.returncode == 0 and b'info: definition-removed: tool "secret"' in shown.stdout, shown.stdout[-2000:]


def test_fastmcp_hiding_a_tool_behind_list_changed_over_http_is_no_warning(db, fastmcp_python):
    port = free_port()
    with http_server([fastmcp_python, tool("fastmcp_server.py"), "http", str(port)], port) as upstream, \
            mcptap_proxy(db, upstream) as proxy:
        hide(fastmcp_python, "legacy", "http", proxy.url + "/mcp")
        assert proxy.stop() == 0, proxy.errors
    assert_the_removal_is_an_announced_change(db)

