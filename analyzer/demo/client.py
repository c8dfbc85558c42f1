"""A small MCP client on the standard library alone: starts a server command over stdio, runs a
short handshake-era session (initialize, tools, progress, ping), and closes it the way the spec
asks (close stdin, wait, then SIGTERM)."""

from __future__ import annotations

import json
import queue
import subprocess
import threading

REPLY_TIMEOUT_S = 10.0
EXIT_GRACE_S = 5.0


class DemoClient:
    def __init__(self, argv: list[str]):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, bufsize=0)
        self._replies: queue.Queue = queue.Queue()
        self._next_id = 0
        self.stderr_lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr_lines.append(line.decode("utf-8", "replace").rstrip("\n"))

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # not a message (a server logging to stdout)
            if isinstance(msg, dict) and "id" in msg and "method" not in msg:
                self._replies.put(msg)
        self._replies.put(None)

    def send(self, msg: dict) -> None:
        self.proc.stdin.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict | None = None) -> dict:
        req_id = self._next_id
        self._next_id += 1
        msg = {"jsonrpc": "2.0", "id": req_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        reply = self._replies.get(timeout=REPLY_TIMEOUT_S)
        if reply is None or reply.get("id") != req_id:
            raise RuntimeError(f"no answer to {method}")
        return reply

    def notify(self, method: str, params: dict | None = None) -> None:
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def close(self) -> int:
        self.proc.stdin.close()
        try:
            status = self.proc.wait(EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            status = self.proc.wait(EXIT_GRACE_S)
        self._stderr_reader.join(EXIT_GRACE_S)
        return status


def run_session(argv: list[str]) -> tuple[int, list[str]]:
    """The demo's session against `argv`: the server's exit status and its stderr lines."""
    client = DemoClient(argv)
    try:
        client.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "mcptap-demo-client", "version": "1.0.0"}})
        client.notify("notifications/initialized")
        client.request("tools/list")
        client.request("tools/call", {"name": "echo", "arguments": {"text": "hello through the tap"}})
        client.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 40}})
        client.request("tools/call", {"name": "count", "arguments": {"n": 3}, "_meta": {"progressToken": "p1"}})
        client.request("ping")
    finally:
        status = client.close()
    return status, client.stderr_lines
