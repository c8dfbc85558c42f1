"""Transport rules beyond the fire/neighbour pairs of test_rules.py: where they must stay quiet."""

from tests.support.sessions import analyze, codes, handshake, http, modern, note, ok, req

V = "2025-11-25"
H25 = handshake(V)
LIST = [("c2s", req(1, "tools/list")), ("s2c", ok(1, {"tools": []}))]
TRANSPORT = {"session-id-missing", "session-id-mismatch", "protocol-version-header-missing",
             "protocol-version-header-mismatch", "bad-content-type", "notification-not-accepted"}


def test_the_initialize_post_needs_neither_a_session_id_nor_a_version_header():
    session = http(({"assigned_session": "S1"}, H25[:2]), ({"mcp_session_id": "S1", "protocol_version": V}, [H25[2]]))
    assert not TRANSPORT & set(codes(session))


def test_legacy_http_sse_sessions_are_not_judged_by_streamable_http_rules():
    stream = ({"method": "GET", "endpoint": "/messages/?session_id=a", "response_type": "text/event-stream"}, [])
    posts = [({"status": 202, "response_type": "text/plain"}, [m]) for m in H25[:1] + H25[2:]]
    session = http(stream, *posts, ({"status": 202}, [LIST[0]]))
    assert not TRANSPORT & set(codes(session))


def test_a_server_without_session_ids_asks_for_none():
    session = http(({}, H25[:2]), ({"protocol_version": V}, [H25[2]]), ({"protocol_version": V}, LIST))
    assert not TRANSPORT & set(codes(session))


def test_a_2025_03_26_session_needs_no_version_header():
    h = handshake("2025-03-26")
    session = http(({"assigned_session": "S"}, h[:2]), ({"mcp_session_id": "S"}, [h[2]]), ({"mcp_session_id": "S"}, LIST))
    assert not TRANSPORT & set(codes(session))


def test_a_stateless_post_whose_header_disagrees_with_its_meta_is_a_mismatch():
    call = [("c2s", modern(1, "tools/list")), ("s2c", ok(1, {"tools": [], "resultType": "complete"}))]
    assert "protocol-version-header-mismatch" in codes(http(({"protocol_version": "2025-11-25"}, call)))
    assert not TRANSPORT & set(codes(http(({"protocol_version": "2026-07-28"}, call))))
    assert "protocol-version-header-missing" in codes(http(({}, call)))


def test_a_refused_notification_is_reported_with_its_status():
    session = http(({"assigned_session": "S1"}, H25[:2]),
                   ({"mcp_session_id": "S1", "protocol_version": V, "status": 400}, [H25[2]]))
    found = [f for f in analyze(session)[2] if f[3] == "notification-not-accepted"]
    assert len(found) == 1 and "answered 400" in found[0][5] and found[0][1] == 3


def test_an_error_answer_may_carry_any_content_type():
    session = http(({"assigned_session": "S1"}, H25[:2]), ({"mcp_session_id": "S1", "protocol_version": V}, [H25[2]]),
                   ({"mcp_session_id": "S1", "protocol_version": V, "status": 404, "response_type": "text/plain"},
                    [LIST[0]]))
    assert "bad-content-type" not in codes(session)


def test_the_revision_comes_from_the_version_header_when_the_capture_began_mid_session():
    session = http(({"mcp_session_id": "S1", "protocol_version": "2025-06-18"}, LIST))
    analysis = analyze(session)[0]
    assert (analysis.revision, analysis.revision_source) == ("2025-06-18", "header")


def test_a_notification_answered_202_is_accepted():
    session = http(({"assigned_session": "S1"}, H25[:2]),
                   ({"mcp_session_id": "S1", "protocol_version": V, "status": 202}, [("c2s", note("notifications/initialized"))]))
    assert "notification-not-accepted" not in codes(session)
