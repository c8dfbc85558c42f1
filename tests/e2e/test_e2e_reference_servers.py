"""Three more real servers that run offline, through `mcptap record`: the reference servers
@modelcontextprotocol/server-filesystem and @modelcontextprotocol/server-memory (npm, on the
TypeScript SDK 1.32: the handshake era only) and mcp-server-git (PyPI, on the Python SDK 2.3.0:
both eras), each driven through most of its tools (a deliberate failure among them) by the
TypeScript SDK client (v1 'legacy', v2 'auto') and the Python SDK client ('legacy', 'auto'), each
in a folder of its own. A wiretap is the oracle for the bytes; the traffic is real and correct: no
error and no warning."""

import subprocess

import pytest

from tests.conftest import assert_no_false_findings, assert_no_security_findings
from tests.support.plan_clients import client_id, record_stdio, session_frames, tapped_frames

HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
CLIENTS = [("v1", "legacy"), ("v2", "auto"), ("python", "legacy"), ("python", "auto")]
SERVERS = ["filesystem", "memory", "git"]
SPEAKS_MODERN = {"filesystem": False, "memory": False, "git": True}
CASES = [(client, server) for server in SERVERS for client in CLIENTS]


def filesystem_plan(folder) -> tuple[list[str], dict]:
    data = folder / "data"
    data.mkdir()
    (data / "notes.txt").write_text("first line\nsecond line ✓\n", encoding="utf-8")
    d = str(data)
    plan = {
        "roots": [data.as_uri()],  # the server asks for roots and serves them instead of its arguments
        "calls": [
            ["list_allowed_directories", {}],
            ["list_directory", {"path": d}],
            ["read_text_file", {"path": f"{d}/notes.txt"}],
            ["read_text_file", {"path": f"{d}/notes.txt", "head": 1}],
            ["write_file", {"path": f"{d}/new.txt", "content": "héllo ✓\n"}],
            ["edit_file", {"path": f"{d}/new.txt", "edits": [{"oldText": "héllo", "newText": "hello"}]}],
            ["get_file_info", {"path": f"{d}/new.txt"}],
            ["create_directory", {"path": f"{d}/sub"}],
            ["move_file", {"source": f"{d}/new.txt", "destination": f"{d}/sub/new.txt"}],
            ["search_files", {"path": d, "pattern": "*.txt"}],
            ["directory_tree", {"path": d}],
            ["read_text_file", {"path": "/etc/hostname"}],  # outside the allowed folder: a tool error
        ],
    }
    return [d], plan


def memory_plan(folder) -> tuple[list[str], dict]:
    plan = {
        "env": {"MEMORY_FILE_PATH": str(folder / "memory.jsonl")},
        "calls": [
            ["create_entities", {"entities": [
                {"name": "Ada", "entityType": "person", "observations": ["wrote the first program ✓"]},
                {"name": "Engine", "entityType": "machine", "observations": []}]}],
            ["create_relations", {"relations": [{"from": "Ada", "to": "Engine", "relationType": "programmed"}]}],
            ["add_observations", {"observations": [{"entityName": "Ada", "contents": ["born 1815"]}]}],
            ["read_graph", {}],
            ["search_nodes", {"query": "Ada"}],
            ["open_nodes", {"names": ["Engine"]}],
            ["delete_observations", {"deletions": [{"entityName": "Ada", "observations": ["born 1815"]}]}],
            ["delete_relations", {"relations": [{"from": "Ada", "to": "Engine", "relationType": "programmed"}]}],
            ["delete_entities", {"entityNames": ["Engine"]}],
            ["add_observations", {"observations": [{"entityName": "Nobody", "contents": ["x"]}]}],  # a tool error
        ],
    }
    return [], plan


def git(repo, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, timeout=30)


def git_plan(folder) -> tuple[list[str], dict]:
    repo = folder / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "mcptap test")
    git(repo, "config", "user.email", "mcptap@example.com")
    (repo / "a.txt").write_text("one\n", encoding="utf-8")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "first ✓")
    (repo / "a.txt").write_text("one\ntwo\n", encoding="utf-8")  # an unstaged change
    (repo / "b.txt").write_text("bee\n", encoding="utf-8")
    r = str(repo)
    plan = {
        "calls": [
            ["git_status", {"repo_path": r}],
            ["git_log", {"repo_path": r, "max_count": 5}],
            ["git_show", {"repo_path": r, "revision": "HEAD"}],
            ["git_branch", {"repo_path": r, "branch_type": "local"}],
            ["git_diff_unstaged", {"repo_path": r}],
            ["git_add", {"repo_path": r, "files": ["a.txt", "b.txt"]}],
            ["git_diff_staged", {"repo_path": r}],
            ["git_commit", {"repo_path": r, "message": "second"}],
            ["git_create_branch", {"repo_path": r, "branch_name": "feature"}],
            ["git_checkout", {"repo_path": r, "branch_name": "feature"}],
            ["git_diff", {"repo_path": r, "target": "main"}],
            ["git_show", {"repo_path": r, "revision": "no-such-revision"}],  # a tool error
        ],
    }
    return ["--repository", r], plan


PLANS = {"filesystem": filesystem_plan, "memory": memory_plan, "git": git_plan}


@pytest.fixture(scope="module", params=CASES, ids=[f"{client_id(c)}-{s}" for c, s in CASES])
def recording(request, make_client, tmp_path_factory):
    client, server = request.param
    folder = tmp_path_factory.mktemp(f"{client_id(client)}-{server}")
    args, plan = PLANS[server](folder)
    argv = [*request.getfixturevalue(f"{server}_server"), *args]
    return client, server, record_stdio(make_client(*client), plan, argv, folder, server)


def test_a_reference_server_does_its_work_for_both_sdks_through_the_tee(recording):
    client, server, rec = recording
    calls = rec.out["calls"]
    assert [call["is_error"] for call in calls] == [False] * (len(calls) - 1) + [True], calls
    texts = [call["text"] for call in calls]
    if server == "filesystem":
        assert texts[2] == "first line\nsecond line ✓\n" and texts[3] == "first line"
        assert rec.out["server_requests"] == {"roots/list": 1}
    elif server == "memory":
        assert '"Ada"' in texts[3] and "born 1815" in texts[3]
    else:
        assert "first ✓" in texts[1] and "feature" in texts[9]
    assert rec.out["protocol_version"] in (MODERN if client[1] == "auto" and SPEAKS_MODERN[server] else HANDSHAKE,
                                           "handshake")


def test_every_line_of_a_reference_server_session_is_recorded_in_order(recording):
    client, server, rec = recording
    recorded, tapped = session_frames(rec.db), tapped_frames(rec.taps)
    assert len(recorded) == (2 if client == ("v2", "auto") else 1)  # v2 probes on a sibling process
    assert recorded == tapped


def test_real_traffic_with_reference_servers_gets_no_error_or_warning(recording):
    client, server, rec = recording
    report = assert_no_false_findings(rec.db)
    assert_no_security_findings(report)
    expected = MODERN if client[1] == "auto" and SPEAKS_MODERN[server] else HANDSHAKE
    assert report["sessions"][-1]["revision"] == expected
