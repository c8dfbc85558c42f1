"""Pairing over HTTP (analyzer/analysis/session.py `http_frame`): an answer in an HTTP exchange can only
answer what that exchange carried (a GET stream: the session's outstanding requests by id), the
body of an HTTP error is the transport's, and in 2026-07-28 a client closing its request's
exchange cancels the request. The shapes are those real SDKs put on the wire (see
tests/e2e/test_e2e_* for the same on real traffic)."""

from tests.support.sessions import analyze, codes, found, handshake, http, interleaved, modern, note, ok, req

V = "2025-11-25"
H = handshake(V)
SESSIONLESS = {"protocol_version": V}
# what the TypeScript SDK's stateless server answers the client's standalone GET with
GET_405 = {"method": "GET", "status": 405, "response_type": "application/json", **SESSIONLESS}
METHOD_NOT_ALLOWED = '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Method not allowed."},"id":null}'
D = {"resultType": "complete"}
GONE = {"status": None, "response_type": None, "outcome": "error: Client disconnected."}
PAIRING = {"unknown-response-id", "duplicate-response", "response-to-notification", "error-id-null-with-known-id",
           "missing-response", "id-type-mismatch"}


def row_of(rows, seq):
    return next(r for r in rows if r[1] == seq and r[2] is None)


def test_the_error_body_of_a_refused_get_does_not_answer_the_notification_of_another_post():
    session = http(({}, H[:2]), (SESSIONLESS, [H[2]]), (GET_405, [("s2c", METHOD_NOT_ALLOWED)]),
                   (SESSIONLESS, [("c2s", req(1, "tools/list")), ("s2c", ok(1, {"tools": []}))]))
    analysis, rows, findings = analyze(session)
    assert not PAIRING & {f[3] for f in findings}, findings
    assert row_of(rows, 4)[4] == "error" and row_of(rows, 4)[7] is None  # answers nothing


def test_the_error_body_of_a_refused_get_does_not_answer_a_request_of_another_post():
    exchanges = [{}, SESSIONLESS, GET_405, SESSIONLESS]
    frames = [(*H[0], 0), (*H[1], 0), (*H[2], 1), ("c2s", req(1, "tools/list"), 3), ("s2c", METHOD_NOT_ALLOWED, 2),
              ("s2c", ok(1, {"tools": []}), 3)]
    analysis, rows, findings = analyze(interleaved(exchanges, frames))
    assert not PAIRING & {f[3] for f in findings}, findings
    assert row_of(rows, 6)[7] == 4 and row_of(rows, 4)[7] == 6  # tools/list paired with its own answer


def test_a_null_id_error_in_a_posts_answer_answers_what_that_post_carried():
    exchanges = [{}, SESSIONLESS, SESSIONLESS]
    frames = [(*H[0], 0), (*H[1], 0), ("c2s", note("notifications/initialized"), 1),
              ("c2s", req(1, "tools/list"), 2), ("s2c", METHOD_NOT_ALLOWED, 1), ("s2c", ok(1, {"tools": []}), 2)]
    hits = [f for f in analyze(interleaved(exchanges, frames))[2] if f[3] in PAIRING]
    assert [(f[1], f[3], f[6]) for f in hits] == [(5, "response-to-notification", 3)]  # not the request at 4


def test_a_refused_notification_may_be_answered_by_an_error_without_id():
    session = http(({}, H[:2]), ({**SESSIONLESS, "status": 400}, [H[2], ("s2c", METHOD_NOT_ALLOWED)]))
    assert not PAIRING & set(codes(session))


def test_a_request_refused_with_an_http_error_and_a_null_id_error_is_answered_by_it():
    refused = {**SESSIONLESS, "status": 400}
    session = http(({}, H[:2]), (SESSIONLESS, [H[2]]), (refused, [("c2s", req(1, "tools/list")),
                                                                    ("s2c", METHOD_NOT_ALLOWED)]))
    analysis, rows, findings = analyze(session)
    assert not PAIRING & {f[3] for f in findings}, findings
    assert row_of(rows, 5)[7] == 4 and analysis.method_stats["tools/list"]["errors"] == 1


def test_a_null_id_error_in_a_successful_posts_answer_still_hides_its_readable_id():
    session = http(({}, H[:2]), (SESSIONLESS, [H[2]]), (SESSIONLESS, [("c2s", req(1, "tools/list")),
                                                                      ("s2c", METHOD_NOT_ALLOWED)]))
    assert (5, "error-id-null-with-known-id") in found(session)


def test_an_answer_in_one_posts_exchange_cannot_answer_the_request_another_post_carried():
    exchanges = [{}, SESSIONLESS, SESSIONLESS, SESSIONLESS]
    frames = [(*H[0], 0), (*H[1], 0), (*H[2], 1), ("c2s", req(1, "tools/list"), 2),
              ("c2s", req(2, "prompts/list"), 3), ("s2c", ok(2, {"prompts": []}), 2), ("s2c", ok(2, {"prompts": []}), 3)]
    analysis, rows, findings = analyze(interleaved(exchanges, frames))
    hits = sorted((f[1], f[3], f[6]) for f in findings if f[3] in PAIRING)
    assert hits == [(4, "missing-response", None), (6, "unknown-response-id", 5)]
    assert row_of(rows, 7)[7] == 5  # prompts/list answered in its own exchange, not a duplicate


def test_an_answer_on_a_get_stream_answers_the_sessions_outstanding_request_by_id():
    stream = {"method": "GET", "response_type": "text/event-stream", **SESSIONLESS}
    exchanges = [{}, SESSIONLESS, stream, {**SESSIONLESS, "status": 202}]
    frames = [(*H[0], 0), (*H[1], 0), (*H[2], 1), ("c2s", req(1, "tools/list"), 3),
              ("s2c", ok(1, {"tools": []}), 2)]  # resumed on a GET: answers by id
    assert not PAIRING & set(codes(interleaved(exchanges, frames)))


def test_an_id_written_as_another_type_in_its_own_posts_answer_is_a_type_mismatch():
    session = http(({}, H[:2]), (SESSIONLESS, [H[2]]), (SESSIONLESS, [("c2s", req(7, "tools/list")),
                                                                      ("s2c", ok("7", {"tools": []}))]))
    assert (5, "id-type-mismatch") in found(session) and "missing-response" not in codes(session)


# 2026-07-28: closing the request (or its response stream) is the cancellation

def modern_call(id, gone):
    return ({**{"protocol_version": "2026-07-28"}, **(GONE if gone else {"status": 202})},
            [("c2s", modern(id, "tools/call", {"name": "slow", "arguments": {}}))])


def test_a_stateless_call_whose_client_closed_the_request_before_an_answer_is_cancelled_not_missing():
    listed = ({"protocol_version": "2026-07-28"}, [("c2s", modern(1, "tools/list")), ("s2c", ok(1, {"tools": [], **D}))])
    analysis, rows, findings = analyze(http(listed, modern_call(2, gone=True)))
    assert "missing-response" not in {f[3] for f in findings}, findings
    assert analysis.method_stats["tools/call"]["unanswered"] == 0


def test_a_stateless_call_left_unanswered_on_an_exchange_that_ended_normally_is_missing():
    listed = ({"protocol_version": "2026-07-28"}, [("c2s", modern(1, "tools/list")), ("s2c", ok(1, {"tools": [], **D}))])
    assert (3, "missing-response") in found(http(listed, modern_call(2, gone=False)))


def test_before_2026_a_client_disconnecting_does_not_cancel_its_request():
    gone = {**SESSIONLESS, **GONE}
    session = http(({}, H[:2]), (SESSIONLESS, [H[2]]), (gone, [("c2s", req(1, "tools/call", {"name": "slow"}))]))
    assert (4, "missing-response") in found(session)


def test_a_cancel_naming_initialize_after_its_answer_is_initialize_cancelled():
    cancel = note("notifications/cancelled", {"requestId": 0})
    hits = [f for f in analyze(H + [("c2s", cancel)])[2] if f[3] in ("initialize-cancelled", "cancel-unknown-request")]
    assert [(f[1], f[3], f[4], f[6]) for f in hits] == [(4, "initialize-cancelled", "error", 1)]
