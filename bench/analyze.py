"""Benchmark of `mcptap analyze` over a large, realistic recording. Not a test: it prints figures
and always exits 0.

The database. A seeded generator writes N frames (1,000,000, and 100,000 for the memory
comparison) with the product's own store (mcptap.store: connect, insert_session, append_rows),
so the schema is exactly the product's. It holds many stdio sessions of 200 to 20,000 frames
(log-uniform; or, for bench/fleet.py, a given number of sessions of N frames in all), of both eras:
- handshake (2025-11-25 or 2025-06-18): initialize, InitializeResult, notifications/initialized,
  then operation, with server->client requests (ping, roots/list, sampling/createMessage inside a
  tools/call) answered by the client, logging notifications (the server declares `logging`);
- stateless 2026-07-28: every request carries the per-request `_meta` (protocolVersion,
  clientCapabilities, clientInfo), every result `resultType: "complete"`, list and resources/read
  results `ttlMs`/`cacheScope` (the schema's cacheable results), the first request is usually server/discover, log notifications only
  under a request that set `io.modelcontextprotocol/logLevel`, no server->client requests.
Methods are mixed (tools/call with text results of 100 B to 4 KB, tools/list with JSON schemas,
resources/list and read, prompts/list and get, completion/complete, ping, progress notifications
under a request's `_meta.progressToken`, cancellations, tools/list_changed), some clients send
up to 4 requests at once, and responses come back a few ms later, in latency order, in the
other direction. Ids are integers or strings, key order is the Python SDK's or the TypeScript
SDK's. About 0.5% of frames carry an injected violation, the eight types in turn (a response
with an unknown id, a missing response, a duplicate request id, a non-JSON stdout line, a batch,
a request with a null id, a duplicate key, a fractional id); everything else is meant to be
conformant, so findings beyond the injected ones are worth a look (false positives, or a
generator mistake). The file is cached by its parameters in /tmp/mcptap-bench (--regenerate
rebuilds it; so does a change of the product's migrations), with a JSON sidecar holding the
composition. The report compares stored findings by code with what the injections should give,
including three consequences the generator counts too (CONSEQUENCES).

Measured in one run, each database first read through once so both sides find it in the page cache:
(a) Baseline: in this process, single-threaded, every frame read in (session, seq) order,
    `json.loads`, classified by a plain if-chain (request / notification / response / error /
    invalid / batch, and unparseable), response ids matched to the other direction's requests
    in a dict per (session, direction); nothing stored. Best of BASELINE_RUNS runs.
(b) `python -m mcptap analyze --db <copy> --format json --fail-on never` as a subprocess (the
    copy written back to disk first, os.sync, so that the kernel's writeback of a 1 GB copy is
    not timed with it), stdout to a file, started by a tiny launcher process that forks it,
    reaps it with os.wait4
    and reports its figures (a child spawned straight from this driver would carry the driver's
    own peak RSS in its ru_maxrss: Linux keeps the high-water mark across execve). Wall time from
    fork to exit (start-up included; `--version` start-up is printed for scale), frames/s over N,
    CPU time of the analyzer and its children. Peak RSS: wait4's ru_maxrss is the largest peak
    among the analyzer process and every child it reaped; VmHWM of every process under the
    launcher is also sampled from /proc every 20 ms, and the figure held against the target is
    the larger of the wait4 peak and the sum of the sampled peaks (worker processes count
    together; one that lives less than 20 ms can be missed by the sampler, never by wait4). Then
    the copy is checked: rows in `messages` (one with idx NULL per frame) and `findings`,
    findings by code beside what the injections should produce, and the JSON report's totals.
    Run on both sizes to show that memory does not grow with the log (it should grow with
    outstanding requests, which are bounded here).

(c) The same command again without the schema checks (`--ignore-code schema-violation --ignore-code
    structured-content-mismatch`: analyzer/analysis/results.py then skips them), in the same run: the
    analysis with them is to be at least half as fast as without them (TARGET_SCHEMA_RATIO); and
    without the security group (`--ignore-code` each of its codes: no security reading), the
    analysis with it to be at least 0.8 as fast (TARGET_SECURITY_RATIO); the
    per-frame stages below give the same comparison for the analysis alone (SessionAnalysis.feed).
(d) The same command again with `--format text` (no cost section in its report), for its peak RSS.

Targets: (b)'s CPU per frame (all its processes) at most 2x (a)'s on the small database and 1.5x
on the large (TARGET_CPU_RATIO); (b)'s frames/s at least 0.8x (a)'s (TARGET_SPEEDUP); peak RSS of
(b) and (d) at most 250 MB on the large database and at most +20% from the small to the large
database (memory that does not grow with the log). Then, in this process,
where (b)'s CPU goes: reading, the native envelope scan, the analysis (SessionAnalysis.feed),
and the exact path alone for scale (`stages`). Printed first: which paths (b) takes (the native
envelope scanner, or none: the exact parser for every frame) and where its mcptap comes from.

Usage:  python bench/analyze.py [--quick] [--regenerate] [--seed S]   (--quick: 100,000 frames only)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from operator import itemgetter

from mcptap import store  # noqa: E402

from common import print_summary, run, verdict

CACHE_DIR = "/tmp/mcptap-bench"
GENERATOR_VERSION = 3  # bump when the generator changes: cached files are named after it
LARGE_N, SMALL_N = 1_000_000, 100_000
SESSION_MIN, SESSION_MAX = 200, 20_000  # frames per session, log-uniform
VIOLATION_SHARE = 0.005  # of frames
INSERT_BATCH = 20_000
BASELINE_RUNS = 2

TARGET_SPEEDUP = 0.8  # (b)'s frames/s against (a)'s
TARGET_CPU_RATIO = {SMALL_N: 2.0, LARGE_N: 1.5}  # (b)'s CPU per frame (all processes) against (a)'s, at most
TARGET_PEAK_RSS_MB = 250.0  # on the large database, --format json and text
TARGET_RSS_GROWTH = 0.2
TARGET_SCHEMA_RATIO = 0.5
# the analysis without the schema checks (analyzer/analysis/results.py skips them when their codes are silenced)
WITHOUT_SCHEMAS = ("--ignore-code", "schema-violation", "--ignore-code", "structured-content-mismatch")
TARGET_SECURITY_RATIO = 0.8
SECURITY_CODES = ("description-hidden-text", "description-instructs-model", "tool-shadowing", "tool-undeclared",
                  "arguments-schema-violation", "secret-in-arguments", "call-loop", "definition-changed-after-use",
                  "elicitation-asks-secret")
# the analysis without the security group (analyzer/engine/security.py skips the reading when every code is silenced)
WITHOUT_SECURITY = tuple(arg for code in SECURITY_CODES for arg in ("--ignore-code", code))

VIOLATIONS = ("unknown-response-id", "missing-response", "duplicate-request-id", "stdout-noise",
              "batch", "null-id", "duplicate-key", "fractional-id")
# What docs/findings.md should say about each injected violation (one frame each, see the generator).
EXPECTED_CODES = {
    "unknown-response-id": ("unknown-response-id",),
    "missing-response": ("missing-response",),
    "duplicate-request-id": ("duplicate-request-id",),
    "stdout-noise": ("parse-error", "stdout-noise"),
    "batch": ("batch-used",),
    "null-id": ("id-null",),
    "duplicate-key": ("duplicate-key",),
    "fractional-id": ("id-fractional",),
}
# Findings that follow from the injections without being one of them, counted by the generator:
# the second answer to a duplicated id (once the first answer took the id), and a second `"id":
# null` request in one handshake-era session (ids must not be reused there; 2026-07-28 allows it).
CONSEQUENCES = {
    "duplicate-response": "second answer to a duplicated id",
    "request-id-reused": "null id used again in a handshake-era session",
    "deprecated-feature": "a 2026-07-28 session that asked for logs: Logging is deprecated there, said once a session",
}
DEPRECATED_LOGGING = "deprecated-feature"
LOG_LEVEL_META = "io.modelcontextprotocol/logLevel"
KINDS = ("request", "notification", "response", "error", "invalid", "batch", "unparseable")

C2S, S2C = "c2s", "s2c"

# -- generator: fixed material ------------------------------------------------------------------

_WORDS = ("the of and to in is for on with that by this be are from as it at or an was not "
          "file directory path config server client request response token cache index query "
          "result error value return function class module import export async await promise "
          "commit branch merge issue pull review test build deploy release version schema table "
          "row column user account project workspace session stream buffer chunk frame message "
          "café naïve résumé Zürich 東京 データ ünïcödé smörgåsbord — … “quoted” 🙂 ✓ →").split()


def make_corpus(size: int = 1 << 18) -> str:
    """Deterministic text with words, code, punctuation, quotes, tabs, newlines and non-ASCII."""
    rng = random.Random(20260728)
    parts, total = [], 0
    while total < size:
        r = rng.random()
        if r < 0.04:
            piece = "\n"
        elif r < 0.06:
            piece = '"%s"' % rng.choice(_WORDS)
        elif r < 0.07:
            piece = "\tdef %s_%d(x):\\n" % (rng.choice(_WORDS), rng.randrange(100))
        elif r < 0.09:
            piece = "%d.%02d%%" % (rng.randrange(1000), rng.randrange(100))
        else:
            piece = rng.choice(_WORDS)
        parts.append(piece)
        total += len(piece) + 1
    return " ".join(parts)


def _tool(name: str, description: str, props: dict, required: list[str]) -> dict:
    return {"name": name, "description": description,
            "inputSchema": {"type": "object", "properties": props, "required": required,
                            "additionalProperties": False}}


S_STR = {"type": "string"}
S_INT = {"type": "integer", "minimum": 1, "maximum": 100}
S_BOOL = {"type": "boolean"}

# label, argv, tools, resource URIs, prompts (name, argument)
SERVERS = [
    ("filesystem", ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me/projects"], [
        _tool("read_text_file", "Read the complete contents of a file as text. Only works within allowed directories.",
              {"path": S_STR, "head": S_INT, "tail": S_INT}, ["path"]),
        _tool("write_file", "Create a new file or completely overwrite an existing file with new content.",
              {"path": S_STR, "content": S_STR}, ["path", "content"]),
        _tool("list_directory", "Get a detailed listing of all files and directories in a specified path.",
              {"path": S_STR}, ["path"]),
        _tool("search_files", "Recursively search for files and directories matching a pattern.",
              {"path": S_STR, "pattern": S_STR, "excludePatterns": {"type": "array", "items": S_STR}},
              ["path", "pattern"]),
        _tool("get_file_info", "Retrieve detailed metadata about a file or directory.", {"path": S_STR}, ["path"]),
    ], ["file:///home/me/projects/README.md", "file:///home/me/projects/src/main.py",
        "file:///home/me/projects/pyproject.toml"], [("review_file", "path")]),
    ("github", ["docker", "run", "-i", "--rm", "ghcr.io/github/github-mcp-server"], [
        _tool("search_repositories", "Search for GitHub repositories.",
              {"query": S_STR, "page": S_INT, "perPage": S_INT}, ["query"]),
        _tool("get_issue", "Get details of a specific issue in a GitHub repository.",
              {"owner": S_STR, "repo": S_STR, "issue_number": S_INT}, ["owner", "repo", "issue_number"]),
        _tool("create_issue", "Create a new issue in a GitHub repository.",
              {"owner": S_STR, "repo": S_STR, "title": S_STR, "body": S_STR,
               "labels": {"type": "array", "items": S_STR}}, ["owner", "repo", "title"]),
        _tool("list_pull_requests", "List pull requests in a GitHub repository.",
              {"owner": S_STR, "repo": S_STR, "state": {"type": "string", "enum": ["open", "closed", "all"]}},
              ["owner", "repo"]),
        _tool("get_file_contents", "Get the contents of a file or directory from a GitHub repository.",
              {"owner": S_STR, "repo": S_STR, "path": S_STR, "ref": S_STR}, ["owner", "repo", "path"]),
        _tool("search_code", "Search for code across GitHub repositories.", {"q": S_STR, "sort": S_STR}, ["q"]),
    ], ["repo://me/mcptap/contents/README.md", "repo://me/mcptap/issues"], [("triage_issue", "issue"),
                                                                            ("summarize_pr", "number")]),
    ("time", ["uvx", "mcp-server-time"], [
        _tool("get_current_time", "Get current time in a specific timezone.", {"timezone": S_STR}, ["timezone"]),
        _tool("convert_time", "Convert time between timezones.",
              {"source_timezone": S_STR, "time": S_STR, "target_timezone": S_STR},
              ["source_timezone", "time", "target_timezone"]),
    ], [], []),
    ("fetch", ["uvx", "mcp-server-fetch"], [
        _tool("fetch", "Fetches a URL from the internet and optionally extracts its contents as markdown.",
              {"url": {"type": "string", "format": "uri"}, "max_length": S_INT, "start_index": S_INT, "raw": S_BOOL},
              ["url"]),
    ], [], [("fetch", "url")]),
    ("everything", ["npx", "-y", "@modelcontextprotocol/server-everything"], [
        _tool("echo", "Echoes back the input.", {"message": S_STR}, ["message"]),
        _tool("add", "Adds two numbers.", {"a": {"type": "number"}, "b": {"type": "number"}}, ["a", "b"]),
        _tool("longRunningOperation", "Demonstrates a long running operation with progress updates.",
              {"duration": S_INT, "steps": S_INT}, []),
        _tool("sampleLLM", "Samples from an LLM using MCP's sampling feature.",
              {"prompt": S_STR, "maxTokens": S_INT}, ["prompt"]),
        _tool("printEnv", "Prints all environment variables, helpful for debugging MCP server configuration.", {}, []),
    ], ["test://static/resource/1", "test://static/resource/2", "test://static/resource/3"],
        [("simple_prompt", "style"), ("complex_prompt", "temperature")]),
]
CLIENTS = [("claude-ai", "0.1.0"), ("Visual Studio Code", "1.104.0"), ("cursor-vscode", "1.0.0"),
           ("mcp-inspector", "0.17.0"), ("mcp", "1.21.0"), ("goose", "1.9.3")]
NOISE = ["Starting MCP server on stdio...", "Secure MCP Filesystem Server running on stdio",
         "DEBUG:root:handling request", "Warning: config file not found, using defaults",
         "(node:4242) ExperimentalWarning: The Fetch API is an experimental feature.",
         "Traceback (most recent call last):", "Listening for messages"]

# -- generator: one session ---------------------------------------------------------------------


class Session:
    """Builds one session's frames as (ts, direction, raw, kind, method) in observed order."""

    def __init__(self, g: "Generator", era: str, start: float):
        rng = self.rng = g.rng
        self.g = g
        self.era = era  # "2025-11-25" | "2025-06-18" | "2026-07-28"
        self.modern = era == "2026-07-28"
        self.label, self.argv, tools, self.uris, self.prompts = rng.choice(SERVERS)
        self.tools = [(t["name"], [(n, p, n in t["inputSchema"]["required"]) for n, p in t["inputSchema"]["properties"].items()])
                      for t in tools]
        self.client = rng.choice(CLIENTS)
        self.sampling = not self.modern and rng.random() < 0.5
        self.c_ts = rng.random() < 0.5  # TypeScript SDK key order on this side, else Python's
        self.s_ts = rng.random() < 0.5
        self.str_ids = rng.random() < 0.2
        self.next_cid = rng.choice((0, 1))
        self.next_sid = 0
        self.next_token = 0
        self.null_ids = 0
        self.logged = False  # 2026-07-28: a request asked for logs (Logging is deprecated there)
        self.t = start
        self.out: list[tuple] = []
        client_info = '{"name":"%s","version":"%s"}' % self.client
        self.meta = ('"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
                     '"io.modelcontextprotocol/clientCapabilities":{},'
                     '"io.modelcontextprotocol/clientInfo":' + client_info)
        self.client_info = client_info
        extra = self.cached = ',"ttlMs":0,"cacheScope":"private"' if self.modern else ""
        self.tools_list = self.result('"tools":' + compact(tools) + extra)
        self.resources_list = self.result('"resources":' + compact(
            [{"uri": u, "name": u.rsplit("/", 1)[-1], "mimeType": "text/plain"} for u in self.uris]) + extra)
        self.prompts_list = self.result('"prompts":' + compact(
            [{"name": n, "description": "Prompt %s" % n, "arguments": [{"name": a, "required": True}]}
             for n, a in self.prompts]) + extra)
        self.caps = compact({"tools": {"listChanged": True}, "resources": {}, "prompts": {}, "logging": {},
                             "completions": {}})

    # envelopes (raw strings; key order per side)
    def cid(self) -> str:
        i = self.next_cid
        self.next_cid += 1
        return '"%x-%d"' % (i * 2654435761 & 0xFFFFFF, i) if self.str_ids else str(i)

    def request_id(self, violation: str | None) -> str:
        """A client request's id: the next one, or a fractional or null id when that is the violation."""
        if violation == "fractional-id":
            return "%d.5" % self.next_cid
        if violation == "null-id":
            self.null_ids += 1
            return "null"
        return self.cid()

    def sid(self) -> str:
        i = self.next_sid
        self.next_sid += 1
        return str(i)

    def request(self, d: str, rid: str, method: str, params: str | None) -> str:
        ts = self.c_ts if d == C2S else self.s_ts
        if params is None:
            return ('{"method":"%s","jsonrpc":"2.0","id":%s}' % (method, rid) if ts
                    else '{"jsonrpc":"2.0","id":%s,"method":"%s"}' % (rid, method))
        return ('{"method":"%s","params":%s,"jsonrpc":"2.0","id":%s}' % (method, params, rid) if ts
                else '{"jsonrpc":"2.0","id":%s,"method":"%s","params":%s}' % (rid, method, params))

    def notification(self, d: str, method: str, params: str | None) -> str:
        ts = self.c_ts if d == C2S else self.s_ts
        if params is None:
            return ('{"method":"%s","jsonrpc":"2.0"}' % method if ts
                    else '{"jsonrpc":"2.0","method":"%s"}' % method)
        return ('{"method":"%s","params":%s,"jsonrpc":"2.0"}' % (method, params) if ts
                else '{"jsonrpc":"2.0","method":"%s","params":%s}' % (method, params))

    def response(self, d: str, rid: str, result: str) -> str:
        ts = self.c_ts if d == C2S else self.s_ts
        return ('{"result":%s,"jsonrpc":"2.0","id":%s}' % (result, rid) if ts
                else '{"jsonrpc":"2.0","id":%s,"result":%s}' % (rid, result))

    def error(self, d: str, rid: str, code: int, message: str) -> str:
        ts = self.c_ts if d == C2S else self.s_ts
        err = '{"code":%d,"message":%s}' % (code, json.dumps(message))
        return ('{"error":%s,"jsonrpc":"2.0","id":%s}' % (err, rid) if ts
                else '{"jsonrpc":"2.0","id":%s,"error":%s}' % (rid, err))

    def params(self, body: str, meta: str = "") -> str:
        """A client request's params: `body` (members, no braces) plus the era's `_meta`."""
        if self.modern:
            meta = self.meta + ("," + meta if meta else "")
        if meta:
            return "{" + body + ("," if body else "") + '"_meta":{' + meta + "}}"
        return "{" + body + "}"

    def result(self, body: str) -> str:
        if self.modern:
            return "{" + body + ("," if body else "") + '"resultType":"complete"}'
        return "{" + body + "}"

    def text(self, lo: int, hi: int) -> str:
        corpus = self.g.corpus
        n = self.rng.randint(lo, hi)
        s = self.rng.randrange(len(corpus) - n)
        return json.dumps(corpus[s:s + n], ensure_ascii=False)

    def latency(self) -> float:
        return 0.0005 + self.rng.expovariate(1 / 0.004)  # a few ms, with a tail

    # exchanges: each appends (t, d, raw, kind, method) events to `ev`, starting at t
    def tool_args(self, props, dup: bool = False) -> str:
        rng = self.rng
        parts = []
        for name, schema, required in props:  # arguments as the tool's inputSchema asks: every required one
            if not required and rng.random() < 0.3:
                continue
            kind = schema.get("type")
            if "enum" in schema:
                val = '"%s"' % rng.choice(schema["enum"])
            elif schema.get("format") == "uri":
                val = '"https://example.com/%s/%d"' % (rng.choice(("a", "docs", "api")), rng.randrange(1000))
            elif kind == "integer":
                val = str(rng.randint(1, 100))
            elif kind == "number":
                val = "%.2f" % (rng.random() * 1000)
            elif kind == "boolean":
                val = "true" if rng.random() < 0.5 else "false"
            elif kind == "array":
                val = "[%s]" % self.text(3, 20)
            else:
                val = self.text(5, 80)
            parts.append('"%s":%s' % (name, val))
        if dup:  # the same member twice: a parser keeps one, the raw text shows both
            parts = parts + [parts[0]] if parts else ['"verbose":true', '"verbose":false']
        return "{" + ",".join(parts) + "}"

    def tools_call(self, ev: list, t: float, violation: str | None = None, rid: str | None = None,
                   plain: bool = False, progress: int = 0) -> None:
        rng = self.rng
        name, props = rng.choice(self.tools)
        if rid is None:
            rid = self.request_id(violation)
        meta = ""
        if not plain:
            progress = rng.randint(1, 5) if rng.random() < 0.12 else 0
        logs = 0 if plain or rng.random() >= 0.10 else rng.randint(1, 3)
        if progress:
            tok = self.next_token
            self.next_token += 1
            token = '"pt-%d"' % tok if self.str_ids else str(tok)
            meta = '"progressToken":' + token
        if logs and self.modern:
            self.logged = True
            meta += ("," if meta else "") + '"io.modelcontextprotocol/logLevel":"info"'
        body = '"name":"%s","arguments":%s' % (name, self.tool_args(props, dup=violation == "duplicate-key"))
        ev.append((t, C2S, self.request(C2S, rid, "tools/call", self.params(body, meta)), "request", "tools/call"))
        if violation == "cancel":
            ev.append((t + 0.002 + rng.random() * 0.05, C2S, self.notification(
                C2S, "notifications/cancelled", '{"requestId":%s,"reason":"User cancelled"}' % rid),
                "notification", "notifications/cancelled"))
            return
        done = t + self.latency()
        for i in range(progress):
            done += 0.001 + rng.random() * 0.004
            ev.append((done, S2C, self.notification(S2C, "notifications/progress",
                       '{"progressToken":%s,"progress":%d,"total":%d,"message":"step %d of %d"}'
                       % (token, i + 1, progress, i + 1, progress)), "notification", "notifications/progress"))
        for _ in range(logs):
            done += 0.0003 + rng.random() * 0.002
            ev.append((done, S2C, self.notification(S2C, "notifications/message",
                       '{"level":"info","logger":"%s","data":%s}' % (self.label, self.text(20, 200))),
                       "notification", "notifications/message"))
        if self.sampling and not plain and rng.random() < 0.05:  # the tool asks the host's LLM
            srid = self.sid()
            done += 0.001
            ev.append((done, S2C, self.request(S2C, srid, "sampling/createMessage",
                       '{"messages":[{"role":"user","content":{"type":"text","text":%s}}],"maxTokens":%d}'
                       % (self.text(50, 400), rng.choice((100, 500, 1000)))), "request", "sampling/createMessage"))
            done += 0.02 + rng.random() * 0.2
            ev.append((done, C2S, self.response(C2S, srid,
                       '{"role":"assistant","content":{"type":"text","text":%s},"model":"claude-sonnet-4-5",'
                       '"stopReason":"endTurn"}' % self.text(50, 800)), "response", "sampling/createMessage"))
            done += 0.001
        if violation == "missing-response":
            return
        done += 0.0002
        if violation == "null-id":  # the server cannot answer an id it rejects
            ev.append((done, S2C, self.error(S2C, "null", -32600, "Invalid Request: id must not be null"),
                       "error", "tools/call"))
            return
        r = rng.random()
        if not plain and r < 0.01:
            ev.append((done, S2C, self.error(S2C, rid, -32602, "Unknown tool: %s_v2" % name), "error", "tools/call"))
            return
        if not plain and r < 0.04:
            res = '"content":[{"type":"text","text":"Error executing tool %s: %s"}],"isError":true' % (
                name, rng.choice(("permission denied", "not found", "rate limited", "timeout")))
        else:
            res = '"content":[{"type":"text","text":%s}],"isError":false' % self.text(100, 4000)
        ev.append((done, S2C, self.response(S2C, rid, self.result(res)), "response", "tools/call"))

    def simple(self, ev: list, t: float, method: str, params: str | None, result: str,
               violation: str | None = None) -> None:
        rid = self.request_id(violation)
        ev.append((t, C2S, self.request(C2S, rid, method, params), "request", method))
        if violation == "missing-response":
            return
        if violation == "null-id":  # the server cannot answer an id it rejects
            ev.append((t + self.latency(), S2C, self.error(S2C, "null", -32600, "Invalid Request: id must not be null"),
                       "error", method))
            return
        ev.append((t + self.latency(), S2C, self.response(S2C, rid, result), "response", method))

    def client_exchange(self, ev: list, t: float, violation: str | None) -> None:
        rng = self.rng
        r = rng.random()
        if violation in ("duplicate-key", "missing-response", "cancel") or r < 0.50:
            return self.tools_call(ev, t, violation)
        if r < 0.58:
            return self.simple(ev, t, "tools/list", self.params(""), self.tools_list, violation)
        if r < 0.68 and self.uris:
            uri = rng.choice(self.uris)
            return self.simple(ev, t, "resources/read", self.params('"uri":"%s"' % uri), self.result(
                '"contents":[{"uri":"%s","mimeType":"text/plain","text":%s}]' % (uri, self.text(100, 4000))
                + self.cached), violation)
        if r < 0.72 and self.uris:
            return self.simple(ev, t, "resources/list", self.params(""), self.resources_list, violation)
        if r < 0.79 and self.prompts:
            name, arg = rng.choice(self.prompts)
            return self.simple(ev, t, "prompts/get", self.params('"name":"%s","arguments":{"%s":%s}' % (
                name, arg, self.text(3, 40))), self.result('"description":"Prompt %s","messages":[{"role":"user",'
                '"content":{"type":"text","text":%s}}]' % (name, self.text(100, 2000))), violation)
        if r < 0.82 and self.prompts:
            return self.simple(ev, t, "prompts/list", self.params(""), self.prompts_list, violation)
        if r < 0.85 and self.prompts:
            name, arg = rng.choice(self.prompts)
            return self.simple(ev, t, "completion/complete", self.params(
                '"ref":{"type":"ref/prompt","name":"%s"},"argument":{"name":"%s","value":"%s"}' % (
                    name, arg, rng.choice(("a", "py", "main", "Eu")))), self.result(
                '"completion":{"values":[%s,%s],"total":2,"hasMore":false}' % (self.text(3, 20), self.text(3, 20))),
                violation)
        if not self.modern and r < 0.92:
            return self.simple(ev, t, "ping", None, "{}", violation)
        return self.tools_call(ev, t, violation)

    def server_exchange(self, ev: list, t: float) -> None:
        """Handshake era only: something the server starts."""
        rng = self.rng
        r = rng.random()
        if r < 0.45:
            params = '{"level":"%s","logger":"%s","data":%s}' % (
                rng.choice(("debug", "info", "info", "warning")), self.label, self.text(20, 300))
            ev.append((t, S2C, self.notification(S2C, "notifications/message", params),
                       "notification", "notifications/message"))
        elif r < 0.70:
            rid = self.sid()
            ev.append((t, S2C, self.request(S2C, rid, "ping", None), "request", "ping"))
            ev.append((t + self.latency(), C2S, self.response(C2S, rid, "{}"), "response", "ping"))
        elif r < 0.92:
            rid = self.sid()
            ev.append((t, S2C, self.request(S2C, rid, "roots/list", None), "request", "roots/list"))
            ev.append((t + self.latency(), C2S, self.response(C2S, rid, '{"roots":[{"uri":"file:///home/me/projects",'
                       '"name":"projects"}]}'), "response", "roots/list"))
        else:
            ev.append((t, S2C, self.notification(S2C, "notifications/tools/list_changed", None),
                       "notification", "notifications/tools/list_changed"))
            self.simple(ev, t + 0.003, "tools/list", self.params(""), self.tools_list)

    def emit(self, ev: list) -> None:
        ev.sort(key=itemgetter(0))
        self.out.extend(ev)
        self.t = ev[-1][0]

    def think(self) -> None:
        self.t += 0.002 + (self.rng.expovariate(1 / 0.25) if self.rng.random() < 0.9 else self.rng.random() * 20)

    def open(self) -> None:
        rng = self.rng
        ev: list = []
        t = self.t
        if self.modern:
            if rng.random() < 0.9:
                self.simple(ev, t, "server/discover", self.params(""), self.result(
                    '"supportedVersions":["2026-07-28","2025-11-25"],"capabilities":%s,"instructions":"Server %s",'
                    '"ttlMs":0,"cacheScope":"private"' % (self.caps, self.label)))
            else:
                self.simple(ev, t, "tools/list", self.params(""), self.tools_list)
        else:
            caps = '{"roots":{"listChanged":true}%s}' % (',"sampling":{}' if self.sampling else "")
            rid = self.cid()
            ev.append((t, C2S, self.request(C2S, rid, "initialize", '{"protocolVersion":"%s","capabilities":%s,'
                       '"clientInfo":%s}' % (self.era, caps, self.client_info)), "request", "initialize"))
            t += 0.05 + rng.random() * 0.3  # server start-up
            ev.append((t, S2C, self.response(S2C, rid, '{"protocolVersion":"%s","capabilities":%s,"serverInfo":'
                       '{"name":"%s","version":"1.2.0"},"instructions":"Server %s"}' % (
                           self.era, self.caps, self.label, self.label)), "response", "initialize"))
            t += 0.001
            ev.append((t, C2S, self.notification(C2S, "notifications/initialized", None),
                       "notification", "notifications/initialized"))
        self.emit(ev)

    def burst(self, violation: str | None) -> None:
        """One step of operation: 1-4 concurrent client requests, or something the server starts,
        with at most one injected violation."""
        rng = self.rng
        self.think()
        t = self.t
        ev: list = []
        if violation is None and not self.modern and rng.random() < 0.08:
            self.server_exchange(ev, t)
            return self.emit(ev)
        r = rng.random()
        n = 1 if r < 0.7 else 2 if r < 0.9 else rng.randint(3, 4)
        v_here = None  # handled below: these violations, or a (conformant) cancellation
        if violation in ("unknown-response-id", "stdout-noise", "duplicate-request-id", "batch"):
            v_here, violation = violation, None
        elif violation is None and rng.random() < 0.003:
            v_here = "cancel"
        for i in range(n):
            self.client_exchange(ev, t + i * 0.0002, violation if i == 0 else None)
        t_end = max(e[0] for e in ev)
        if v_here == "cancel":
            self.tools_call(ev, t + n * 0.0002, "cancel")
        elif v_here == "unknown-response-id":  # a stray answer to an id nobody sent
            rid = '"stray-%d"' % self.next_cid if self.str_ids else str(900_000_000 + self.next_cid)
            ev.append((t + rng.random() * (t_end - t) + 0.0001, S2C, self.response(
                S2C, rid, self.result('"content":[{"type":"text","text":"ok"}],"isError":false')), "response", None))
        elif v_here == "stdout-noise":  # the server logs to stdout
            ev.append((t + rng.random() * (t_end - t) + 0.0001, S2C, rng.choice(NOISE), "unparseable", None))
        elif v_here == "duplicate-request-id":  # a second request with an id still outstanding; both answered
            rid = self.cid()
            self.tools_call(ev, t_end + 0.0005, rid=rid, plain=True)
            t2 = t_end + 0.0007
            self.tools_call(ev, t2, rid=rid, plain=True)
        elif v_here == "batch":  # two requests in one array; the server rejects the array as a whole
            elems = ",".join(self.request(C2S, self.cid(), "tools/list", self.params("")) for _ in range(2))
            ev.append((t_end + 0.0005, C2S, "[" + elems + "]", "batch", None))
            ev.append((t_end + 0.0005 + self.latency(), S2C, self.error(
                S2C, "null", -32600, "Invalid Request: batching is not supported"), "error", None))
        self.emit(ev)

    def fill(self, n: int) -> None:
        """Exactly n (>= 2) more frames: plain tools/call exchanges of 2 frames, one of 3 if n is odd."""
        while n >= 2:
            self.think()
            ev: list = []
            self.tools_call(ev, self.t, plain=True, progress=1 if n % 2 else 0)
            n -= len(ev)
            self.emit(ev)


# -- generator: the database --------------------------------------------------------------------

def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Generator:
    RESERVE = 60  # more than one burst can add

    def __init__(self, n: int, seed: int, sessions: int | None = None):
        """`n` frames; `sessions` None: sessions of SESSION_MIN to SESSION_MAX frames (log-uniform)
        until n are written; a number: exactly that many sessions, of n frames in all (sizes_for)."""
        if sessions is not None and n < 2 * SESSION_MIN * sessions:
            raise ValueError(f"{sessions:,} sessions of {n:,} frames: under {2 * SESSION_MIN} frames a session")
        self.n, self.seed, self.sessions = n, seed, sessions
        self.rng = random.Random(seed)
        self.corpus = make_corpus()
        self.stats = {
            "frames": 0, "sessions": 0, "eras": Counter(), "kinds": Counter(), "methods": Counter(),
            "violations": Counter(), "consequences": Counter(), "bytes": 0,
            "session_frames_min": None, "session_frames_max": 0,
            "stderr_lines": 0,
        }

    def session_id(self, start: float) -> str:
        ms = int(start * 1000)
        rand = self.rng.getrandbits(74)
        value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | (rand >> 62) << 64 | 0b10 << 62 | (rand & ((1 << 62) - 1))
        return str(uuid.UUID(int=value))

    def write(self, path: str) -> dict:
        rng, st = self.rng, self.stats
        conn = store.connect(path)
        conn.execute("PRAGMA synchronous=OFF")  # a benchmark fixture: no need to survive a power cut
        frames: list[tuple] = []
        stderr: list[tuple] = []
        start = 1_780_000_000.0
        total = 0
        lo, hi = math.log(SESSION_MIN), math.log(SESSION_MAX)
        sizes = None if self.sessions is None else sizes_for(rng, self.n, self.sessions)
        p_violation = VIOLATION_SHARE * 3.5  # per burst; a burst holds about 3.5 frames
        vi = 0
        try:
            while (total < self.n) if sizes is None else (st["sessions"] < len(sizes)):
                if sizes is not None:
                    target = sizes[st["sessions"]]
                else:
                    target = int(math.exp(rng.uniform(lo, hi)))
                    if self.n - total - target < SESSION_MIN:
                        target = self.n - total
                era = rng.choices(("2025-11-25", "2025-06-18", "2026-07-28"), (35, 25, 40))[0]
                s = Session(self, era, start)
                s.open()
                while len(s.out) + self.RESERVE + 2 <= target:
                    v = None
                    if rng.random() < p_violation:
                        v = VIOLATIONS[vi % len(VIOLATIONS)]
                        vi += 1
                        st["violations"][v] += 1
                    s.burst(v)
                s.fill(target - len(s.out))
                if not s.modern and s.null_ids > 1:
                    st["consequences"]["request-id-reused"] += s.null_ids - 1
                if s.logged:
                    st["consequences"][DEPRECATED_LOGGING] += 1
                sid = self.session_id(start)
                end = s.t + 0.05
                store.insert_session(conn, {
                    "id": sid, "transport": "stdio", "label": s.label, "started_at": start, "ended_at": end,
                    "command": json.dumps(s.argv), "exit_status": 0, "recorder": "bench/analyze.py generator",
                    "host": "bench", "pid": 4242})
                stderr.append((sid, 1, start + 0.01, rng.choice(NOISE[:2]), 0))
                for seq, (ts, d, raw, kind, method) in enumerate(s.out, 1):
                    size = len(raw) if raw.isascii() else len(raw.encode("utf-8"))
                    frames.append((sid, seq, ts, d, raw, size, 0, None))
                    st["bytes"] += size
                    st["kinds"][f"{kind} {d}"] += 1
                    if method is not None and kind in ("request", "notification"):
                        st["methods"][f"{method} {d}"] += 1
                if len(frames) >= INSERT_BATCH:
                    store.append_rows(conn, frames, stderr)
                    frames, stderr = [], []
                n_here = len(s.out)
                total += n_here
                st["sessions"] += 1
                st["eras"][era] += 1
                st["stderr_lines"] += 1
                st["session_frames_min"] = min(st["session_frames_min"] or n_here, n_here)
                st["session_frames_max"] = max(st["session_frames_max"], n_here)
                start = end + rng.random() * 600
            store.append_rows(conn, frames, stderr)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
        st["frames"] = total
        return st


def sizes_for(rng: random.Random, n: int, sessions: int) -> list[int]:
    """Frames of each of `sessions` sessions, n in all: log-uniform from SESSION_MIN to the bound
    whose mean is n / sessions (about 2,870 for 1,000 frames a session), rounded so they sum to n."""
    mean = n / sessions
    lo, hi = SESSION_MIN, 4.0 * mean
    for _ in range(60):  # the bound by bisection: the mean of log-uniform [a, b] is (b - a) / ln(b / a)
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if (mid - SESSION_MIN) / math.log(mid / SESSION_MIN) < mean else (lo, mid)
    drawn = [math.exp(rng.uniform(math.log(SESSION_MIN), math.log(hi))) for _ in range(sessions)]
    scale, edges, running = n / sum(drawn), [0], 0.0
    for x in drawn:
        running += x * scale
        edges.append(round(running))
    edges[-1] = n
    return [b - a for a, b in zip(edges, edges[1:])]


def cache_paths(n: int, seed: int, sessions: int | None = None) -> tuple[str, str]:
    base = os.path.join(CACHE_DIR, f"analyze-g{GENERATOR_VERSION}-{n}-{seed}" + (f"-s{sessions}" if sessions else ""))
    return base + ".db", base + ".json"


def schema_version() -> list[str]:
    from mcptap.store import migrations
    return [name for name, _ in migrations.MIGRATIONS]


def ensure_database(n: int, seed: int, regenerate: bool,
                    sessions: int | None = None) -> tuple[str, dict, float | None]:
    """The cached database for (n, seed, sessions), generated if missing or written with other
    migrations than the product has now: (path, composition, seconds or None)."""
    db, side = cache_paths(n, seed, sessions)
    if not regenerate and os.path.exists(db) and os.path.exists(side):
        with open(side, encoding="utf-8") as fh:
            comp = json.load(fh)
        if comp.get("schema") == schema_version():
            if DEPRECATED_LOGGING not in comp.get("consequences", {}):  # a sidecar written before it was counted
                comp.setdefault("consequences", {})[DEPRECATED_LOGGING] = logging_sessions(db)
                with open(side, "w", encoding="utf-8") as fh:
                    json.dump(comp, fh, indent=1, sort_keys=True)
            return db, comp, None
        print("    (cached file has another schema: regenerating)")
    os.makedirs(CACHE_DIR, exist_ok=True)
    tmp = db + ".partial"
    for p in (tmp, tmp + "-wal", tmp + "-shm"):
        if os.path.exists(p):
            os.unlink(p)
    t0 = time.perf_counter()
    stats = Generator(n, seed, sessions).write(tmp)
    elapsed = time.perf_counter() - t0
    stats["generation_s"] = elapsed
    stats["schema"] = schema_version()
    stats["consequences"]["duplicate-response"] = stats["violations"]["duplicate-request-id"]
    os.replace(tmp, db)
    with open(side, "w", encoding="utf-8") as fh:
        json.dump(stats, fh, indent=1, sort_keys=True)
    return db, json.loads(json.dumps(stats)), elapsed


def logging_sessions(db: str) -> int:
    """Sessions whose requests asked for logs in their `_meta` (only the generator's 2026-07-28
    sessions do): what the generator counts as DEPRECATED_LOGGING, read from a database generated
    before it counted them."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT count(DISTINCT session_id) FROM frames WHERE instr(CAST(raw AS BLOB), ?) > 0",
                            (LOG_LEVEL_META.encode(),)).fetchone()[0]
    finally:
        conn.close()


def warm(path: str) -> None:
    """Read the file once so that both measurements find it in the page cache."""
    with open(path, "rb", buffering=0) as fh:
        while fh.read(1 << 22):
            pass


def print_composition(n: int, comp: dict, gen_s: float | None, path: str) -> None:
    how = f"generated in {gen_s:.1f} s" if gen_s is not None else \
        f"cached (generated in {comp.get('generation_s', float('nan')):.1f} s)"
    print(f"    {path}: {os.path.getsize(path) / 2**20:,.0f} MB, {how}")
    eras = ", ".join(f"{k} {v}" for k, v in sorted(comp["eras"].items()))
    print(f"    {comp['sessions']:,} sessions ({eras}), {comp['session_frames_min']:,} to "
          f"{comp['session_frames_max']:,} frames each; {comp['frames']:,} frames, {comp['bytes'] / 1e6:,.0f} MB of "
          f"raw, {comp['bytes'] / max(comp['frames'], 1):,.0f} B/frame")
    kinds = comp["kinds"]
    cells = []
    for kind in KINDS:
        c, s = kinds.get(f"{kind} c2s", 0), kinds.get(f"{kind} s2c", 0)
        if c or s:
            cells.append(f"{kind} {c:,}/{s:,}")
    print("    kinds (c2s/s2c): " + ", ".join(cells))
    top = sorted(comp["methods"].items(), key=lambda kv: -kv[1])
    print("    methods: " + ", ".join(f"{k} {v:,}" for k, v in top))
    v = comp["violations"]
    print(f"    violations injected: {sum(v.values()):,} ({sum(v.values()) / comp['frames']:.2%} of frames): "
          + ", ".join(f"{k} {v.get(k, 0):,}" for k in VIOLATIONS))


# -- (a) baseline -------------------------------------------------------------------------------

def classify(msg) -> str:
    if isinstance(msg, list):
        return "batch" if msg else "invalid"
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        return "invalid"
    if "method" in msg:
        if not isinstance(msg["method"], str):
            return "invalid"
        if "id" in msg:
            i = msg["id"]
            if isinstance(i, bool) or not (i is None or isinstance(i, (str, int, float))):
                return "invalid"
            p = msg.get("params", {})
            return "request" if isinstance(p, (dict, list)) else "invalid"
        return "notification"
    if "id" not in msg:
        return "invalid"
    i = msg["id"]
    if isinstance(i, bool) or not (i is None or isinstance(i, (str, int, float))):
        return "invalid"
    if "result" in msg:
        return "invalid" if "error" in msg else "response"
    if "error" in msg:
        e = msg["error"]
        if isinstance(e, dict) and isinstance(e.get("code"), int) and isinstance(e.get("message"), str):
            return "error"
    return "invalid"


def baseline(db: str) -> dict:
    """Read, parse, classify and pair every frame; store nothing."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    kinds: Counter = Counter()
    matched = unknown = unanswered = 0
    pending = {C2S: {}, S2C: {}}
    other = {C2S: S2C, S2C: C2S}
    current = None
    loads = json.loads
    t0, cpu0 = time.perf_counter(), time.process_time()
    n = 0
    try:
        for session_id, seq, direction, raw in conn.execute(
                "SELECT session_id, seq, direction, CAST(raw AS BLOB) FROM frames ORDER BY session_id, seq"):
            n += 1
            if session_id != current:
                unanswered += len(pending[C2S]) + len(pending[S2C])
                pending = {C2S: {}, S2C: {}}
                current = session_id
            try:
                msg = loads(raw)
            except ValueError:  # JSONDecodeError and UnicodeDecodeError
                kinds["unparseable"] += 1
                continue
            kind = classify(msg)
            kinds[kind] += 1
            elements = [(kind, msg)] if kind != "batch" else [(classify(m), m) for m in msg]
            for k, m in elements:
                if k == "request":
                    i = m["id"]
                    pending[direction][(i.__class__, i)] = seq
                elif k == "response" or k == "error":
                    i = m["id"]
                    if pending[other[direction]].pop((i.__class__, i), None) is None:
                        unknown += 1
                    else:
                        matched += 1
        unanswered += len(pending[C2S]) + len(pending[S2C])
    finally:
        conn.close()
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {"n": n, "s": elapsed, "cpu_s": cpu, "rate": n / elapsed if elapsed else float("inf"), "kinds": kinds,
            "matched": matched, "unknown": unknown, "unanswered": unanswered}


# -- where (b)'s time goes ---------------------------------------------------------------------

def stages(db: str) -> dict:
    """Per-frame CPU of the product's own stages, in this process, one after the other: reading
    the frames as the analysis does (store.iter_raw_frames, READ_FRAMES at a time), reading and
    scanning their envelopes (the native scanner, when built), reading and analysing them
    (SessionAnalysis.feed: the fast path, the exact path for the rest; nothing stored),
    and, for scale, reading and analysing every frame through the exact path alone. Each is
    timed over every session of the database; the differences are the cost of each stage."""
    from mcptap import engine
    from mcptap.analysis import session

    conn = store.open_existing(db)
    reader = store.open_existing(db)
    ids = store.session_ids(conn)
    scan = session._wirescan.scan if session._wirescan is not None else (lambda raw: None)

    def chunks(sid):
        cursor = store.iter_raw_frames(reader, sid)
        while chunk := cursor.fetchmany(engine.READ_FRAMES):
            yield chunk

    def read(sid):
        for _ in chunks(sid):
            pass

    def scanned(sid):
        for chunk in chunks(sid):
            for row in chunk:
                scan(row[3])

    def analysed(sid, exact_only=False, policy=None):
        analysis = engine.new_analysis(conn, sid, policy=policy)
        if exact_only:
            analysis._scan = None
        for chunk in chunks(sid):
            analysis.feed(chunk)
        analysis.end()

    out = {}
    try:
        n = store.count_frames(conn)
        from mcptap.analysis.policy import build
        plain = build(ignore=WITHOUT_SCHEMAS[1::2])
        for name, fn in (("read", read), ("scan", scanned), ("analyse", analysed),
                         ("plain", lambda sid: analysed(sid, policy=plain)),
                         ("exact", lambda sid: analysed(sid, exact_only=True))):
            t0 = time.process_time()
            for sid in ids:
                fn(sid)
            out[name] = (time.process_time() - t0) / n * 1e6
    finally:
        conn.close()
        reader.close()
    return out


def print_stages(st: dict, r: dict, b: dict, n: int) -> None:
    read, scan, analyse = st["read"], st["scan"] - st["read"], st["analyse"] - st["scan"]
    total = r["cpu_s"] / n * 1e6
    rest = total - st["analyse"]
    print(f"    where (b)'s CPU goes, per frame: read {read:.1f} us, envelope scan {scan:.1f} us (strict JSON, "
          f"UTF-8, duplicate names), analyse {analyse:.1f} us (classify, pair, rules, rows), store, index, "
          f"start-up and report {rest:.1f} us; (b) in all {total:.1f} us over {os.cpu_count()} CPUs; baseline "
          f"{1e6 / b['rate']:.1f} us on one; every frame through the exact path instead: "
          f"{st['exact'] - st['read']:.1f} us to analyse; without the schema checks {st['plain'] - st['read']:.1f} us to "
          f"analyse (with them {analyse + scan:.1f} us: {(st['plain'] - st['read']) / (analyse + scan):.2f} as fast)")


# -- (b) mcptap analyze -------------------------------------------------------------------------

class TreeSampler(threading.Thread):
    """Peak RSS (VmHWM) of every descendant of a process, read from /proc every SAMPLE_S."""

    SAMPLE_S = 0.02

    def __init__(self, pid: int, *, skip_root: bool = True):
        super().__init__(daemon=True)
        self.root = pid
        self.skip_root = skip_root  # the launcher is not part of what is measured
        self.peaks_kb: dict[int, int] = {}
        self.names: dict[int, str] = {}
        self._stop_event = threading.Event()

    def run(self) -> None:
        while True:
            self.sample()
            if self._stop_event.wait(self.SAMPLE_S):
                break

    def stop(self) -> None:
        self._stop_event.set()
        self.join()

    def sample(self) -> None:
        todo, seen = [self.root], set()
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            try:
                with open(f"/proc/{pid}/status", encoding="utf-8") as fh:
                    hwm = next((int(line.split()[1]) for line in fh if line.startswith("VmHWM:")), 0)
                for tid in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{tid}/children", encoding="utf-8") as fh:
                        todo.extend(int(c) for c in fh.read().split())
            except (OSError, ValueError):
                continue
            if pid == self.root and self.skip_root:
                continue
            if pid not in self.names:
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as fh:
                        self.names[pid] = fh.read().replace(b"\0", b" ").decode("utf-8", "replace")[:80]
                except OSError:
                    self.names[pid] = "?"
            self.peaks_kb[pid] = max(self.peaks_kb.get(pid, 0), hwm)


def table_counts(db: str) -> dict:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        out: dict = {"tables": sorted(tables), "frames": conn.execute("SELECT count(*) FROM frames").fetchone()[0]}
        if "messages" in tables:
            cols = {r[1] for r in conn.execute("PRAGMA table_info(messages)")}
            out["messages"] = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
            if "idx" in cols:
                out["messages_frame_rows"] = conn.execute("SELECT count(*) FROM messages WHERE idx IS NULL").fetchone()[0]
        if "findings" in tables:
            out["findings"] = conn.execute("SELECT count(*) FROM findings").fetchone()[0]
            cols = {r[1] for r in conn.execute("PRAGMA table_info(findings)")}
            if "code" in cols:
                out["codes"] = dict(conn.execute("SELECT code, count(*) FROM findings GROUP BY code ORDER BY 2 DESC"))
        return out
    finally:
        conn.close()


def compile_package() -> str:
    """Compile the package's modules into its __pycache__ (as an installed copy has them) and drop
    PYTHONDONTWRITEBYTECODE from the environment the timed subprocesses inherit, so that none of
    them compiles the package from source; what was done, for the header."""
    import compileall

    import mcptap

    t0 = time.perf_counter()
    ok = all(compileall.compile_dir(d, quiet=1) for d in mcptap.__path__)
    had = os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None
    return (f"bytecode: compiled the package into its __pycache__ ({time.perf_counter() - t0:.1f} s"
            f"{'' if ok else ', some files failed'}) as an installed copy has it"
            f"{'; PYTHONDONTWRITEBYTECODE dropped from the subprocesses environment' if had else ''}")


def cli_startup() -> float:
    """Best of 3 of `python -m mcptap --version`: the part of (b)'s wall time that is start-up."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mcptap", "--version"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
        best = min(best, time.perf_counter() - t0)
    return best


PATHS_CODE = """\
import mcptap
from mcptap.analysis import session
scanner = session._wirescan
print(("the native envelope scanner (%s)" % scanner.__file__) if scanner is not None
      else "no native scanner: every frame through the exact parser")
print("mcptap from %s" % mcptap.__file__.rsplit("/", 1)[0])
"""


def paths_measured() -> list[str]:
    """What (b) runs, asked of the same interpreter from the same folder: where mcptap comes
    from, and whether its frames take the native envelope scanner (analyzer/_wirescan.c)."""
    done = subprocess.run([sys.executable, "-c", PATHS_CODE], capture_output=True, text=True, check=False,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return done.stdout.splitlines() if done.returncode == 0 else [f"mcptap does not import: {done.stderr.strip()}"]


def analyze_argv(db: str, fmt: str = "json") -> list[str]:
    return [sys.executable, "-m", "mcptap", "analyze", "--db", db, "--format", fmt, "--fail-on", "never"]


# argv: STATS_PATH CMD...: forks, execs CMD, reaps it with wait4 and writes
# "maxrss_kb cpu_s wall_s exit_status" to STATS_PATH; exits with CMD's status. Why a launcher: a
# child started straight from this driver (subprocess uses vfork) keeps the driver's own peak in
# its ru_maxrss across execve (Linux folds the old mm's high-water mark into signal->maxrss), and
# the driver has held the generator's rows. Forked from this small launcher, the floor is the
# launcher's ~10 MB.
LAUNCHER_CODE = """\
import os, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execv(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t0
code = os.waitstatus_to_exitcode(status)
with open(sys.argv[1], "w") as fh:
    fh.write("%d %.6f %.6f %d" % (ru.ru_maxrss, ru.ru_utime + ru.ru_stime, wall, code))
sys.exit(code if 0 <= code < 256 else 1)
"""


def launched(argv: list[str], stats_path: str, stdout, stderr, cwd: str | None = None, env: dict | None = None) -> dict:
    """Run `argv` under the launcher (wait4's peak RSS, CPU and wall time) with the process tree
    sampled: {"s", "cpu_s", "status", "wait4_mb", "peaks_kb", "names"}."""
    proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", LAUNCHER_CODE, stats_path, *argv],
                            stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=env,
                            cwd=cwd or os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sampler = TreeSampler(proc.pid)
    sampler.start()
    try:
        proc.wait()
    finally:
        sampler.stop()
    try:
        with open(stats_path, encoding="utf-8") as fh:
            maxrss_kb, cpu_s, wall_s, status = fh.read().split()
    except (OSError, ValueError):  # the launcher itself failed
        maxrss_kb, cpu_s, wall_s, status = "0", "nan", "nan", str(proc.returncode or 1)
    return {"s": float(wall_s), "cpu_s": float(cpu_s), "status": int(status), "wait4_mb": int(maxrss_kb) / 1024,
            "peaks_kb": dict(sampler.peaks_kb), "names": dict(sampler.names)}


def run_analyze(src: str, tmp: str, n: int, extra: tuple[str, ...] = (), fmt: str = "json") -> dict:
    db = os.path.join(tmp, f"analyze-{n}.db")
    shutil.copyfile(src, db)
    os.sync()  # the copy's dirty pages written back now, not by the kernel while (b) is timed
    out_path, err_path, stats_path = db + ".out.json", db + ".stderr", db + ".stats"
    argv = analyze_argv(db, fmt) + list(extra)
    r: dict = {"n": n, "argv": argv}
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        run = launched(argv, stats_path, out, err)
    r.update((k, run[k]) for k in ("s", "status", "cpu_s", "wait4_mb"))
    r["rate"] = n / r["s"] if r["s"] else float("inf")
    r["processes"] = len(run["peaks_kb"])
    r["sampled_sum_mb"] = sum(run["peaks_kb"].values()) / 1024
    r["peak_mb"] = max(r["wait4_mb"], r["sampled_sum_mb"])
    r["tree"] = [(p, run["names"].get(p, "?"), kb / 1024) for p, kb in run["peaks_kb"].items()]
    with open(err_path, encoding="utf-8", errors="replace") as fh:
        r["stderr"] = fh.read().strip()
    r["out_mb"] = os.path.getsize(out_path) / 2**20
    try:
        r["tables"] = table_counts(db)
    except sqlite3.Error as exc:
        r["tables"] = {"error": str(exc)}
    if r["status"] == 0 and fmt == "json":
        try:
            with open(out_path, encoding="utf-8") as fh:
                report = json.load(fh)
            kinds: Counter = Counter()
            for s in report.get("sessions", []):
                kinds.update(s.get("kinds") or {})
            r["report"] = {"sessions": len(report.get("sessions", [])), "findings": len(report.get("findings", [])),
                           "kinds": kinds}
        except (ValueError, OSError, AttributeError, TypeError) as exc:
            r["report"] = {"error": f"{type(exc).__name__}: {exc}"}
    for p in (db, db + "-wal", db + "-shm"):
        if os.path.exists(p):
            os.unlink(p)
    return r


def expected_codes(comp: dict) -> Counter:
    """Findings by code that the injected violations (and their consequences) should produce."""
    expected: Counter = Counter()
    for v, k in comp["violations"].items():
        for code in EXPECTED_CODES[v]:
            expected[code] += k
    expected.update(comp.get("consequences", {}))
    return expected


def print_analyze(r: dict, comp: dict) -> None:
    if r["status"] != 0:
        missing = "No such command" in r["stderr"] and "analyze" in r["stderr"]
        why = "`mcptap analyze` does not exist yet" if missing else "it failed"
        print(f"    (b) mcptap analyze: exit status {r['status']} after {r['s']:.2f} s: {why}")
        lines = [line for line in r["stderr"].splitlines() if line.strip()]
        for line in lines[-1:] if missing else lines[-8:]:
            print(f"        stderr: {line}")
        return
    print(f"    (b) mcptap analyze: {r['rate']:>11,.0f} frames/s ({r['s']:.2f} s wall, start-up included; CPU "
          f"{r['cpu_s']:.2f} s = {r['cpu_s'] / r['n'] * 1e6:.2f} us/frame); report {r['out_mb']:.1f} MB")
    print(f"        peak RSS {r['peak_mb']:.1f} MB (wait4, largest process: {r['wait4_mb']:.1f} MB; sum of sampled "
          f"VmHWM over {r['processes']} process(es): {r['sampled_sum_mb']:.1f} MB)")
    if r["processes"] > 1:
        for pid, name, mb in r["tree"]:
            print(f"          {mb:7.1f} MB  pid {pid}: {name}")
    t = r["tables"]
    if "error" in t:
        print(f"        tables: cannot read the copy: {t['error']}")
        return
    if t["frames"] != r["n"]:
        print(f"        FRAMES CHANGED: {t['frames']:,} rows in frames, expected {r['n']:,}")
    if "messages" not in t or "findings" not in t:
        print(f"        results NOT stored: no {'messages' if 'messages' not in t else 'findings'} table "
              f"(tables: {', '.join(t['tables'])})")
    else:
        per_frame = t.get("messages_frame_rows")
        print(f"        stored: messages {t['messages']:,} rows ({'?' if per_frame is None else f'{per_frame:,}'} with "
              f"idx NULL, one per frame expected: {r['n']:,}), findings {t['findings']:,} rows")
        expected = expected_codes(comp)
        codes = t.get("codes", {})
        print("        findings by code (stored / expected from the injections):")
        for code in sorted(set(codes) | set(expected), key=lambda c: (-codes.get(c, 0), c)):
            mark = "" if codes.get(code, 0) == expected.get(code, 0) else "   <- differs"
            why = f"  ({CONSEQUENCES[code]})" if code in CONSEQUENCES and expected.get(code) else ""
            print(f"          {code:<30} {codes.get(code, 0):>8,} / {expected.get(code, 0):>8,}{why}{mark}")
    rep = r.get("report")
    if rep and "error" not in rep:
        kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(rep["kinds"].items(), key=lambda kv: -kv[1]))
        print(f"        JSON report: {rep['sessions']:,} sessions (generated {comp['sessions']:,}), "
              f"{rep['findings']:,} findings; kinds: {kinds}")
    elif rep:
        print(f"        JSON report unreadable: {rep['error']}")


# -- report -------------------------------------------------------------------------------------


def print_baseline(b: dict, comp: dict) -> None:
    kinds = ", ".join(f"{k} {b['kinds'].get(k, 0):,}" for k in KINDS if b["kinds"].get(k))
    print(f"    (a) baseline:       {b['rate']:>11,.0f} frames/s ({b['s']:.2f} s, best of {BASELINE_RUNS}); "
          f"{b['n']:,} frames: {kinds}")
    # what the generator's composition says the dict pairing must find (a check of both)
    v = comp["violations"].get
    unmatched = v("unknown-response-id", 0) + v("batch", 0) + v("duplicate-request-id", 0)
    unanswered = v("missing-response", 0) + 2 * v("batch", 0) + comp["methods"].get("notifications/cancelled c2s", 0)
    same = b["unknown"] == unmatched and b["unanswered"] == unanswered
    print(f"        pairs matched {b['matched']:,}; unmatched responses {b['unknown']:,} (expected {unmatched:,}: stray "
          f"ids, id-null errors to batches, second answers to a duplicated id); requests unanswered "
          f"{b['unanswered']:,} (expected {unanswered:,}: missing responses, batch elements, cancelled)"
          + ("" if same else "   <- MISMATCH"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 frames only")
    parser.add_argument("--regenerate", action="store_true", help="rebuild the cached databases")
    parser.add_argument("--seed", type=int, default=1, help="generator seed (default 1)")
    args = parser.parse_args(argv)
    sizes = [SMALL_N] if args.quick else [SMALL_N, LARGE_N]
    big = sizes[-1]

    print(f"mcptap analyze benchmark{' (quick)' if args.quick else ''}: Python {platform.python_version()} "
          f"on {platform.system()} {platform.release()}, {os.cpu_count()} CPUs, "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(compile_package())
    paths = paths_measured()
    print("paths measured: " + "; ".join(paths))
    rows: list[tuple[str, str, str, str]] = []
    dbs: dict[int, tuple[str, dict]] = {}
    for n in sizes:
        print(f"\n[db] {n:,} frames, seed {args.seed}")
        path, comp, gen_s = ensure_database(n, args.seed, args.regenerate)
        dbs[n] = (path, comp)
        print_composition(n, comp, gen_s, path)
        if gen_s is not None:
            rows.append((f"generate {n:,} frames", f"{gen_s:.1f} s", "(info)", ""))

    startup = cli_startup()
    tmp = tempfile.mkdtemp(prefix="run-", dir=CACHE_DIR)
    results: dict[int, tuple[dict, dict, dict]] = {}
    try:
        for n in sizes:
            path, comp = dbs[n]
            print(f"\n[{n:,} frames]")
            warm(path)
            b = min((baseline(path) for _ in range(BASELINE_RUNS)), key=lambda x: x["s"])
            print_baseline(b, comp)
            r = run_analyze(path, tmp, n)
            print_analyze(r, comp)
            if r["status"] == 0:
                plain = run_analyze(path, tmp, n, WITHOUT_SCHEMAS)
                r["plain_rate"] = plain["rate"] if plain["status"] == 0 else None
                print(f"    without the schema checks ({' '.join(WITHOUT_SCHEMAS)}): {plain['s']:.2f} s wall, "
                      f"{plain['cpu_s']:.2f} s CPU, {plain['rate']:,.0f} frames/s; with them: {r['s']:.2f} s wall, "
                      f"{r['cpu_s']:.2f} s CPU, {r['rate']:,.0f} frames/s")
                unsafe = run_analyze(path, tmp, n, WITHOUT_SECURITY)
                r["unsafe_rate"] = unsafe["rate"] if unsafe["status"] == 0 else None
                r["unsafe_cpu_s"] = unsafe["cpu_s"] if unsafe["status"] == 0 else None
                print(f"    without the security group (--ignore-code each of its {len(SECURITY_CODES)} codes): "
                      f"{unsafe['s']:.2f} s wall, {unsafe['cpu_s']:.2f} s CPU, {unsafe['rate']:,.0f} frames/s")
                text = run_analyze(path, tmp, n, fmt="text")
                r["text"] = text
                print(f"    --format text: {text['s']:.2f} s wall, {text['cpu_s']:.2f} s CPU "
                      f"({text['cpu_s'] / n * 1e6:.2f} us/frame), peak RSS {text['peak_mb']:.1f} MB (largest process "
                      f"{text['wait4_mb']:.1f} MB, {text['processes']} process(es)), exit status {text['status']}")
            if n == big and r["status"] == 0:
                print_stages(stages(path), r, b, n)
            results[n] = (b, r, comp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    for n in sizes:
        b, r, _ = results[n]
        tag = f" ({n // 1000:,}k)"
        is_big = n == big
        rows.append(("baseline frames/s" + tag, f"{b['rate']:,.0f}", "(baseline)", ""))
        if r["status"] != 0:
            rows.append(("analyze" + tag, f"exit {r['status']}", "exit 0", "MISS"))
            continue
        speedup = r["rate"] / b["rate"]
        rows.append(("analyze frames/s" + tag, f"{r['rate']:,.0f}", "(info)", ""))
        rows.append(("analyze vs baseline, frames/s" + tag, f"{speedup:.2f}x", f">= {TARGET_SPEEDUP:.1f}x",
                     verdict(speedup >= TARGET_SPEEDUP)))
        cpu_ratio = (r["cpu_s"] / n) / (b["cpu_s"] / b["n"])
        limit = TARGET_CPU_RATIO.get(n)
        rows.append(("analyze CPU/frame vs baseline" + tag,
                     f"{cpu_ratio:.2f}x ({r['cpu_s'] / n * 1e6:.1f} / {b['cpu_s'] / b['n'] * 1e6:.1f} us)",
                     f"<= {limit:.1f}x" if limit else "(info)", verdict(cpu_ratio <= limit) if limit else ""))
        if r.get("plain_rate"):
            ratio = r["rate"] / r["plain_rate"]
            rows.append(("with schema checks / without" + tag, f"{ratio:.2f}", f">= {TARGET_SCHEMA_RATIO}",
                         verdict(ratio >= TARGET_SCHEMA_RATIO)))
        if r.get("unsafe_rate"):
            ratio = r["rate"] / r["unsafe_rate"]
            rows.append(("with the security group / without" + tag, f"{ratio:.2f}", f">= {TARGET_SECURITY_RATIO}",
                         verdict(ratio >= TARGET_SECURITY_RATIO)))
            if r.get("unsafe_cpu_s") and r.get("cpu_s"):  # CPU time: what a loaded machine does not skew
                rows.append(("  the same by CPU time" + tag, f"{r['unsafe_cpu_s'] / r['cpu_s']:.2f}", "(info)", ""))
        for label, run_ in (("json", r), ("text", r.get("text"))):
            if run_ is None or run_["status"] != 0:
                continue
            rows.append((f"analyze peak RSS, --format {label}" + tag, f"{run_['peak_mb']:.1f} MB",
                         f"<= {TARGET_PEAK_RSS_MB:.0f} MB" if is_big else "(info)",
                         verdict(run_["peak_mb"] <= TARGET_PEAK_RSS_MB) if is_big else ""))
        t = r["tables"]
        stored = t.get("messages_frame_rows") == n and "findings" in t
        value = (f"{t.get('messages_frame_rows', 0):,} + {t.get('findings', 0):,}" if "messages" in t
                 else "no tables")
        rows.append(("stored: frame rows + findings" + tag, value, "a row per frame", verdict(stored)))
        if "codes" in t:
            codes, expected = Counter(t["codes"]), expected_codes(results[n][2])
            extra, missed = sum((codes - expected).values()), sum((expected - codes).values())
            rows.append(("findings vs injected" + tag, "same" if not extra + missed else f"+{extra:,} / -{missed:,}",
                         "(info)", ""))
    if len(sizes) > 1 and all(results[n][1]["status"] == 0 for n in sizes):
        for label in ("json", "text"):
            runs = [results[n][1] if label == "json" else results[n][1].get("text") for n in (sizes[0], big)]
            if any(x is None or x["status"] != 0 for x in runs):
                continue
            small, large = runs[0]["peak_mb"], runs[1]["peak_mb"]
            growth = (large - small) / small if small else float("inf")
            rows.append((f"peak RSS growth {sizes[0] // 1000}k -> {big // 1000:,}k, --format {label}",
                         f"{growth:+.0%}", f"<= +{TARGET_RSS_GROWTH:.0%}", verdict(growth <= TARGET_RSS_GROWTH)))
    rows.append(("CLI start-up (--version)", f"{startup * 1e3:.0f} ms", "(info)", ""))
    rows.append(("envelope scanner", "native" if paths[0].startswith("the native") else "none (exact parser)",
                 "(info)", ""))
    driver_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows.append(("driver peak RSS", f"{driver_mb:.1f} MB", "(info)", ""))

    print_summary(rows)
    return 0


if __name__ == "__main__":
    run(main)
