"""Benchmark of bounded work and memory in diff, serve and replay: time and peak memory for
hostile input. Not a test: it prints figures and always exits 0.

Scenarios:
- pairing:  `mcptap diff` of a session of N pings (--requests, default 60000) all sent before any
            answer and answered last first (the pairing `serve` and `replay` share);
- paths:    `mcptap diff --ignore` with one, two and three `..` steps over an answer of nested
            `content` arrays (--depth, default 300);
- post:     `mcptap serve --listen` and one POST of --post MiB (default 30): the server's peak RSS
            (VmHWM) with the default --max-body and with a --max-body above the body;
- answer:   `mcptap replay` against a stdio server answering tools/call with --answer MiB
            (default 300): replay's peak RSS (ru_maxrss of its children, read by a small parent)
            with the default --max-frame and with --max-frame 1M.
`--tree PATH` runs another checkout (e.g. the base commit) with this interpreter, for a
comparison measured on the same machine (a tree without --max-body or --max-frame on replay
refuses those runs: shown as exit 2).

Usage:  python bench/work.py [--requests N] [--depth D] [--post MIB] [--answer MIB] [--tree PATH] [--only NAME,...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
import trees  # noqa: E402  (bench/trees.py)
from tests.support.peakrss import peak_kb, run_measured  # noqa: E402  (shared with the memory tests)
from common import print_summary, run  # noqa: E402

INIT = ('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        '"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}')
INIT_ANSWER = ('{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},'
               '"serverInfo":{"name":"s","version":"1"}}}')

SERVER = r'''
import json, sys
size = int(sys.argv[1])
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        out.write(b'{"jsonrpc":"2.0","id":%d,"result":{"protocolVersion":"2025-06-18","capabilities":{},'
                  b'"serverInfo":{"name":"s","version":"1"}}}\n' % msg["id"])
    else:
        head = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"' % msg["id"]
        left = size - len(head) - 7
        out.write(head)
        while left > 0:
            out.write(b"x" * min(left, 1 << 20))
            left -= 1 << 20
        out.write(b'"}]}}\n')
    out.flush()
'''

class Bench:
    def __init__(self, tree: str, folder: str):
        self.env = trees.pythonpath(tree)
        self.folder = folder

    def mcptap(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "mcptap", *args]

    def imported(self, name: str, frames: list[tuple[str, str]]) -> str:
        log, db = os.path.join(self.folder, name + ".jsonl"), os.path.join(self.folder, name + ".db")
        with open(log, "w", encoding="utf-8") as fh:
            for seq, (direction, raw) in enumerate([("c2s", INIT), ("s2c", INIT_ANSWER), *frames], 1):
                fh.write(json.dumps({"session": "s1", "seq": seq, "ts": 1764460800 + seq / 1000,
                                     "direction": direction, "raw": raw}) + "\n")
        subprocess.run(self.mcptap("import", log, "--db", db), env=self.env, check=True, capture_output=True)
        return db

    def timed(self, argv: list[str], timeout: float = 600) -> tuple[str, float]:
        """(how it ended, the CPU seconds it took: wall time on a shared machine says little)."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            result = subprocess.run(argv, env=self.env, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"timeout after {timeout:g} s", float("nan")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return f"exit {result.returncode}", after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def pairing(b: Bench, n: int, rows: list) -> None:
    pings = [("c2s", '{"jsonrpc":"2.0","id":%d,"method":"ping"}' % i) for i in range(1, n + 1)]
    answers = [("s2c", '{"jsonrpc":"2.0","id":%d,"result":{}}' % i) for i in range(n, 0, -1)]
    db = b.imported("pairing", pings + answers)
    status, took = b.timed(b.mcptap("diff", "--db", db, "s1", "s1"))
    print(f"pairing: diff of {n} answers given last first: {took:.1f} CPU s ({status})")
    rows.append((f"diff, {n} answers last first", f"{took:.1f} CPU s", "linear", status))


def paths(b: Bench, depth: int, rows: list) -> None:
    call = ("c2s", '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}')

    def answer(text: str) -> str:
        inner = '{"type":"text","text":"%s"}' % text
        return '{"jsonrpc":"2.0","id":1,"result":' + '{"content":[' * depth + inner + "]}" * depth + "}"

    a, z = b.imported("deep-a", [call, ("s2c", answer("one"))]), b.imported("deep-b", [call, ("s2c", answer("two"))])
    for pattern in ("$..text", "$..content..text", "$..content..content..text"):
        status, took = b.timed(b.mcptap("diff", "--db", a, "--db-b", z, "s1", "s1", "--ignore", pattern), timeout=180)
        print(f"paths: depth {depth}, --ignore {pattern}: {took:.1f} CPU s ({status})")
        rows.append((f"diff --ignore {pattern}, depth {depth}", f"{took:.1f} CPU s", "< 2 s", status))


def post(b: Bench, mib: int, rows: list) -> None:
    db = b.imported("post", [])
    body = b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"' + b"x" * (mib << 20) + b'"}}'
    for options in ((), ("--max-body", f"{mib + 1}M")):
        proc = subprocess.Popen(b.mcptap("serve", "--db", db, "s1", "--listen", "127.0.0.1:0", *options), env=b.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            line = proc.stderr.readline()
            match = re.search(rb":(\d+)/mcp", line)
            if match is None:
                rows.append((f"serve --listen, {mib} MiB POST {' '.join(options)}", "-", "", "refused"))
                continue
            status = "?"
            with socket.create_connection(("127.0.0.1", int(match.group(1))), timeout=120) as sock:
                sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n" % len(body))
                try:
                    sock.sendall(body)
                except OSError:
                    pass  # refused before the body: the server closed
                try:
                    status = sock.recv(64).split(b" ")[1].decode()
                except (OSError, IndexError):
                    status = "closed"
            peak = peak_kb(proc.pid) // 1024
        finally:
            proc.terminate()
            proc.wait()
        print(f"post: serve --listen {' '.join(options) or '(default --max-body)'}, {mib} MiB POST: HTTP {status}, "
              f"peak {peak} MB")
        rows.append((f"serve --listen {' '.join(options) or 'default'}, {mib} MiB POST", f"{peak} MB",
                     "< 200 MB" if not options else "", f"HTTP {status}"))


def answer(b: Bench, mib: int, rows: list) -> None:
    db = b.imported("answer", [("c2s", '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}'),
                               ("s2c", '{"jsonrpc":"2.0","id":1,"result":{"content":[]}}')])
    server = os.path.join(b.folder, "server.py")
    with open(server, "w", encoding="utf-8") as fh:
        fh.write(SERVER)
    for options in ((), ("--max-frame", "1M")):
        argv = b.mcptap("replay", "--db", db, "s1", "--command", f"{sys.executable} {server} {mib << 20}",
                        "--timeout", "300", *options)
        out, peak = run_measured(argv, env=b.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        status = out.returncode
        print(f"answer: replay of a {mib} MiB answer {' '.join(options) or '(default --max-frame)'}: exit {status}, "
              f"peak {int(peak) // 1024} MB")
        rows.append((f"replay, {mib} MiB answer, {' '.join(options) or 'default'}", f"{int(peak) // 1024} MB",
                     "< 100 MB" if options else "", f"exit {status}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=60000)
    parser.add_argument("--depth", type=int, default=300)
    parser.add_argument("--post", type=int, default=30)
    parser.add_argument("--answer", type=int, default=300)
    parser.add_argument("--tree", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--only", default="pairing,paths,post,answer")
    args = parser.parse_args()
    rows: list = []
    with tempfile.TemporaryDirectory() as folder:
        b = Bench(args.tree, folder)
        only = args.only.split(",")
        if "pairing" in only:
            pairing(b, args.requests, rows)
        if "paths" in only:
            paths(b, args.depth, rows)
        if "post" in only:
            post(b, args.post, rows)
        if "answer" in only:
            answer(b, args.answer, rows)
    print_summary(rows)


if __name__ == "__main__":
    run(main)
