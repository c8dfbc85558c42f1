"""Test server on the real `mcp` SDK over stdio (runs in the side virtual environment) that leaks
secrets the way real servers do. Usage: leaky_server.py --api-key KEY [--header "NAME: VALUE"]:
at start it prints to stderr a JSON log line with a password, the Authorization header it would
send, its API key and the GITHUB_TOKEN of its environment. Tools: echo (returns the text), login
(a password argument), configure (takes any settings object)."""

import argparse
import json
import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("mcptap-leaky-server")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool()
def login(user: str, password: str) -> str:
    """Pretend to log in (a tool argument that is a credential)."""
    return f"welcome {user}"


@server.tool()
def configure(settings: dict) -> str:
    """Take settings (credentials among them) and say how many."""
    return f"{len(settings)} settings"


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--header", default="")
    parser.add_argument("--db-password", default="")
    args = parser.parse_args()
    log = sys.stderr
    log.write(json.dumps({"level": "debug", "msg": "loaded config", "password": args.db_password}) + "\n")
    log.write(f"upstream request headers: {args.header}\n")
    log.write(f"using api_key={args.api_key} and GITHUB_TOKEN={os.environ.get('GITHUB_TOKEN', '')}\n")
    log.flush()
    server.run("stdio")
