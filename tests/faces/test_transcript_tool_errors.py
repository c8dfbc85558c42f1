"""The transcript (mcptap show) tells a tool's error apart from a success, as the latency table,
the JSON report and the pandas API count it."""

from mcptap import store
from mcptap.analysis import policy
from mcptap.report.transcript import transcript

INIT = (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},'
        b'"clientInfo":{"name":"c","version":"1"}}}')
READY = (b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},'
         b'"serverInfo":{"name":"s","version":"1"}}}')
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def call(id_: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t"}}' % id_


def test_a_tools_call_result_with_is_error_reads_as_a_tool_error_and_a_success_does_not(tmp_path):
    path = str(tmp_path / "t.db")
    conn = store.connect(path)
    failed = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"boom"}],"isError":true}}'
    worked = b'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"isError: no"}],"isError":false}}'
    with store.write_transaction(conn):
        store.insert_session(conn, {"id": "s", "transport": "stdio", "started_at": 1000.0, "ended_at": 1002.0})
        store.insert_frames(conn, "s", [(1, 1000.1, "c2s", INIT, 0), (2, 1000.2, "s2c", READY, 0),
                                        (3, 1000.3, "c2s", INITIALIZED, 0), (4, 1000.4, "c2s", call(1), 0),
                                        (5, 1000.5, "s2c", failed, 0), (6, 1000.6, "c2s", call(2), 0),
                                        (7, 1000.7, "s2c", worked, 0)])
    lines = list(transcript(conn, "s", policy=policy.Policy()))
    conn.close()
    by_seq = {line.split()[0]: line for line in lines if line.split() and line.split()[0].isdigit()}
    assert "response id=1 tool error" in by_seq["5"]
    assert "response id=2" in by_seq["7"] and "tool error" not in by_seq["7"]
