"""A small MCP server on the standard library alone (stdio, handshake-era revisions), bundled so
`mcptap demo` needs nothing beyond mcptap's own dependencies. Tools: `echo`, `add`, `count`
(reports progress). With --noisy it makes a classic mistake: a log line on stdout."""

from __future__ import annotations

import json
import sys
import time

SUPPORTED = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
TOOLS = [
    {"name": "echo", "description": "Return the text it is given.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "add", "description": "Add two numbers.",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                     "required": ["a", "b"]}},
    {"name": "count", "description": "Count to n, reporting progress.",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
]


def to_stdout(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def result(send, req_id, value: dict) -> None:
    send({"jsonrpc": "2.0", "id": req_id, "result": value})


def error(send, req_id, code: int, message: str) -> None:
    send({"jsonrpc": "2.0", "id": req_id, "error": {"code": code, "message": message}})


def call_tool(send, req_id, params: dict) -> None:
    name, args = params.get("name"), params.get("arguments") or {}
    if name == "echo":
        result(send, req_id, {"content": [{"type": "text", "text": str(args.get("text", ""))}], "isError": False})
    elif name == "add":
        total = args.get("a", 0) + args.get("b", 0)
        result(send, req_id, {"content": [{"type": "text", "text": json.dumps(total)}], "isError": False})
    elif name == "count":
        token = (params.get("_meta") or {}).get("progressToken")
        n = int(args.get("n", 3))
        for i in range(1, n + 1):
            time.sleep(0.01)
            if token is not None:
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": token, "progress": i, "total": n}})
        result(send, req_id, {"content": [{"type": "text", "text": f"counted to {n}"}], "isError": False})
    else:
        error(send, req_id, -32602, f"unknown tool {name!r}")


def handle(msg: dict, send=to_stdout) -> None:
    """Answer one message through `send` (stdout here; an HTTP answer in http_server.py)."""
    method, req_id = msg.get("method"), msg.get("id")
    if "id" not in msg:
        return  # notifications (initialized, cancelled) need no answer
    if method == "initialize":
        asked = (msg.get("params") or {}).get("protocolVersion")
        result(send, req_id, {"protocolVersion": asked if asked in SUPPORTED else SUPPORTED[0],
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "mcptap-demo-server", "version": "1.0.0"}})
    elif method == "ping":
        result(send, req_id, {})
    elif method == "tools/list":
        result(send, req_id, {"tools": TOOLS})
    elif method == "tools/call":
        call_tool(send, req_id, msg.get("params") or {})
    else:
        error(send, req_id, -32601, f"method not found: {method}")


def main() -> None:
    print("demo server: ready", file=sys.stderr, flush=True)
    if "--noisy" in sys.argv:
        print("demo server: this log line went to stdout, which belongs to the protocol", flush=True)
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            error(to_stdout, None, -32700, "parse error")
            continue
        if isinstance(msg, dict):
            handle(msg)
        else:
            error(to_stdout, None, -32600, "invalid request")
    print("demo server: stdin closed, bye", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
