"""The seed's test obligations (docs/json-rpc-2.0-profile.md, "Test obligations"), each a named
test over the classifier and the session analysis."""

import pytest

from mcptap.analysis.classify import kind_of, signature
from mcptap.wire.jsonwire import parse
from tests.support.sessions import analyze, codes, err, found, handshake, kinds, note, ok, req

H = handshake()


def kind(raw: str) -> str:
    return kind_of(signature(parse(raw).value))


@pytest.mark.parametrize("id_text, expected", [
    ("1", []), ("0", []), ("-7", []), ('"abc"', []), ('""', []),
    ("null", ["id-null"]), ("1.5", ["id-fractional"]),
])
def test_request_ids_of_every_json_rpc_form_make_requests(id_text, expected):
    raw = f'{{"jsonrpc":"2.0","id":{id_text},"method":"ping"}}'
    assert kind(raw) == "request"
    answer = f'{{"jsonrpc":"2.0","id":{id_text},"result":{{}}}}'
    assert [c for c in codes(H + [("c2s", raw), ("s2c", answer)]) if c.startswith("id-")] == expected


@pytest.mark.parametrize("value", ["true", "false"])
def test_boolean_ids_are_rejected_not_taken_for_numbers(value):
    raw = f'{{"jsonrpc":"2.0","id":{value},"method":"ping"}}'
    assert kind(raw) == "invalid"
    assert "id-invalid-type" in codes(H + [("c2s", raw)])


@pytest.mark.parametrize("id_text", ["0", '""', "null"])
def test_a_falsy_id_still_makes_a_request(id_text):
    assert kind(f'{{"jsonrpc":"2.0","id":{id_text},"method":"ping"}}') == "request"


def test_a_notification_is_told_by_its_absent_id():
    assert kind('{"jsonrpc":"2.0","method":"notifications/initialized"}') == "notification"


@pytest.mark.parametrize("raw, code", [
    ('{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}', "result-and-error"),
    ('{"jsonrpc":"2.0","id":1}', "no-result-or-error"),
])
def test_a_response_carries_exactly_one_of_result_and_error(raw, code):
    assert kind(raw) == "invalid"
    assert kind('{"jsonrpc":"2.0","id":1,"result":{}}') == "response"
    assert kind('{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"m"}}') == "error"
    assert code in codes(H + [("c2s", req(1, "ping")), ("s2c", raw)])


def test_response_objects_never_enter_method_dispatch():
    # a response sent the wrong way is an unknown response, never a method call of any kind
    analysis, rows, findings = analyze(H + [("c2s", ok(5, {"tools": []}))])
    assert [f[3] for f in findings] == ["unknown-response-id"]
    assert "initialize" in analysis.method_stats and len(analysis.method_stats) == 1
    assert kinds(H + [("c2s", ok(5))])[-1] == (4, -1, "response")


@pytest.mark.parametrize("raw, code", [
    ('{"jsonrpc":"1.0","id":1,"method":"ping"}', "bad-jsonrpc-version"),
    ('{"id":1,"method":"ping"}', "bad-jsonrpc-version"),
    ('{"jsonrpc":"2.0","id":1,"method":["ping"]}', "method-not-string"),
    ('{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}', "params-not-structured"),
    (f"[[{req(1, 'ping')}]]", "not-an-object"),
])
def test_invalid_version_method_params_and_an_extra_batch_wrapper_are_each_found(raw, code):
    assert code in codes(H + [("c2s", raw)])


def test_an_error_id_matches_its_request_when_it_could_be_read():
    assert codes(H + [("c2s", req(5, "tools/call", {"name": "x"})), ("s2c", err(5, -32602))]) == []
    assert codes(H + [("c2s", '{"jsonrpc":"2.0","id":5,"method":'), ("s2c", err(None, -32700))]) == ["parse-error"]
    assert codes(H + [("c2s", req(5, "tools/call", {"name": "x"})), ("s2c", err(None, -32602))]) == \
        ["error-id-null-with-known-id"]


def test_an_error_with_a_null_id_for_an_invalid_message_with_a_readable_id_is_found():
    bad = '{"jsonrpc":"1.0","id":8,"method":"ping"}'
    assert "error-id-null-with-known-id" in codes(H + [("c2s", bad), ("s2c", err(None))])


def test_a_malformed_notification_gets_no_response_and_has_no_side_effect():
    malformed_cancel = '{"jsonrpc":"2.0","method":"notifications/cancelled","params":"1"}'
    frames = H + [("c2s", req(1, "tools/call", {"name": "x"})), ("c2s", malformed_cancel)]
    assert "missing-response" in codes(frames)  # the request was not cancelled by it
    assert "response-to-notification" in codes(frames + [("s2c", err(None, -32602))])


def test_cancelled_requests_the_server_rightly_never_answers_are_not_missing():
    frames = H + [("c2s", req(1, "tools/call", {"name": "x"})),
                  ("c2s", note("notifications/cancelled", {"requestId": 1, "reason": "user"}))]
    assert codes(frames) == []


def test_a_batch_refused_whole_with_one_null_id_error_is_the_right_answer_where_batches_are_forbidden():
    frames = H + [("c2s", f"[{req(1, 'ping')},{req(2, 'ping')}]"), ("s2c", err(None, -32600))]
    assert codes(frames) == ["batch-used"]


def test_batch_elements_are_classified_one_by_one_with_their_index():
    frames = handshake("2025-03-26") + [("c2s", f'[{req(1, "ping")},{note("notifications/x")},42]')]
    assert [k for k in kinds(frames) if k[0] == 4] == [(4, -1, "batch"), (4, 0, "request"), (4, 1, "notification"),
                                                       (4, 2, "invalid")]
    assert (4, "not-an-object") in found(frames)


def test_in_2026_07_28_every_server_request_is_wrong_direction_whatever_its_method():
    from tests.support.sessions import modern
    frames = [("c2s", modern(1, "tools/list")), ("s2c", req(1, "ping")), ("s2c", ok(1, {"tools": [], "resultType": "complete"}))]
    assert "wrong-direction" in codes(frames)
    assert "missing-response" not in codes(frames)


def test_an_unknown_revision_is_judged_by_base_json_rpc_and_said_once():
    frames = [("c2s", req(1, "tools/list", [1])), ("s2c", ok(1)), ("c2s", req(None, "x/y"))]
    found_codes = codes(frames)
    assert found_codes.count("revision-unknown") == 1
    assert "params-not-object" not in found_codes and "unknown-method" not in found_codes  # MCP layer
    severities = {f[3]: f[4] for f in analyze(frames)[2]}
    assert severities["id-null"] == "warning"  # JSON-RPC discourages; MCP forbids


def test_the_same_finding_is_an_error_under_mcp():
    severities = {f[3]: f[4] for f in analyze(H + [("c2s", req(None, "ping"))])[2]}
    assert severities["id-null"] == "error"


def test_id_1_and_1_point_0_are_kept_apart():
    frames = H + [("c2s", req(1, "ping")), ("s2c", '{"jsonrpc":"2.0","id":1.0,"result":{}}')]
    assert codes(frames) == ["id-type-mismatch"]


def test_a_response_row_is_paired_with_its_request_and_has_the_latency():
    rows = analyze(H + [("c2s", req(1, "tools/list")), ("s2c", ok(1, {"tools": []}))])[1]
    by_seq = {r[1]: r for r in rows}
    assert by_seq[4][7] == 5 and by_seq[5][7] == 4
    assert by_seq[5][6] == "tools/list"
    assert by_seq[5][8] == pytest.approx(0.001)


def test_a_frame_nested_far_deeper_than_the_recursion_limit_is_analysed_without_crashing():
    deep = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":' + "[" * 50_000 + "]" * 50_000 + "}}}"
    assert codes(H + [("c2s", deep), ("s2c", ok(1, {"content": []}))]) == []
    deep_id = '{"jsonrpc":"2.0","id":' + "[" * 50_000 + "]" * 50_000 + ',"method":"ping"}'
    assert "id-invalid-type" in codes(H + [("c2s", deep_id)])


def test_bytes_that_are_not_utf8_are_a_parse_error_and_stdout_noise_on_stdio():
    analysis, rows, findings = analyze(H + [("s2c", b'{"jsonrpc":"2.0","method":"x\xff"}')])
    assert {f[3] for f in findings} == {"parse-error", "stdout-noise"}
    assert rows[-1][4] == "unparseable"
