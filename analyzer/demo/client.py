"""A small MCP client on the standard library alone: a short handshake-era session (initialize,
tools, progress, ping) against a server command over stdio, closed the way the spec asks (close
stdin, wait, then SIGTERM), or against a Streamable HTTP endpoint, closed with a DELETE."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import urllib.request

REPLY_TIMEOUT_S = 10.0
EXIT_GRACE_S = 30.0  # the tee exits once its recorder has stored the session: seconds on a busy machine


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


class HttpDemoClient:
    """The same session over Streamable HTTP (urllib): JSON answers and SSE streams."""

    def __init__(self, url: str):
        self.url = url
        self.session_id: str | None = None
        self.version: str | None = None
        self._next_id = 0

    def _post(self, msg: dict) -> list[dict]:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.version:
            headers["MCP-Protocol-Version"] = self.version
        req = urllib.request.Request(self.url, data=json.dumps(msg, separators=(",", ":")).encode(),
                                     headers=headers, method="POST")
        with urllib.request.urlopen(req, timeout=REPLY_TIMEOUT_S) as resp:
            self.session_id = resp.headers.get("Mcp-Session-Id") or self.session_id
            body = resp.read()
            if resp.headers.get("Content-Type", "").startswith("text/event-stream"):
                return [json.loads(line[5:]) for line in body.splitlines() if line.startswith(b"data:")]
            return [json.loads(body)] if body and resp.status == 200 else []

    def request(self, method: str, params: dict | None = None) -> dict:
        req_id = self._next_id
        self._next_id += 1
        msg = {"jsonrpc": "2.0", "id": req_id, "method": method, **({"params": params} if params is not None else {})}
        answers = [m for m in self._post(msg) if m.get("id") == req_id and "method" not in m]
        if not answers:
            raise RuntimeError(f"no answer to {method}")
        return answers[0]

    def notify(self, method: str, params: dict | None = None) -> None:
        self._post({"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})})

    def close(self) -> int:
        req = urllib.request.Request(self.url, method="DELETE", headers={
            "Mcp-Session-Id": self.session_id or "", "MCP-Protocol-Version": self.version or ""})
        with urllib.request.urlopen(req, timeout=REPLY_TIMEOUT_S) as resp:
            resp.read()
        return 0


def session(client) -> None:
    """The demo's calls: initialize, tools, progress, ping."""
    init = client.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                         "clientInfo": {"name": "mcptap-demo-client", "version": "1.0.0"}})
    if isinstance(client, HttpDemoClient):
        client.version = init["result"]["protocolVersion"]
    client.notify("notifications/initialized")
    client.request("tools/list")
    client.request("tools/call", {"name": "echo", "arguments": {"text": "hello through the tap"}})
    client.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 40}})
    client.request("tools/call", {"name": "count", "arguments": {"n": 3}, "_meta": {"progressToken": "p1"}})
    client.request("ping")


def run_session(argv: list[str]) -> tuple[int, list[str]]:
    """The demo's session against the stdio server `argv`: its exit status and stderr lines."""
    client = DemoClient(argv)
    try:
        session(client)
    finally:
        status = client.close()
    return status, client.stderr_lines


def run_http_session(url: str) -> None:
    """The demo's session against a Streamable HTTP endpoint, ended with a DELETE."""
    client = HttpDemoClient(url)
    try:
        session(client)
    finally:
        client.close()
