"""Malformed traffic is data, never an exception: any sequence of frames, however wrong, gives
one messages row per frame (plus one per batch element) and findings, under every revision."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcptap.analysis.revision import detect
from mcptap.analysis.session import SessionAnalysis

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from(["", "2.0", "1.0", "ping", "initialize", "tools/call", "notifications/cancelled",
                                     "notifications/progress", "notifications/initialized", "x/y"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["a", "_meta", "progressToken", "progress", "requestId", "protocolVersion", "capabilities",
                     "resultType", "code", "message"]), inner, max_size=3), max_leaves=6)
members = st.fixed_dictionaries({}, optional={
    "jsonrpc": st.one_of(st.just("2.0"), scalars),
    "id": st.one_of(st.integers(0, 3), st.sampled_from(["1", "2"]), st.none(), st.booleans(), st.just(1.5)),
    "method": st.one_of(st.sampled_from(["ping", "initialize", "tools/list", "tools/call", "notifications/cancelled",
                                         "notifications/progress", "notifications/initialized", "sampling/createMessage",
                                         "server/discover", "x/y"]), scalars),
    "params": values,
    "result": values,
    "error": st.one_of(values, st.fixed_dictionaries({"code": st.integers(-32700, 0), "message": st.text(max_size=3)})),
})
messages = st.one_of(members.map(lambda m: json.dumps(m)), values.map(json.dumps))
frames = st.one_of(
    messages,
    st.lists(messages, max_size=3).map(lambda ms: "[" + ",".join(ms) + "]"),
    st.binary(max_size=12),
    st.just('{"jsonrpc":"2.0","id":1,"method":"ping","id":2}'),
    st.just("[" * 3000 + "]" * 3000),
)
sessions = st.lists(st.tuples(st.sampled_from(["c2s", "s2c"]), frames), max_size=25)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions, st.sampled_from([None, "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", "9999"]),
       st.booleans())
def test_any_traffic_is_analysed_without_an_exception_and_every_frame_has_its_row(session, revision, stdio):
    detected = detect((seq, float(seq), d, raw) for seq, (d, raw) in enumerate(session, 1))
    assert detected.source in ("initialize", "meta", "unknown")
    analysis = SessionAnalysis("s", revision=revision, revision_source="option", stdio=stdio, ended=True)
    for seq, (direction, raw) in enumerate(session, 1):
        analysis.frame(seq, float(seq), direction, raw)
    analysis.end()
    rows = analysis.take_rows()
    frame_rows = sorted(r[1] for r in rows if r[2] is None)
    assert frame_rows == list(range(1, len(session) + 1))
    for f in analysis.take_findings():
        assert f[4] in ("error", "warning", "info") and f[5]
