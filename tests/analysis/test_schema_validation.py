"""Each message against its revision's schema (analyzer/analysis/schema_validation.py, results.py): one finding
per message and JSON path, in the schema's words; what the schema permits (extension members,
_meta) is not flagged; results against the outputSchema the session declared."""

import os

import pytest

from mcptap.analysis import policy as policy_mod
from mcptap.analysis import results
from tests.support.sessions import analyze, handshake, modern, note, ok, req

H = handshake("2025-11-25")
OLD = handshake("2024-11-05")
TYPED = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def messages(frames, code="schema-violation", **kw) -> list[tuple[int, str]]:
    return [(f[1], f[5]) for f in analyze(frames, **kw)[2] if f[3] == code]


def call_result(result, request=None):
    return H + [("c2s", req(1, "tools/call", request or {"name": "t"})), ("s2c", ok(1, result))]


def test_a_tools_call_without_a_name_is_found_at_its_path_with_the_schemas_type():
    assert messages(H + [("c2s", req(1, "tools/call", {"arguments": {}}))]) == [
        (4, "$.params.name: required by the schema, absent (CallToolRequest, 2025-11-25 schema)")]


def test_a_member_of_the_wrong_type_says_what_the_schema_wants_and_what_came():
    [(_, message)] = messages(H + [("c2s", req(1, "tools/call", {"name": 5}))])
    assert message.startswith("$.params.name: should be a valid string, not a number")


def test_a_content_block_of_an_unknown_type_names_the_types_the_revision_has():
    [(seq, message)] = messages(call_result({"content": [{"type": "text", "text": "a"}, {"type": "html", "text": "b"}]}))
    assert seq == 5 and message.startswith('$.result.content[1].type: "html" is not one of the schema\'s values: '
                                           "'text', 'image', 'audio', 'resource_link', 'resource'")


def test_a_content_block_of_a_known_type_lacking_a_member_is_judged_as_that_type():
    [(_, message)] = messages(call_result({"content": [{"type": "image", "data": "AA=="}]}))
    assert message.startswith("$.result.content[0].mimeType: required by the schema, absent (ImageContent)")


def test_a_value_outside_the_schemas_set_lists_the_set():
    [(_, message)] = messages(H + [("c2s", req(1, "logging/setLevel", {"level": "loud"})), ("s2c", ok(1))])
    assert message.startswith('$.params.level: "loud" is not one of the schema\'s values: \'alert\'')


def test_a_2026_07_28_result_without_result_type_is_found_and_one_with_it_is_not():
    assert [m for _, m in messages([("c2s", modern(1, "tools/call", {"name": "t"})), ("s2c", ok(1, {"content": []}))])] \
        == ["$.result.resultType: required by the schema, absent (CallToolResult, 2026-07-28 schema)"]
    assert messages([("c2s", modern(1, "tools/call", {"name": "t"})),
                     ("s2c", ok(1, {"content": [], "resultType": "complete"}))]) == []


def test_extension_members_and_meta_where_the_schema_allows_them_are_not_flagged():
    frames = call_result({"content": [{"type": "text", "text": "a", "x-vendor": 1, "_meta": {"com.example/k": [1]}}],
                          "_meta": {"com.example/trace": "t"}, "vendorExtra": {"a": 1}},
                         {"name": "t", "arguments": {}, "_meta": {"progressToken": "p", "com.example/k": 1}})
    assert messages(frames) == []


def test_each_path_of_a_message_is_one_finding_and_other_messages_are_apart():
    frames = H + [("c2s", req(1, "tools/call", {"arguments": 3})), ("c2s", req(2, "tools/call", {"name": "t"})),
                  ("s2c", ok(1, {"content": [{"type": "text"}]})), ("s2c", ok(2, {"content": []}))]
    found = messages(frames)
    assert [(seq, m.split(":")[0]) for seq, m in found] == [
        (4, "$.params.arguments"), (4, "$.params.name"), (6, "$.result.content[0].text")]


def test_a_revision_before_2025_11_25_is_judged_by_the_members_it_shares_with_2025_11_25():
    assert messages(OLD + [("c2s", req(1, "tools/call", {"name": "t"})),
                           ("s2c", ok(1, {"content": [{"type": "text", "text": "a"}]}))]) == []
    [(_, message)] = messages(OLD + [("c2s", req(1, "tools/call", {})), ("s2c", ok(1, {"content": []}))])
    assert message.endswith("(CallToolRequest, 2025-11-25 schema)")


def test_what_other_rules_say_already_is_not_said_again():
    params_array = H + [("c2s", req(1, "tools/list", [1])), ("s2c", ok(1, {"tools": []}))]
    assert messages(params_array) == []
    meta_missing = [("c2s", req(1, "tools/list", {})), ("s2c", ok(1, {"tools": [], "resultType": "complete",
                                                                       "ttlMs": 0, "cacheScope": "private"}))]
    assert messages(meta_missing, revision="2026-07-28") == []


def test_a_message_of_no_method_the_revision_defines_is_left_to_other_rules():
    assert messages(H + [("c2s", req(1, "x/custom", {"name": 5})), ("s2c", ok(1, {"anything": 1}))]) == []


def test_silencing_the_codes_skips_the_checks_altogether():
    quiet = policy_mod.build(ignore=["schema-violation", "structured-content-mismatch"])
    assert messages(H + [("c2s", req(1, "tools/call", {}))], policy=quiet) == []
    assert results.MessageChecks.hooks("2025-11-25", quiet, None)[0] is results._nothing


def listed(output_schema):
    return H + [("c2s", req(1, "tools/list")), ("s2c", ok(1, {"tools": [
        {"name": "t", "inputSchema": {"type": "object"}, "outputSchema": output_schema}]}))]


@pytest.mark.parametrize("result, found", [
    ({"content": [], "structuredContent": {"n": "x"}}, ['$.result.structuredContent.n: "x" is not of type "integer"']),
    ({"content": [], "structuredContent": {}}, ['$.result.structuredContent: "n" is a required property']),
    ({"content": []}, ["$.result.structuredContent: absent, but tool 't' declared an outputSchema"]),
    ({"content": [], "structuredContent": {"n": 1}}, []),
    ({"content": [], "structuredContent": {"n": "x"}, "isError": True}, []),
])
def test_structured_content_is_judged_by_the_output_schema_the_session_declared(result, found):
    frames = listed(TYPED) + [("c2s", req(2, "tools/call", {"name": "t"})), ("s2c", ok(2, result))]
    assert [m.split(" (")[0] for _, m in messages(frames, "structured-content-mismatch")] == found


def test_a_tool_the_session_never_listed_or_listed_without_output_schema_is_not_judged():
    call = [("c2s", req(2, "tools/call", {"name": "t"})), ("s2c", ok(2, {"content": [], "structuredContent": {"n": "x"}}))]
    assert messages(H + call, "structured-content-mismatch") == []
    assert messages(listed(None)[:-1] + [("s2c", ok(1, {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}))]
                    + call, "structured-content-mismatch") == []


def test_an_output_schema_that_refers_elsewhere_is_never_fetched_and_not_judged():
    remote = {"type": "object", "$ref": "http://127.0.0.1:9/schema.json"}
    frames = listed(remote) + [("c2s", req(2, "tools/call", {"name": "t"})),
                               ("s2c", ok(2, {"content": [], "structuredContent": {"n": "x"}}))]
    assert messages(frames, "structured-content-mismatch") == []


def test_output_schemas_are_compiled_once_each_and_the_cache_is_bounded():
    results._COMPILED.clear()
    first = results.compiled(TYPED)
    assert results.compiled(dict(reversed(list(TYPED.items())))) is first
    for n in range(results.COMPILED_MAX + 10):
        results.compiled({"type": "object", "maxProperties": n})
    assert len(results._COMPILED) == results.COMPILED_MAX


def test_a_notification_is_judged_too():
    [(_, message)] = messages(H + [("s2c", note("notifications/progress", {"progressToken": "p"}))])
    assert message.startswith("$.params.progress: required by the schema, absent")


def test_a_2026_07_28_result_is_judged_as_final_or_interim_by_its_result_type():
    call = ("c2s", modern(1, "tools/call", {"name": "t"}))
    bad_block = {"content": [{"type": "html"}], "resultType": "complete"}
    assert [m.split(" (")[0] for _, m in messages([call, ("s2c", ok(1, bad_block))])] == [
        '$.result.content[0].type: "html" is not one of the schema\'s values: \'text\', \'image\', \'audio\', '
        "'resource_link', 'resource'"]
    elicit = {"resultType": "input_required", "inputRequests": {"a": {"method": "elicitation/create", "params": {}}}}
    [(_, message)] = messages([call, ("s2c", ok(1, elicit))])
    assert message.startswith("$.result.inputRequests.a.params.message: required by the schema, absent (ElicitRequest)")
    assert message.endswith("(InputRequiredResult, 2026-07-28 schema)")


def test_without_jsonschema_rs_the_models_alone_give_the_same_verdicts(monkeypatch):
    from mcptap.analysis import schema_validation as schema

    monkeypatch.setattr(schema, "jsonschema_rs", None)
    schema.checker.cache_clear(), schema._built.cache_clear()
    try:
        assert schema.checker("2025-11-25", "request", "c2s", "tools/call").quick is None
        [(_, message)] = messages(H + [("c2s", req(1, "tools/call", {"arguments": {}}))])
        assert message.startswith("$.params.name: required by the schema, absent")
        assert messages(call_result({"content": [{"type": "text", "text": "a", "x-vendor": 1}]})) == []
    finally:
        schema.checker.cache_clear(), schema._built.cache_clear()



def test_a_task_augmented_tools_call_answered_by_create_task_result_is_no_schema_violation_but_a_bare_one_is(tmp_path):
    """2025-11-25: a tools/call carrying `task` is answered by a CreateTaskResult (no `content`),
    which the revision's models leave out: not judged; an answer without `content` or `task` is."""
    from mcptap import engine
    from tests.analysis.test_logical_operations import ok, stored, task_session

    def schema_findings(fs, name):
        (tmp_path / name).mkdir()
        return [f for f in engine.analyze(stored(tmp_path / name, fs)).findings if f.code == "schema-violation"]

    assert schema_findings(task_session(), "task") == []
    bare = task_session()
    bare[-1] = bare[-1][:3] + (ok(1, {"taskId": "T1"}).encode(),)
    assert [f.frame_seq for f in schema_findings(bare, "bare")] == [bare[-1][0]]


def test_the_schemas_cache_is_rebuilt_when_missing_or_damaged_and_gives_the_same_checks(tmp_path, monkeypatch):
    """The JSON Schemas of the checks are kept in a cache file per mcp-types and pydantic version:
    a process without one builds them from the models and writes it; one that is not JSON, or not
    of that shape, is rebuilt; the checks it gives judge as those built from the models."""
    import subprocess
    import sys

    code = ("import sys; from mcptap.analysis import schema_validation as schema\n"
            "c = schema.checker('2025-11-25', 'request', 'c2s', 'tools/call')\n"
            "print(c.schema, c.quick.is_valid({'params': {'name': 't'}}), c.quick.is_valid({'params': {}}),\n"
            "      'pydantic' in sys.modules)\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}

    def run():
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert run() == ["CallToolRequest", "True", "False", "True"]  # built from the models
    [cache] = (tmp_path / "mcptap").glob("schemas-*.json")
    assert run() == ["CallToolRequest", "True", "False", "False"]  # read: no model loaded
    for damaged in (b"{not json", b'{"checks": []}'):
        cache.write_bytes(damaged)
        assert run() == ["CallToolRequest", "True", "False", "True"]
    assert run()[-1] == "False"


def test_the_exact_path_hands_the_schema_check_the_frame_it_read_and_it_is_not_parsed_again(monkeypatch):
    import types

    import orjson

    from mcptap.analysis import schema_validation as schema
    from mcptap.analysis.session import SessionAnalysis

    parsed = []
    counting = types.SimpleNamespace(JSONDecodeError=orjson.JSONDecodeError, dumps=orjson.dumps,
                                     loads=lambda raw: parsed.append(raw) or orjson.loads(raw))
    monkeypatch.setattr(schema, "orjson", counting)
    frames = H + [("c2s", req(1, "tools/call", {"arguments": {}})), ("s2c", ok(1, {"content": []}))]
    analysis = SessionAnalysis("s", revision="2025-11-25", revision_source="option", stdio=True, ended=True,
                               exact_only=True)
    analysis.feed([(i, 1000.0 + i, d, raw.encode()) for i, (d, raw) in enumerate(frames, 1)])
    analysis.end()
    found = [f[5] for f in analysis.take_findings() if f[3] == "schema-violation"]
    assert found == ["$.params.name: required by the schema, absent (CallToolRequest, 2025-11-25 schema)"]
    assert parsed == []
