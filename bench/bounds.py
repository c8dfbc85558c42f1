"""Benchmark of capture's bounds (issue 15, items 2, 3 and 9): peak memory of every process and
stop times, for one huge frame and for decompression bombs. Not a test: it prints figures and
always exits 0.

Scenarios (SIZE: --size MiB, default 512):
- json:        `mcptap proxy` in front of an upstream answering a POST with a SIZE JSON answer;
- gzip-post:   a POST whose gzip body decodes to SIZE (a few hundred KB on the wire);
- gzip-answer: a JSON answer whose gzip body decodes to SIZE;
- sse:         an SSE event of SIZE that never ends: SIGINT comes while it is still passing;
- import-br:   `mcptap import` of a mitmproxy dump whose brotli bodies decode to SIZE each;
- tee:         `mcptap record -- cat` with a SIZE line, both ways;
- proxy-ping, import-small, tee-empty: the baselines, measured in the same run (one ping; a
  dump of one small exchange; an empty session).
For each: the peak RSS (VmHWM, polled every 20 ms; a high-water mark, so nothing is missed while
the process lives) of the proxy (or tee, or import) and of its recorder process (wait4's
ru_maxrss is printed too, but Linux counts in it what the child held before exec, a copy of
this process's RSS at fork: read it only when this process is small), the time from SIGINT (or end of
input) to exit, and what was stored (raw bytes kept, size recorded, incomplete). `--tree PATH`
runs another checkout (e.g. the base commit) with this interpreter, for a comparison measured
in the same run.

Usage:  python bench/bounds.py [--size MIB] [--max-frame BYTES] [--tree PATH] [--only NAME,...]
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trees  # noqa: E402  (bench/trees.py)
from common import run  # noqa: E402

UPSTREAM = r'''
import gzip, json, socket, sys, threading
size = int(sys.argv[1])
block = b"x" * (1 << 20)
def pad(head, tail=b'"}}'):
    n = size - len(head) - len(tail)
    yield head
    for _ in range(n // len(block)):
        yield block
    yield b"x" * (n % len(block))
    yield tail
def packed(head):
    c = gzip.GzipFile(fileobj=(buf := __import__("io").BytesIO()), mode="wb", compresslevel=6)
    for part in pad(head):
        c.write(part)
    c.close()
    return buf.getvalue()
answer_gz = packed(b'{"jsonrpc":"2.0","id":2,"result":{"pad":"') if sys.argv[2] == "gzip-answer" else b""
sock = socket.socket(); sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", 0)); sock.listen(16)
print(sock.getsockname()[1], flush=True)
def serve(conn):
    try:
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        n = next((int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")), 0)
        while len(body) < n:
            body += conn.recv(1 << 20)
        if b"content-encoding: gzip" in head.lower():
            body = gzip.decompress(body)[:200]
        method = body.split(b'"method":"')[1].split(b'"')[0] if b'"method":"' in body else b""
        if method == b"big/json":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % size)
            for part in pad(b'{"jsonrpc":"2.0","id":1,"result":{"pad":"'):
                conn.sendall(part)
        elif method == b"big/gzip":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(answer_gz), answer_gz))
        elif method == b"big/sse":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            for part in pad(b'data: {"jsonrpc":"2.0","method":"n","params":"', b""):
                if part:
                    conn.sendall(b"%x\r\n%s\r\n" % (len(part), part))
            threading.Event().wait(600)  # the event never ends
        else:
            out = b'{"jsonrpc":"2.0","id":1,"result":{}}'
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(out), out))
    except OSError:
        pass
    finally:
        conn.close()
while True:
    c, _ = sock.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
'''


def hwm(pid: int) -> int:
    """VmHWM of a process in bytes (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


class Peaks:
    """Polls VmHWM of a process and of its children (the recorder) until stopped."""

    def __init__(self, pid: int):
        self.pid = pid
        self.peak: dict[str, int] = {"main": 0, "recorder": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.peak["main"] = max(self.peak["main"], hwm(self.pid))
            try:
                with open(f"/proc/{self.pid}/task/{self.pid}/children", encoding="utf-8") as fh:
                    kids = [int(p) for p in fh.read().split()]
            except OSError:
                kids = []
            for kid in kids:
                self.peak["recorder"] = max(self.peak["recorder"], hwm(kid))
            self._stop.wait(0.02)

    def stop(self) -> dict[str, int]:
        self._stop.set()
        self._thread.join()
        return self.peak


def waited(proc: subprocess.Popen, timeout: float) -> tuple[int, int]:
    """wait4 the process: (exit status, ru_maxrss in bytes); kills it after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage.ru_maxrss * 1024
        if time.monotonic() > deadline:
            proc.kill()
        time.sleep(0.01)


def env_for(tree: str) -> dict:
    env = trees.pythonpath(tree)
    env["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="bounds-config-")
    return env


def mcptap(tree: str, *args: str) -> list[str]:
    return [sys.executable, "-P", "-c", f"import sys; sys.path[:0] = {trees.import_path(tree)!r}; import runpy; "
            "runpy.run_module('mcptap', run_name='__main__')", *args]


def stored(db: str) -> list[tuple]:
    try:
        conn = sqlite3.connect(db)
        rows = conn.execute("SELECT direction, length(CAST(raw AS BLOB)), size, incomplete FROM frames "
                            "ORDER BY session_id, seq").fetchall()
        conn.close()
        return rows
    except sqlite3.Error as exc:
        return [("error", str(exc))]


def mib(n: int) -> str:
    return f"{n / (1 << 20):.0f} MiB"


def proxy_case(name: str, tree: str, size: int, max_frame: int | None, folder: str) -> dict:
    up = subprocess.Popen([sys.executable, "-c", UPSTREAM, str(size), name], stdout=subprocess.PIPE, text=True)
    port = int(up.stdout.readline())
    db = os.path.join(folder, f"{name}.db")
    extra = ["--max-frame", str(max_frame)] if max_frame else []
    proxy = subprocess.Popen(mcptap(tree, "proxy", "--db", db, "--upstream", f"http://127.0.0.1:{port}/mcp",
                                    "--listen", "127.0.0.1:0", *extra),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env_for(tree))
    line = b""
    while b"listening on http://" not in line:
        line = proxy.stderr.readline()
        if not line:
            raise RuntimeError("the proxy did not start")
    threading.Thread(target=lambda: proxy.stderr.read(), daemon=True).start()
    where = line.split(b"listening on http://")[1].split(b"/")[0].decode()
    host, pport = where.split(":")
    conn = http.client.HTTPConnection(host, int(pport), timeout=600)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if name == "gzip-post":
        body = gzip.compress(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"'
                             + b"x" * (size - 60) + b'"}}', 6)
        headers["Content-Encoding"] = "gzip"
    else:
        body = b'{"jsonrpc":"2.0","id":1,"method":"big/%s"}' % {"json": b"json", "gzip-answer": b"gzip",
                                                                "sse": b"sse", "proxy-ping": b"ping"}[name]
    peaks = Peaks(proxy.pid)
    began = time.monotonic()
    got = 0
    conn.request("POST", "/mcp", body=body, headers=headers)
    response = conn.getresponse()
    while True:
        chunk = response.read1(1 << 20)
        if not chunk:
            break
        got += len(chunk)
        if name == "sse" and got >= size:
            break
    passed = time.monotonic() - began
    time.sleep(0.5)  # what was stored settles (a figure, not a synchronisation: nothing depends on it)
    stopping = time.monotonic()
    proxy.send_signal(signal.SIGINT)
    status, maxrss = waited(proxy, 300)
    stop_s = time.monotonic() - stopping
    peak = peaks.stop()
    conn.close()
    up.kill()
    up.wait()
    return {"name": name, "status": status, "passed_s": passed, "stop_s": stop_s, "main": peak["main"],
            "recorder": peak["recorder"], "wait4": maxrss, "client_bytes": got, "stored": stored(db),
            "db": os.path.getsize(db)}


def import_case(name: str, tree: str, size: int, max_frame: int | None, folder: str) -> dict:
    sys.path[:0] = trees.import_path(tree)
    import brotli
    from mitmproxy import io as mitm_io
    from mitmproxy.test import tflow

    f = tflow.tflow(resp=True)
    f.request.method, f.request.path = "POST", "/mcp"
    f.request.headers["content-type"] = "application/json"
    f.request.headers["content-encoding"] = "br"
    big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * (size - 60) + b'"}}'
    f.request.raw_content = brotli.compress(big, quality=5)
    f.response.headers.clear()
    f.response.headers["content-type"] = "application/json"
    f.response.headers["content-encoding"] = "br"
    f.response.raw_content = brotli.compress(b'{"jsonrpc":"2.0","id":1,"result":{"pad":"' + b"y" * (size - 50) + b'"}}',
                                             quality=5)
    del big
    dump = os.path.join(folder, f"{name}.mitm")
    with open(dump, "wb") as fh:
        mitm_io.FlowWriter(fh).add(f)
    db = os.path.join(folder, f"{name}.db")
    extra = ["--max-frame", str(max_frame)] if max_frame else []
    began = time.monotonic()
    proc = subprocess.Popen(mcptap(tree, "import", "--db", db, *extra, dump), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env_for(tree))
    peaks = Peaks(proc.pid)
    status, maxrss = waited(proc, 600)
    took = time.monotonic() - began
    peak = peaks.stop()
    return {"name": name, "status": status, "passed_s": took, "stop_s": 0.0, "main": peak["main"],
            "recorder": 0, "wait4": maxrss, "client_bytes": os.path.getsize(dump), "stored": stored(db),
            "db": os.path.getsize(db)}


def tee_case(name: str, tree: str, size: int, max_frame: int | None, folder: str) -> dict:
    db = os.path.join(folder, f"{name}.db")
    extra = ["--max-frame", str(max_frame)] if max_frame else []
    proc = subprocess.Popen(mcptap(tree, "record", "--db", db, *extra, "--", "cat"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env_for(tree), bufsize=0)
    peaks = Peaks(proc.pid)
    began = time.monotonic()
    got = [0]

    def read() -> None:
        while chunk := proc.stdout.read(1 << 20):
            got[0] += len(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    block = b"x" * (1 << 20)
    for _ in range(size >> 20 if name == "tee" else 0):
        proc.stdin.write(block)
    proc.stdin.write(b"\n")
    proc.stdin.close()
    ending = time.monotonic()
    status, maxrss = waited(proc, 600)
    reader.join(60)
    peak = peaks.stop()
    return {"name": name, "status": status, "passed_s": ending - began, "stop_s": time.monotonic() - ending,
            "main": peak["main"], "recorder": peak["recorder"], "wait4": maxrss, "client_bytes": got[0],
            "stored": stored(db), "db": os.path.getsize(db)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512, help="MiB of each huge frame (default 512)")
    parser.add_argument("--max-frame", type=int, default=None, help="--max-frame for the tree (default: its own)")
    parser.add_argument("--tree", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--only", default="proxy-ping,json,gzip-post,gzip-answer,sse,import-small,import-br,"
                                          "tee-empty,tee")
    args = parser.parse_args()
    size = args.size << 20
    print(f"tree {args.tree}  size {mib(size)}  max-frame {args.max_frame or 'default'}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-bounds-") as folder:
        for name in args.only.split(","):
            print(f"uptime: {os.popen('uptime').read().strip()}", flush=True)
            if name in ("import-br", "import-small"):
                r = import_case(name, args.tree, size if name == "import-br" else 1 << 10, args.max_frame, folder)
            elif name in ("tee", "tee-empty"):
                r = tee_case(name, args.tree, size, args.max_frame, folder)
            else:
                r = proxy_case(name, args.tree, size, args.max_frame, folder)
            rows.append(r)
            print(f"  {r['name']:<12} exit {r['status']}  peak {'proxy/tee/import'}: {mib(r['main'])} "
                  f"(wait4 {mib(r['wait4'])}), recorder {mib(r['recorder'])}; passed in {r['passed_s']:.1f} s, "
                  f"stopped in {r['stop_s']:.2f} s; client/file {r['client_bytes']} B; database {mib(r['db'])}; "
                  f"frames (dir, kept, size, incomplete) {r['stored']}", flush=True)
    print("\nsummary (peak RSS in MiB, times in s)")
    print(f"    {'case':<12} {'main':>6} {'recorder':>8} {'stop':>6}")
    for r in rows:
        print(f"    {r['name']:<12} {r['main'] >> 20:>6} {r['recorder'] >> 20:>8} {r['stop_s']:>6.2f}")


if __name__ == "__main__":
    run(main)
