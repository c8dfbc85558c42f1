"""A stdio MCP server, raw JSON-RPC lines, that plants one schema violation per tool (and answers
the rest as its revision's schema says): `odd` answers a content block of an unknown type, `typed`
echoes its `n` argument as structuredContent (its outputSchema wants an integer), `failing` is an
isError result whose structuredContent does not match, `log` first sends a log message at a level
the schema does not have. tools/list names one tool with a number. A tools/call without a name is
refused with -32602. No result carries resultType, which a 2026-07-28 session's must."""

import json
import sys

TYPED = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
ANY = {"type": "object"}


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request: dict) -> dict | None:
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "misbehaving", "version": "1"}}
    if method == "tools/list":
        return {"tools": [{"name": "typed", "inputSchema": ANY, "outputSchema": TYPED},
                          {"name": "failing", "inputSchema": ANY, "outputSchema": TYPED},
                          {"name": "odd", "inputSchema": ANY}, {"name": "log", "inputSchema": ANY},
                          {"name": 7, "inputSchema": ANY}]}
    if method == "tools/call":
        name, args = params.get("name"), params.get("arguments") or {}
        if name == "odd":
            return {"content": [{"type": "html", "text": "<b>odd</b>"}]}
        if name == "typed":
            return {"content": [{"type": "text", "text": "typed"}], "structuredContent": {"n": args.get("n")}}
        if name == "failing":
            return {"content": [{"type": "text", "text": "failed"}], "structuredContent": {"n": "x"}, "isError": True}
        if name == "log":
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "loud", "data": "hi"}})
        return {"content": [{"type": "text", "text": "ok"}]}
    return {}


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request:
            continue
        params = request.get("params") or {}
        if request.get("method") == "tools/call" and "name" not in params:
            send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32602, "message": "no tool name"}})
            continue
        send({"jsonrpc": "2.0", "id": request["id"], "result": answer(request)})  # never a resultType


if __name__ == "__main__":
    main()
