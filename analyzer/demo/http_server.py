"""The demo server of server.py over Streamable HTTP, on the standard library alone: POST /mcp
answers a request with one JSON object, or, for `count` (which reports progress), with an SSE
stream; DELETE ends the session. With --noisy it makes a classic mistake: it answers the client's
notifications with 200 and a body instead of 202 Accepted. Prints "listening on PORT" first."""

from __future__ import annotations

import json
import sys
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mcptap.demo.server import handle

NOISY = "--noisy" in sys.argv


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    session_id = uuid.uuid4().hex

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            msg = json.loads(body)
        except ValueError:
            return self._json(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}})
        if not isinstance(msg, dict) or "id" not in msg:  # a notification (or a response)
            if NOISY:
                return self._json(200, {})
            self.send_response(202)
            self.send_header("Content-Length", "0")
            return self.end_headers()
        if msg.get("method") == "tools/call" and (msg.get("params") or {}).get("name") == "count":
            return self._stream(msg)
        answers: list[dict] = []
        handle(msg, answers.append)
        extra = {"Mcp-Session-Id": self.session_id} if msg.get("method") == "initialize" else {}
        self._json(200, answers[0], extra)

    def do_DELETE(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # no server-initiated stream here
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _json(self, status: int, value: dict, headers: dict | None = None) -> None:
        out = json.dumps(value, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        for name, header in (headers or {}).items():
            self.send_header(name, header)
        self.end_headers()
        self.wfile.write(out)

    def _stream(self, msg: dict) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()

        def event(value: dict) -> None:
            self.wfile.write(b"event: message\r\ndata: " + json.dumps(value, separators=(",", ":")).encode() + b"\r\n\r\n")
            self.wfile.flush()

        handle(msg, event)
        self.close_connection = True


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 0),
                                 Handler)
    print(f"listening on {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
