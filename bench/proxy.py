"""Benchmark of `mcptap proxy` (addons/http/tap.py in mitmproxy's reverse mode). Not a test: it
prints figures and always exits 0.

One upstream, in a process of its own: a minimal asyncio HTTP/1.1 server (keep-alive) that
answers `POST /mcp` with a JSON-RPC result (`application/json`) and `GET /sse?n=N&gap=MS` with an
SSE stream of N progress notifications (chunked), each carrying the time it was sent. Three
paths to it, all up at once (each figure is the median of its ROUNDS rounds):
(a) direct;
(b) mitmproxy run as `mcptap proxy` runs it (DumpMaster in reverse mode), with a pass-through
    addon that streams `text/event-stream` answers and records nothing (the proxy's own floor);
(c) `mcptap proxy`, recording into a fresh database.
For each path:
- JSON answers: round-trip latency of sequential POSTs on one keep-alive connection (p50, p99)
  and messages/s with 4 clients on connections of their own;
- SSE events: latency from the upstream sending an event to this process reading it, at one
  event per millisecond (p50, p99), and events/s for a stream sent as fast as the upstream can.
Each round measures one figure on every path before the next figure, in a short slice each (the
order of the paths turns from round to round), so that a shared machine's drift, which runs over
seconds, hits every path alike. Beside the figures: the CPU time the proxy process (for (a): the
upstream) spent per JSON message while the clients ran, which the machine's load changes less.
Target: (c) within 10% of (b): latency at most 1.10x of (b)'s, messages/s at least 0.90x. Then
the database of (c) is checked: every message recorded.

Usage:  python bench/proxy.py [--quick]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

from common import print_summary, run, verdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_RATIO = 0.10
ROUNDS = 12
QUICK_ROUNDS = 5

UPSTREAM = textwrap.dedent('''
    import asyncio, json, sys, time
    from urllib.parse import urlsplit, parse_qs

    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\\r\\n\\r\\n")
                line, *fields = head.decode("latin-1").split("\\r\\n")
                method, target, _ = line.split(" ", 2)
                headers = {k.lower(): v.strip() for k, _, v in (f.partition(":") for f in fields if f)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                if method == "POST":
                    msg = json.loads(body)
                    out = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"t": time.time()}},
                                     separators=(",", ":")).encode()
                    writer.write(b"HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nContent-Length: "
                                 + str(len(out)).encode() + b"\\r\\n\\r\\n" + out)
                    await writer.drain()
                    continue
                q = parse_qs(urlsplit(target).query)
                n, gap = int(q["n"][0]), float(q["gap"][0]) / 1000
                writer.write(b"HTTP/1.1 200 OK\\r\\nContent-Type: text/event-stream\\r\\n"
                             b"Transfer-Encoding: chunked\\r\\n\\r\\n")
                for i in range(n):
                    event = ('data: {"jsonrpc":"2.0","method":"notifications/progress","params":'
                             '{"progressToken":1,"progress":%d,"t":%r}}\\n\\n' % (i + 1, time.time())).encode()
                    writer.write(b"%x\\r\\n%s\\r\\n" % (len(event), event))
                    if gap:
                        await writer.drain()
                        await asyncio.sleep(gap)
                    elif i % 64 == 0:
                        await writer.drain()
                writer.write(b"0\\r\\n\\r\\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]))
        async with server:
            await server.serve_forever()

    asyncio.run(main())
''')

FLOOR = textwrap.dedent('''
    """mitmproxy run from Python as `mcptap proxy` runs it (DumpMaster, reverse mode, no dumper,
    termlog at warn), with a pass-through addon instead of mcptap's: SSE answers streamed
    unchanged, nothing recorded."""
    import asyncio, signal, sys
    from mitmproxy import options
    from mitmproxy.tools.dump import DumpMaster

    class Floor:
        def responseheaders(self, flow):
            if flow.response.headers.get("content-type", "").startswith("text/event-stream"):
                flow.response.stream = lambda chunk: chunk

    async def main():
        master = DumpMaster(options.Options(mode=["reverse:" + sys.argv[1]], listen_host="127.0.0.1",
                                            listen_port=int(sys.argv[2])), with_termlog=True, with_dumper=False)
        master.addons.add(Floor())
        master.options.update(termlog_verbosity="warn")
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, master.shutdown)
        await master.run()

    asyncio.run(main())
''')

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "Mcp-Session-Id": "bench-session", "MCP-Protocol-Version": "2025-11-25"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"{what} did not listen within {timeout}s")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- the client side ---------------------------------------------------------------------------

def json_latency(port: int, n: int) -> list[float]:
    """Round trips of `n` sequential POSTs on one keep-alive connection (after one that opens it)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    out = []
    try:
        for i in range(n + 1):
            body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                               "params": {"name": "echo", "arguments": {"text": "x" * 200}}}).encode()
            t0 = time.perf_counter()
            conn.request("POST", "/mcp", body, HEADERS)
            conn.getresponse().read()
            if i:
                out.append(time.perf_counter() - t0)
    finally:
        conn.close()
    return out


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU time of a process so far (Linux /proc; None elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def json_throughput(port: int, clients: int, each: int) -> float:
    """Messages/s of `clients` clients, each on a connection of its own sending `each` POSTs."""
    start = threading.Barrier(clients + 1)

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        start.wait()
        for i in range(each):
            conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}).encode(), HEADERS)
            conn.getresponse().read()
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return clients * each / (time.perf_counter() - t0)


def sse(port: int, n: int, gap_ms: float) -> tuple[list[float], float]:
    """(per-event latency from the upstream's send time, events/s over the stream)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", f"/sse?n={n}&gap={gap_ms}", headers={"Accept": "text/event-stream", **HEADERS})
    resp = conn.getresponse()
    latencies, first, got = [], None, 0
    while got < n:
        line = resp.readline()
        if not line:
            break
        if line.startswith(b"data: "):
            now = time.time()
            first = first or time.perf_counter()
            latencies.append(now - json.loads(line[6:])["params"]["t"])
            got += 1
    elapsed = time.perf_counter() - first if first else float("inf")
    resp.read()
    conn.close()
    return latencies, (got - 1) / elapsed if got > 1 else 0.0


def sizes(quick: bool) -> dict[str, int]:
    """What one round sends on each path: sequential POSTs, POSTs of each of the 4 clients,
    events at one per millisecond, events of a flood."""
    return (dict(latency=100, throughput=100, events=60, flood=1000) if quick
            else dict(latency=300, throughput=200, events=300, flood=3000))


def measure(ports: dict[str, int], pids: dict[str, int], quick: bool) -> dict[str, dict]:
    """Every figure for every path, figure by figure, each the median of its rounds."""
    size = sizes(quick)
    rounds = QUICK_ROUNDS if quick else ROUNDS
    names = list(ports)
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in names}
    cpu = dict.fromkeys(names, 0.0)

    def note(name: str, key: str, value: float) -> None:
        samples[name].setdefault(key, []).append(value)

    for name in names:
        json_latency(ports[name], 200)  # warm-up
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            lat = json_latency(ports[name], size["latency"])
            note(name, "json_p50", pct(lat, 0.5))
            note(name, "json_p99", pct(lat, 0.99))
        for name in order:
            before = cpu_seconds(pids[name])
            note(name, "json_rate", json_throughput(ports[name], 4, size["throughput"]))
            after = cpu_seconds(pids[name])
            ok = cpu[name] is not None and before is not None and after is not None
            cpu[name] = cpu[name] + after - before if ok else None
        for name in order:
            ev_lat, _ = sse(ports[name], size["events"], 1.0)
            note(name, "sse_p50", pct(ev_lat, 0.5))
            note(name, "sse_p99", pct(ev_lat, 0.99))
        for name in order:
            note(name, "sse_rate", sse(ports[name], size["flood"], 0)[1])
    messages = 201 + rounds * (size["latency"] + 1 + 4 * size["throughput"])  # each latency run opens with one
    return {name: {**{key: statistics.median(values) for key, values in samples[name].items()},
                   "cpu_per_msg": cpu[name] / (rounds * 4 * size["throughput"]) if cpu[name] is not None else None,
                   "messages": messages, "events": rounds * (size["events"] + size["flood"])}
            for name in names}


# -- the paths ---------------------------------------------------------------------------------

def start(argv: list[str], port: int, what: str) -> subprocess.Popen:
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    wait_listening(port, proc, what)
    return proc


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    proc.stderr.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer messages")
    args = parser.parse_args(argv)
    print(f"mcptap proxy benchmark{' (quick)' if args.quick else ''}: Python {platform.python_version()} "
          f"on {platform.system()} {platform.release()}, {os.cpu_count()} CPUs, "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    tmp = tempfile.mkdtemp(prefix="mcptap-bench-proxy-")
    up_port = free_port()
    upstream = start([sys.executable, "-c", UPSTREAM, str(up_port)], up_port, "the upstream")
    url = f"http://127.0.0.1:{up_port}"
    db = os.path.join(tmp, "proxy.db")
    procs = []
    try:
        ports = {"direct": up_port}
        ports["floor"] = free_port()
        procs.append(start([sys.executable, "-c", FLOOR, url, str(ports["floor"])], ports["floor"],
                           "mitmproxy with a pass-through addon (floor)"))
        ports["mcptap"] = free_port()
        procs.append(start([sys.executable, "-m", "mcptap", "proxy", "--db", db, "--upstream", url, "--listen",
                            f"127.0.0.1:{ports['mcptap']}"], ports["mcptap"], "mcptap proxy"))
        pids = {"direct": upstream.pid, "floor": procs[0].pid, "mcptap": procs[1].pid}
        results = measure(ports, pids, args.quick)
    finally:
        for proc in procs:
            stop(proc)
        stop(upstream)
    conn = sqlite3.connect(db)
    frames = conn.execute("SELECT count(*) FROM frames").fetchone()[0]
    conn.close()
    expected = 2 * results["mcptap"]["messages"] + results["mcptap"]["events"]

    print("\n    path       JSON p50    JSON p99    JSON msg/s   CPU/msg     SSE p50     SSE p99     SSE events/s")
    for name, r in results.items():
        cpu = f"{r['cpu_per_msg'] * 1e6:6.0f} us" if r["cpu_per_msg"] is not None else "      -  "
        print(f"    {name:<9}  {r['json_p50'] * 1e3:7.3f} ms  {r['json_p99'] * 1e3:7.3f} ms  {r['json_rate']:10,.0f}"
              f"  {cpu}  {r['sse_p50'] * 1e3:7.3f} ms  {r['sse_p99'] * 1e3:7.3f} ms  {r['sse_rate']:12,.0f}")
    print("    CPU/msg: CPU time of the proxy process (direct: the upstream's) per JSON message while the 4 clients ran")
    print(f"    recorded by (c): {frames:,} frames (expected {expected:,}: each POST and its answer, every event)")

    b, c = results["floor"], results["mcptap"]
    rows = []
    for key, label, higher_is_better in (("json_p50", "JSON latency p50", False), ("json_p99", "JSON latency p99", False),
                                         ("json_rate", "JSON messages/s", True), ("sse_p50", "SSE latency p50", False),
                                         ("sse_p99", "SSE latency p99", False), ("sse_rate", "SSE events/s", True)):
        ratio = c[key] / b[key] if b[key] else float("inf")
        ok = ratio >= 1 - TARGET_RATIO if higher_is_better else ratio <= 1 + TARGET_RATIO
        target = f">= {1 - TARGET_RATIO:.2f}x of (b)" if higher_is_better else f"<= {1 + TARGET_RATIO:.2f}x of (b)"
        rows.append((f"{label}: (c) / (b)", f"{ratio:.2f}x", target, verdict(ok)))
    if b["cpu_per_msg"] and c["cpu_per_msg"]:
        rows.append(("proxy CPU per JSON message: (c) / (b)", f"{c['cpu_per_msg'] / b['cpu_per_msg']:.2f}x",
                     "(explains the rate)", ""))
    rows.append(("frames recorded by (c)", f"{frames:,}", f"{expected:,}", verdict(frames == expected)))
    print_summary(rows)
    return 0


if __name__ == "__main__":
    run(main)
