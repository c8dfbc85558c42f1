"""An MCP server over Streamable HTTP that tests SSE resumption the way the official conformance
suite's `sse-retry` scenario does (SEP-1699), on the standard library alone. Usage:
sse_retry_server.py PORT RETRY_MS.

initialize is answered in JSON with a session id, notifications 202, tools/list names the tool
`resume`. A tools/call is answered with an SSE stream holding only a priming event (an id, a
`retry: RETRY_MS`, an empty `data`) that the server ends 50 ms later; a GET carrying
`Last-Event-ID` gets another priming event and the call's result, then its end. A GET without it
(the client's standalone stream) gets a priming event and stays open. A call of the tool `burst`
is answered with a priming event, a progress notification and the result, and the stream stays
open a second more (a client that disconnects at once leaves it before its end); `burst-end` the
same, its stream ended at once. Each stream is
written in chunks as the SDKs write them. `GET /log` answers what was seen: each GET's time and
Last-Event-ID, the id that primed the call's stream and when that stream was ended (time.time())."""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SESSION = "sse-retry-session"
LOG: dict = {"gets": [], "closed_at": None, "primed": None}
PENDING: list = []  # the id of the call to answer on the resumed stream
STOP = threading.Event()
COUNTER = iter(range(1, 1 << 30))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    retry_ms = 1000

    def log_message(self, *args):
        pass

    def _stream_head(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Mcp-Session-Id", SESSION)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _prime(self) -> str:
        event_id = f"prime-{next(COUNTER)}"
        self._chunk(b"id: %s\nretry: %d\ndata: \n\n" % (event_id.encode(), self.retry_ms))
        return event_id

    def _json(self, status: int, body: dict | None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if data:
            self.send_header("Content-Type", "application/json")
        self.send_header("Mcp-Session-Id", SESSION)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/log":
            self._json(200, LOG)
            return
        last = self.headers.get("Last-Event-ID")
        LOG["gets"].append([time.time(), last])
        self._stream_head()
        self._prime()
        if last is None:  # the standalone stream: held open
            STOP.wait()
            return
        if PENDING:
            result = {"jsonrpc": "2.0", "id": PENDING.pop(), "result": {"content": [{"type": "text", "text": "resumed"}]}}
            self._chunk(b"event: message\nid: ev-%d\ndata: %s\n\n" % (next(COUNTER), json.dumps(result).encode()))
        self._chunk(b"")

    def do_DELETE(self):
        self._json(200, None)

    def do_POST(self):
        message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            self._json(202, None)
        elif method == "initialize":
            self._json(200, {"jsonrpc": "2.0", "id": ident, "result": {
                "protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "sse-retry", "version": "1"}}})
        elif method == "tools/list":
            self._json(200, {"jsonrpc": "2.0", "id": ident, "result": {"tools": [
                {"name": "resume", "description": "Answered on the resumed stream.", "inputSchema": {"type": "object"}}]}})
        elif method == "tools/call" and message["params"]["name"] in ("burst", "burst-end"):
            self._stream_head()
            self._prime()
            progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": ident, "progress": 1}}
            result = {"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "burst"}]}}
            held = message["params"]["name"] == "burst"
            self._chunk(b"data: %s\n\n" % json.dumps(progress).encode())
            self._chunk(b"id: ev-%d\ndata: %s\n\n" % (next(COUNTER), json.dumps(result).encode()))
            if held:
                time.sleep(1)
            try:
                self._chunk(b"")
            except OSError:
                pass
        elif method == "tools/call":
            PENDING.append(ident)
            self._stream_head()
            LOG["primed"] = self._prime()
            time.sleep(0.05)
            LOG["closed_at"] = time.time()
            self._chunk(b"")
        else:
            self._json(200, {"jsonrpc": "2.0", "id": ident, "result": {}})


def main() -> None:
    port, Handler.retry_ms = int(sys.argv[1]), int(sys.argv[2])
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    try:
        server.serve_forever()
    finally:
        STOP.set()


if __name__ == "__main__":
    main()
