"""The 2026-07-28 extensions and deprecations (analyzer/analysis/mcp.py tables, the rules in
analyzer/analysis/rules/extensions.py): the official tasks and skills extensions' methods known where
negotiated and a finding where not; a vendor extension's methods unknown but not a warning when
negotiated; Roots, Sampling, Logging and HTTP+SSE in a revision that deprecates them, `info`."""

from __future__ import annotations

import pytest

from mcptap.analysis import mcp
from tests.support.sessions import analyze, codes, handshake, http, modern, note, ok, req

D = {"resultType": "complete"}
CAPS = "io.modelcontextprotocol/clientCapabilities"
TASKS, SKILLS = mcp.TASKS_EXTENSION, mcp.SKILLS_EXTENSION
TASK = {"taskId": "t1", "status": "working", "createdAt": "2026-12-06T10:00:00Z",
        "lastUpdatedAt": "2026-12-06T10:00:00Z", "ttlMs": 60000}


def with_ext(*names, **settings) -> dict:
    """A request's _meta clientCapabilities declaring these extensions."""
    return {CAPS: {"extensions": {n: settings.get(n, {}) for n in names}}}


def discover(*names, settings=None) -> list:
    """server/discover, answered with a server that declares these extensions."""
    ext = {n: (settings or {}).get(n, {}) for n in names}
    return [("c2s", modern(90, "server/discover")),
            ("s2c", ok(90, {**D, "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}, "extensions": ext},
                          "ttlMs": 0, "cacheScope": "private"}))]


def task_session(client=(TASKS,), server=(TASKS,)) -> list:
    return discover(*server) + [
        ("c2s", modern(1, "tools/call", {"name": "slow", "arguments": {}}, **with_ext(*client))),
        ("s2c", ok(1, {"resultType": "task", **TASK})),
        ("c2s", modern(2, "tasks/get", {"taskId": "t1"}, **with_ext(*client))),
        ("s2c", ok(2, {**D, **TASK, "status": "completed", "result": {"content": []}})),
        ("c2s", modern(3, "tasks/update", {"taskId": "t1", "inputResponses": {}}, **with_ext(*client))),
        ("s2c", ok(3, D)),
    ]


def skills_session(client=(SKILLS,), settings=None, method="skills/list") -> list:
    return discover(SKILLS, settings=settings) + [
        ("c2s", modern(1, method, {"uri": "skill://refunds/"} if method != "skills/list" else {},
                       **with_ext(*client))),
        ("s2c", ok(1, {**D, "skills": []})),
    ]


# code: (frames that fire it, a near neighbour that must not)
CASES = {
    "extension-not-negotiated": (task_session(client=()), task_session()),
    "deprecated-feature": ([("c2s", modern(1, "tools/call", {"name": "x"})),
                            ("s2c", ok(1, {"resultType": "input_required", "inputRequests": {
                                "s": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}}}))],
                           [("c2s", modern(1, "tools/call", {"name": "x"})),
                            ("s2c", ok(1, {"resultType": "input_required", "inputRequests": {
                                "e": {"method": "elicitation/create", "params": {"message": "m", "requestedSchema": {
                                    "type": "object", "properties": {}}}}}}))]),
    "deprecated-transport": (
        http(({"endpoint": "/messages?s=1", "method": "GET", "response_type": "text/event-stream"}, []),
             ({}, handshake("2025-03-26")[:2]), ({}, handshake("2025-03-26")[2:])),
        http(({"endpoint": "/messages?s=1", "method": "GET", "response_type": "text/event-stream"}, []),
             ({}, handshake("2024-11-05")[:2]), ({}, handshake("2024-11-05")[2:]))),
}


def test_the_tasks_extensions_methods_negotiated_are_known_paired_and_not_judged_unknown():
    session, rows, found = analyze(task_session())
    assert [f[3] for f in found] == []
    paired = {r[1]: r[7] for r in rows if r[4] == "request"}
    assert all(p is not None for p in paired.values())  # every request answered and paired


@pytest.mark.parametrize("client, server, side", [((), (TASKS,), "client"), ((TASKS,), (), "server")])
def test_tasks_used_where_one_side_did_not_declare_the_extension_is_a_finding_naming_it(client, server, side):
    found = [f for f in analyze(task_session(client, server))[2] if f[3] == "extension-not-negotiated"]
    assert len(found) == 2 and all(f"which the {side} did not declare" in f[5] for f in found)


def test_a_create_task_result_without_the_extension_on_its_request_is_an_invalid_result_type():
    assert "result-type-invalid" in codes(task_session(client=()))
    assert "result-type-invalid" not in codes(task_session())


def test_the_methods_the_tasks_extension_removed_from_the_core_are_unknown_in_2026():
    frames = [("c2s", modern(1, "tasks/result", {"taskId": "t1"}, **with_ext(TASKS))), ("s2c", ok(1, D))]
    assert codes(frames) == ["unknown-method"]
    assert mcp.method_verdict("2025-11-25", mcp.C2S, "tasks/result", True) is None  # 2025-11-25's core


@pytest.mark.parametrize("method", ["skills/list", "skills/get"])
def test_the_skills_extensions_methods_negotiated_are_known_and_unnegotiated_a_finding(method):
    assert codes(skills_session(method=method)) == []
    assert codes(skills_session(client=(), method=method)) == ["extension-not-negotiated"]


def test_directory_read_needs_the_servers_directory_read_setting():
    read = "resources/directory/read"
    assert codes(skills_session(method=read, settings={SKILLS: {"directoryRead": True}})) == []
    assert codes(skills_session(method=read)) == ["extension-not-negotiated"]


def test_the_task_status_notification_is_the_servers_and_known_where_a_request_negotiated_tasks():
    status = ("s2c", note("notifications/tasks", {**TASK, "status": "completed", "result": {}}))
    assert codes(task_session() + [status]) == []
    assert "extension-not-negotiated" in codes(task_session(client=()) + [status])
    wrong = [("c2s", note("notifications/tasks", TASK))]
    assert codes(task_session() + wrong) == ["wrong-direction"]


def test_a_vendor_extensions_unknown_method_is_info_when_negotiated_and_a_warning_when_not():
    vendor = "com.example/search"
    frames = discover(vendor) + [("c2s", modern(1, "search/query", {}, **with_ext(vendor))), ("s2c", ok(1, D))]
    (found,) = analyze(frames)[2]
    assert (found[3], found[4]) == ("unknown-method", "info") and vendor in found[5]
    bare = discover() + [("c2s", modern(1, "search/query", {})), ("s2c", ok(1, D))]
    assert [(f[3], f[4]) for f in analyze(bare)[2]] == [("unknown-method", "warning")]


def test_before_2026_the_extensions_methods_are_unknown_whatever_the_capabilities_say():
    caps = {"tools": {}, "extensions": {SKILLS: {}}}
    asked = [("c2s", req(1, "skills/list", {})), ("s2c", ok(1, {"skills": []}))]
    assert "unknown-method" in codes(handshake("2025-11-25", server_caps=caps,
                                               client_caps={"extensions": {SKILLS: {}}}) + asked)


def test_logging_in_2026_is_reported_once_and_not_in_2025():
    level = {"io.modelcontextprotocol/logLevel": "info"}
    frames = []
    for i in (1, 2):
        frames += [("c2s", modern(i, "tools/call", {"name": "x"}, **level)),
                   ("s2c", note("notifications/message", {"level": "info", "data": "d"})),
                   ("s2c", ok(i, {**D, "content": []}))]
    found = [f for f in analyze(frames)[2] if f[3] == "deprecated-feature"]
    assert [(f[1], f[4]) for f in found] == [(1, "info")] and "Logging" in found[0][5] and "SEP-2577" in found[0][5]
    old = handshake("2025-11-25") + [("c2s", req(1, "logging/setLevel", {"level": "info"})), ("s2c", ok(1)),
                                     ("s2c", note("notifications/message", {"level": "info", "data": "d"}))]
    assert "deprecated-feature" not in codes(old)


def test_roots_and_sampling_asked_in_one_round_are_both_named():
    frames = [("c2s", modern(1, "tools/call", {"name": "x"})),
              ("s2c", ok(1, {"resultType": "input_required", "inputRequests": {
                  "r": {"method": "roots/list"},
                  "s": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}}}))]
    (found,) = [f for f in analyze(frames)[2] if f[3] == "deprecated-feature"]
    assert "Roots" in found[5] and "Sampling" in found[5]


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_code_fires_on_its_example(code):
    assert code in codes(CASES[code][0])


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_codes_near_neighbour_does_not_fire_it(code):
    assert code not in codes(CASES[code][1])


def test_the_tasks_extensions_messages_are_checked_against_the_schema_it_publishes():
    pytest.importorskip("jsonschema_rs")
    broken = discover(TASKS) + [
        ("c2s", modern(1, "tools/call", {"name": "slow", "arguments": {}}, **with_ext(TASKS))),
        ("s2c", ok(1, {"resultType": "task", "taskId": "t1", "status": "working"})),
        ("c2s", modern(2, "tasks/get", {}, **with_ext(TASKS))),
        ("s2c", ok(2, {**D, **TASK, "status": "completed", "result": {"content": []}}))]
    found = [(f[1], f[5]) for f in analyze(broken)[2] if f[3] == "schema-violation"]
    assert [seq for seq, _ in found] == [4, 5] and "CreateTaskResult" in found[0][1] and "taskId" in found[1][1]
    assert [f for f in analyze(task_session())[2] if f[3] == "schema-violation"] == []
