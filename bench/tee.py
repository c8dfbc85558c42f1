"""Benchmark of `mcptap record`, the recording stdio tee (addons/stdio/tee.py). Not a test: it
prints figures and always exits 0.

Everything is measured in one run, with the current interpreter (sys.executable) for the driver,
the children and the tee (`python -m mcptap record --db <tmp> -- CMD`):

1. Round-trip latency. A tiny echo child (os.read/os.write loop) sends back each ~200-byte line
   the driver writes; the driver writes one line, waits until the whole line is back, repeats.
   Three paths, kept alive side by side and measured in interleaved blocks so that drift of the
   machine hits them alike: (a) direct pipes to the child, (b) a bare Python relay (two threads,
   blocking os.read/os.write, no recording), (c) the tee. Figures: p50/p99 per path and what (c)
   adds over (a). Targets: at most +60 us at p50 and +300 us at p99.

2. Throughput. A generator child writes N frames of 200 bytes (199 + newline) to its stdout in
   1 MB writes; the driver reads and discards them. Measured through the tee: lines/s until the
   driver has read every byte (forwarding), frames/s until the tee has exited (by then every
   frame is committed), the row count of `frames` (must be N) and the tee's peak RSS. The same
   generator read directly (and through the bare relay) gives the baseline (best of 3 runs; the
   tee is run once). Targets: forwarding
   at least 300k lines/s with every frame in the database; peak RSS under 150 MB.

   The tee is two processes: the tee itself (pumps) and its recorder process (framing and
   SQLite, addons/stdio/recorder.py). Their peak RSS (VmHWM) is sampled from /proc every 10 ms
   while they run, and the target applies to the sum of the two peaks. os.wait4() on the tee is
   printed beside it as a cross-check: Linux fills its rusage with getrusage(RUSAGE_BOTH) of the
   reaped process, so its ru_maxrss is the largest peak among the tee and every child it reaped
   (recorder and generator; the generator reports its own peak and CPU time through a file),
   and its CPU time is the sum over all of them, from which the generator's own is subtracted.

0. Start-up, what a host feels when it spawns a server: from spawn to the first byte of the
   server's answer to one request written at once, median of STARTUP_RUNS interleaved spawns of
   (a) the server directly, (b) the bare relay, (c) `mcptap record` (the installed `mcptap` script
   next to this interpreter, else `python -m mcptap`). The server is a small Python process that
   answers one line, (d) with --other-tee SCRIPT, another checkout's `mcptap record` in the same
   rounds. Targets: the tee adds at most 40 ms over (a), and at most 10 ms over (b).
Times run from the first byte the driver reads, so interpreter start-up (reported separately)
does not count as forwarding. Rates are computed over N frames.

3. Live telemetry. The round trip of [1] through the tee with a child that answers each request
   (a tools/call and its result: two spans each), three tees side by side in interleaved blocks:
   (a) without telemetry, (b) with `--otlp-endpoint` to a local OTLP/HTTP receiver (a child of the
   bench answering 200 to every POST), (c) with `--otlp-endpoint` to a closed port (the endpoint
   down). Targets: (b) and (c) within 1.2x of (a) at p50 and p99; the spans (b) sent and those
   (c) dropped are read from each session's row.

Usage:  python bench/tee.py [--quick] [--startup] [--telemetry] [--startup-runs N] [--other-tee SCRIPT]
        (--quick: 2,000 round trips, 100,000 frames; --startup: [0] only; --telemetry: [3] only)
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

from common import print_summary, run, verdict

FRAME_SIZE = 200  # bytes on the wire per frame, newline included
LATENCY_LINE_SIZE = 200
WARMUP_ROUND_TRIPS = 1_000
LATENCY_BLOCK = 500  # round trips per path before switching to the next path

TARGET_ADDED_P50_US = 60.0
TARGET_ADDED_P99_US = 300.0
TARGET_LINES_PER_S = 300_000
TARGET_PEAK_RSS_MB = 150.0
TARGET_STARTUP_ADDED_MS = 40.0
TARGET_STARTUP_OVER_RELAY_MS = 10.0  # what the tee adds over the bare relay
TARGET_TELEMETRY_RATIO = 1.2  # the round trip with --otlp-endpoint over without
STARTUP_RUNS = 15
BASELINE_RUNS = 3  # the direct and relay throughput baselines are run this often; the best counts

# -- children -----------------------------------------------------------------------------------

ECHO_CODE = """\
import os
read, write = os.read, os.write
while True:
    data = read(0, 65536)
    if not data:
        break
    while data:
        data = data[write(1, data):]
"""

# Reads of 64 KiB, the default pipe capacity (a pipe hands over no more per read anyway). With
# 256 KiB reads glibc serves each read's buffer from mmap (it is above the 128 KiB mmap
# threshold in a process that has imported this little), costing an mmap, mremap and munmap per
# read: about +25 us per round trip that belongs to the allocator, not to relaying.
RELAY_CODE = """\
import os, subprocess, sys, threading
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)

def pump(src, dst, on_eof=None):
    read, write = os.read, os.write
    while True:
        data = read(src, 1 << 16)
        if not data:
            break
        while data:
            data = data[write(dst, data):]
    if on_eof is not None:
        on_eof()

out = threading.Thread(target=pump, args=(child.stdout.fileno(), 1))
out.start()
pump(0, child.stdin.fileno(), child.stdin.close)
out.join()
sys.exit(child.wait())
"""

# argv: N_FRAMES STATS_PATH. Frames are JSON-RPC-like notifications of exactly 199 bytes plus a
# newline; one 1 MB block of 5,000 distinct frames is built once and written again and again.
GENERATOR_CODE = """\
import os, resource, sys
n, stats_path = int(sys.argv[1]), sys.argv[2]
size = %(frame_size)d
head = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","n":%%07d,"data":"'
tail = b'"}}'
pad = b"x" * (size - 1 - len(head %% 0) - len(tail))
per_block = 5000
block = b"".join(head %% i + pad + tail + b"\\n" for i in range(per_block))
assert len(block) == per_block * size
full, rest = divmod(n, per_block)
write = os.write

def put(data):
    view = memoryview(data)
    while view:
        view = view[write(1, view):]

for _ in range(full):
    put(block)
put(block[: rest * size])
os.close(1)
ru = resource.getrusage(resource.RUSAGE_SELF)
with open(stats_path, "w") as fh:
    fh.write("%%d %%.6f" %% (ru.ru_maxrss, ru.ru_utime + ru.ru_stime))
""" % {"frame_size": FRAME_SIZE}


def py(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]


def tee_cmd(db: str, child: list[str]) -> list[str]:
    return [sys.executable, "-m", "mcptap", "record", "--db", db, "--", *child]


ANSWER_ONE_CODE = """\
import sys
sys.stdin.readline()
sys.stdout.write('{"jsonrpc":"2.0","id":1,"result":{}}\\n')
sys.stdout.flush()
"""


def bench_startup(tmp: str, other: str | None = None, runs: int = STARTUP_RUNS) -> dict:
    """Median ms from spawn to the first byte of the answer, per path, spawns interleaved;
    `other`: another `mcptap` script (say, main's checkout's) run as one more path, "other"."""
    server = py(ANSWER_ONE_CODE)
    script = os.path.join(os.path.dirname(sys.executable), "mcptap")
    tee = [script] if os.access(script, os.X_OK) else [sys.executable, "-m", "mcptap"]
    paths = {"direct": server, "relay": [sys.executable, "-c", RELAY_CODE, *server],
             "tee": [*tee, "record", "--db", os.path.join(tmp, "startup.db"), "--", *server]}
    if other is not None:
        paths["other"] = [other, "record", "--db", os.path.join(tmp, "startup-other.db"), "--", *server]
    times: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(runs):
        for name, argv in paths.items():
            t0 = time.perf_counter()
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
            proc.stdin.flush()
            first = proc.stdout.read(1)
            times[name].append((time.perf_counter() - t0) * 1e3)
            proc.stdin.close()
            proc.stdout.read()
            proc.wait()
            assert first == b"{", f"{name}: no answer"
    return {"median": {n: sorted(t)[len(t) // 2] for n, t in times.items()},
            "min": {n: min(t) for n, t in times.items()}, "tee": " ".join(tee)}


# -- helpers ------------------------------------------------------------------------------------

def percentile(sorted_values: list[int], p: float) -> float:
    """Nearest-rank percentile of already sorted values."""
    if not sorted_values:
        return float("nan")
    rank = max(1, -(-len(sorted_values) * p // 100))  # ceil(n * p / 100)
    return sorted_values[int(rank) - 1]


def wait_rusage(proc: subprocess.Popen):
    """Reap exactly this child with wait4: (exit status, its rusage)."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage


def db_summary(db: str) -> dict:
    conn = sqlite3.connect(db)
    try:
        count, total, s2c, max_seq = conn.execute(
            "SELECT count(*), coalesce(sum(size), 0), coalesce(sum(direction = 's2c'), 0), max(seq) FROM frames"
        ).fetchone()
        sessions = conn.execute("SELECT count(*), sum(ended_at IS NOT NULL) FROM sessions").fetchone()
    finally:
        conn.close()
    return {"count": count, "bytes": total, "s2c": s2c, "max_seq": max_seq,
            "sessions": sessions[0], "ended": sessions[1]}


def spool_files(folder: str) -> list[str]:
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".spool.jsonl"))


def count_lines(path: str) -> int:
    with open(path, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def stderr_text(path: str) -> str:
    with open(path, "r", encoding="utf-8", errors="replace") as fh:
        return fh.read().strip()


# -- 1. latency ---------------------------------------------------------------------------------

def latency_line() -> bytes:
    head = b'{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"'
    tail = b'"}}}'
    return head + b"y" * (LATENCY_LINE_SIZE - 1 - len(head) - len(tail)) + tail + b"\n"


def round_trips(proc: subprocess.Popen, line: bytes, n: int, out: list[int], echo: bool = True) -> None:
    """`n` round trips of `line` through `proc`, each one's nanoseconds appended to `out`; `echo`:
    the answer is the line itself (checked), else an answer of the line's length (the telemetry's
    server answers a tools/call)."""
    wfd, rfd = proc.stdin.fileno(), proc.stdout.fileno()
    read, write, clock = os.read, os.write, time.perf_counter_ns
    size = len(line)
    for _ in range(n):
        t0 = clock()
        write(wfd, line)
        got = read(rfd, 65536)
        while len(got) < size:
            more = read(rfd, 65536)
            if not more:
                raise RuntimeError(f"EOF from {proc.args[:3]}... during a round trip")
            got += more
        out.append(clock() - t0)
        if echo and got != line:
            raise RuntimeError(f"echo mismatch through {proc.args[:3]}...: {got[:60]!r}")


def bench_latency(tmp: str, n: int) -> dict:
    line = latency_line()
    db = os.path.join(tmp, "latency.db")
    err = os.path.join(tmp, "latency-tee.stderr")
    paths = {
        "direct": py(ECHO_CODE),
        "relay": [sys.executable, "-c", RELAY_CODE, *py(ECHO_CODE)],
        "tee": tee_cmd(db, py(ECHO_CODE)),
    }
    procs: dict[str, subprocess.Popen] = {}
    samples: dict[str, list[int]] = {name: [] for name in paths}
    with open(err, "wb") as err_fh:
        try:
            for name, argv in paths.items():
                procs[name] = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                               stderr=err_fh if name == "tee" else None, bufsize=0)
            for name, proc in procs.items():  # warm-up; the first reply also waits out start-up
                round_trips(proc, line, WARMUP_ROUND_TRIPS, [])
            done = 0
            while done < n:
                block = min(LATENCY_BLOCK, n - done)
                for name, proc in procs.items():
                    round_trips(proc, line, block, samples[name])
                done += block
        finally:
            statuses, rss_mb = {}, {}
            for name, proc in procs.items():
                proc.stdin.close()  # EOF: echo ends, relay and tee follow
            for name, proc in procs.items():
                proc.stdout.read()
                proc.stdout.close()
                statuses[name], usage = wait_rusage(proc)
                rss_mb[name] = usage.ru_maxrss / 1024
    result = {"n": n, "statuses": statuses, "rss_mb": rss_mb, "stderr": stderr_text(err)}
    for name, values in samples.items():
        values.sort()
        result[name] = {"p50": percentile(values, 50) / 1e3, "p99": percentile(values, 99) / 1e3,
                        "p999": percentile(values, 99.9) / 1e3, "max": values[-1] / 1e3}
    result["db"] = db_summary(db)
    result["expected_frames"] = 2 * (WARMUP_ROUND_TRIPS + n)
    result["spools"] = spool_files(tmp)
    return result


# -- 3. live telemetry ----------------------------------------------------------------------------

# Answers each request line with a result line of the same length (the driver reads as many bytes
# as it wrote): a tools/call and its answer, two spans.
ANSWER_CODE = """\
import os, sys
size = int(sys.argv[1])
head, tail = b'{"jsonrpc":"2.0","id":42,"result":{"content":[],"pad":"', b'"}}'
answer = head + b"z" * (size - 1 - len(head) - len(tail)) + tail + b"\\n"
read, write = os.read, os.write
while True:
    data = read(0, 65536)
    if not data:
        break
    for _ in range(data.count(b"\\n")):
        out = answer
        while out:
            out = out[write(1, out):]
"""

# An OTLP/HTTP receiver: 200 and an empty Export*ServiceResponse (zero bytes of protobuf) to every
# POST; prints its port.
RECEIVER_CODE = """\
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
server = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def bench_telemetry(tmp: str, n: int) -> dict:
    """Round trips through three tees (no telemetry, endpoint up, endpoint down), interleaved."""
    import socket

    line = latency_line()
    receiver = subprocess.Popen(py(RECEIVER_CODE), stdout=subprocess.PIPE)
    port = int(receiver.stdout.readline())
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    child = py(ANSWER_CODE, str(len(line)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    paths = {"tee": [], "up": ["--otlp-endpoint", f"http://127.0.0.1:{port}"],
             "down": ["--otlp-endpoint", f"http://127.0.0.1:{closed}"]}
    dbs = {name: os.path.join(tmp, f"telemetry-{name}.db") for name in paths}
    procs: dict[str, subprocess.Popen] = {}
    samples: dict[str, list[int]] = {name: [] for name in paths}
    err = os.path.join(tmp, "telemetry.stderr")
    try:
        with open(err, "wb") as err_fh:
            for name, extra in paths.items():
                argv = [sys.executable, "-m", "mcptap", "record", "--db", dbs[name], *extra, "--", *child]
                procs[name] = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err_fh,
                                               bufsize=0, env=env)
            for proc in procs.values():
                round_trips(proc, line, WARMUP_ROUND_TRIPS, [], echo=False)
            done = 0
            while done < n:
                block = min(LATENCY_BLOCK, n - done)
                for name, proc in procs.items():
                    round_trips(proc, line, block, samples[name], echo=False)
                done += block
            for proc in procs.values():
                proc.stdin.close()
            for proc in procs.values():
                proc.stdout.read()
                proc.stdout.close()
                proc.wait()
    finally:
        receiver.kill()
        receiver.wait()
        receiver.stdout.close()
    result = {"stderr": stderr_text(err)}
    for name, values in samples.items():
        values.sort()
        conn = sqlite3.connect(dbs[name])
        try:
            telemetry = conn.execute("SELECT telemetry FROM sessions").fetchone()[0]
        finally:
            conn.close()
        result[name] = {"p50": percentile(values, 50) / 1e3, "p99": percentile(values, 99) / 1e3,
                        "telemetry": telemetry}
    return result


# -- 2. throughput ------------------------------------------------------------------------------

def drain(proc: subprocess.Popen, expected: int, t_spawn: float) -> dict:
    """Read the process's stdout to EOF, noting when the first byte and the last expected byte
    arrived."""
    fd = proc.stdout.fileno()
    read, clock = os.read, time.perf_counter
    got = newlines = 0
    t_first = t_all = None
    while True:
        chunk = read(fd, 1 << 20)
        if not chunk:
            break
        if t_first is None:
            t_first = clock()
        got += len(chunk)
        newlines += chunk.count(b"\n")
        if t_all is None and got >= expected:
            t_all = clock()
    t_eof = clock()
    return {"bytes": got, "newlines": newlines, "t_spawn": t_spawn, "t_first": t_first,
            "t_all": t_all if t_all is not None else t_eof, "t_eof": t_eof}


class PeakSampler(threading.Thread):
    """Peak RSS (VmHWM, which only grows) of a process and of each process under it, read from
    /proc every SAMPLE_S until stopped. The tee's recorder process shows up as a child whose
    command line names mcptap.addons.stdio.recorder; the server (the generator) is left out, it reports
    its own figures."""

    SAMPLE_S = 0.01

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.root = pid
        self.peaks_kb: dict[str, int] = {}
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.SAMPLE_S):
            self.sample()

    def stop(self) -> None:
        self._stop_event.set()
        self.join()

    def sample(self) -> None:
        for pid, role in self._tree():
            try:
                with open(f"/proc/{pid}/status", encoding="utf-8") as fh:
                    hwm = next((int(line.split()[1]) for line in fh if line.startswith("VmHWM:")), 0)
            except (OSError, ValueError):
                continue
            self.peaks_kb[role] = max(self.peaks_kb.get(role, 0), hwm)

    def _tree(self) -> list[tuple[int, str]]:
        found = [(self.root, "tee")]
        try:
            tasks = os.listdir(f"/proc/{self.root}/task")
        except OSError:
            return found
        for tid in tasks:
            try:
                with open(f"/proc/{self.root}/task/{tid}/children", encoding="utf-8") as fh:
                    children = [int(c) for c in fh.read().split()]
            except OSError:
                continue
            for child in children:
                try:
                    with open(f"/proc/{child}/cmdline", "rb") as fh:
                        cmdline = fh.read()
                except OSError:
                    continue
                if b"mcptap.addons.stdio.recorder" in cmdline:
                    found.append((child, "recorder"))
        return found


def read_stats(path: str) -> tuple[int, float]:
    with open(path) as fh:
        maxrss, cpu = fh.read().split()
    return int(maxrss), float(cpu)


def bench_throughput(tmp: str, name: str, n: int) -> dict:
    stats = os.path.join(tmp, f"{name}.genstats")
    gen = py(GENERATOR_CODE, str(n), stats)
    db = os.path.join(tmp, f"throughput-{name}.db")
    err = os.path.join(tmp, f"throughput-{name}.stderr")
    argv = {"direct": gen, "relay": [sys.executable, "-c", RELAY_CODE, *gen], "tee": tee_cmd(db, gen)}[name]
    expected = n * FRAME_SIZE
    with open(err, "wb") as err_fh:
        t_spawn = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err_fh, bufsize=0)
        sampler = PeakSampler(proc.pid)
        sampler.start()
        try:
            r = drain(proc, expected, t_spawn)
        finally:
            proc.stdout.close()
            status, usage = wait_rusage(proc)
            sampler.stop()
    r["t_exit"] = time.perf_counter()
    r.update(name=name, n=n, expected=expected, status=status, stderr=stderr_text(err))
    gen_rss_kb, gen_cpu = read_stats(stats)
    r["gen_rss_mb"] = gen_rss_kb / 1024
    r["gen_cpu_s"] = gen_cpu
    r["wait4_rss_mb"] = usage.ru_maxrss / 1024  # max(process, its reaped children): see docstring
    r["tee_rss_mb"] = sampler.peaks_kb.get("tee", 0) / 1024
    r["recorder_rss_mb"] = sampler.peaks_kb.get("recorder", 0) / 1024
    r["total_rss_mb"] = r["tee_rss_mb"] + r["recorder_rss_mb"]
    r["cpu_s"] = usage.ru_utime + usage.ru_stime - gen_cpu
    t0 = r["t_first"] if r["t_first"] is not None else t_spawn
    r["startup_s"] = t0 - t_spawn
    r["forward_s"] = r["t_all"] - t0
    r["exit_s"] = r["t_exit"] - t0
    r["forward_rate"] = n / r["forward_s"] if r["forward_s"] > 0 else float("inf")
    r["exit_rate"] = n / r["exit_s"] if r["exit_s"] > 0 else float("inf")
    if name == "tee":
        r["db"] = db_summary(db)
        r["db_mb"] = sum(os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p)) / 2**20
        r["spools"] = [(p, count_lines(p)) for p in spool_files(tmp)]
    return r


# -- report -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 round trips and 100,000 frames")
    parser.add_argument("--startup", action="store_true", help="only [0], the start-up")
    parser.add_argument("--telemetry", action="store_true", help="only [3], the live telemetry")
    parser.add_argument("--startup-runs", type=int, default=STARTUP_RUNS, help="spawns per path in [0]")
    parser.add_argument("--other-tee", metavar="SCRIPT",
                        help="another `mcptap` script (another checkout's) measured in [0] beside this one")
    args = parser.parse_args(argv)
    round_trip_n = 2_000 if args.quick else 20_000
    frames_n = 100_000 if args.quick else 1_000_000

    print(f"mcptap tee benchmark{' (quick)' if args.quick else ''}: Python {platform.python_version()} "
          f"on {platform.system()} {platform.release()}, {os.cpu_count()} CPUs, "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    tmp = tempfile.mkdtemp(prefix="mcptap-bench-")
    rows: list[tuple[str, str, str, str]] = []
    try:
        if args.telemetry:
            report_telemetry(tmp, round_trip_n, rows)
            print_summary(rows)
            return 0
        # 0. start-up
        print(f"\n[0] start-up: spawn to the first byte of the answer to one request, median of {args.startup_runs} "
              f"interleaved spawns per path")
        up = bench_startup(tmp, args.other_tee, args.startup_runs)
        for name, label in (("direct", "(a) the server"), ("relay", "(b) bare relay"),
                            ("tee", f"(c) {os.path.basename(up['tee'].split()[0])} record")):
            print(f"    {label:<20} median {up['median'][name]:6.1f} ms   min {up['min'][name]:6.1f} ms")
        if "other" in up["median"]:
            print(f"    (d) {args.other_tee} record: median {up['median']['other']:6.1f} ms   "
                  f"min {up['min']['other']:6.1f} ms")
        added = up["median"]["tee"] - up["median"]["direct"]
        relay_added = up["median"]["relay"] - up["median"]["direct"]
        over_relay = up["median"]["tee"] - up["median"]["relay"]
        print(f"    added by the bare relay: {relay_added:+.1f} ms; by mcptap record: {added:+.1f} ms ({up['tee']}); "
              f"mcptap record over the relay: {over_relay:+.1f} ms")
        rows.append(("start-up added (median)", f"{added:+.1f} ms", f"<= {TARGET_STARTUP_ADDED_MS:.0f} ms",
                     verdict(added <= TARGET_STARTUP_ADDED_MS)))
        rows.append(("start-up added over the bare relay", f"{over_relay:+.1f} ms",
                     f"<= {TARGET_STARTUP_OVER_RELAY_MS:.0f} ms", verdict(over_relay <= TARGET_STARTUP_OVER_RELAY_MS)))
        if "other" in up["median"]:
            rows.append(("start-up, the other tee over the relay", f"{up['median']['other'] - up['median']['relay']:+.1f} ms",
                         "(info)", ""))
        if args.startup:
            print_summary(rows)
            return 0

        # 1. latency
        print(f"\n[1] round-trip latency, {LATENCY_LINE_SIZE}-byte line, {round_trip_n:,} round trips per path "
              f"after {WARMUP_ROUND_TRIPS:,} warm-up, interleaved in blocks of {LATENCY_BLOCK}")
        lat = bench_latency(tmp, round_trip_n)
        for name, label in (("direct", "(a) direct pipes"), ("relay", "(b) bare relay"), ("tee", "(c) mcptap record")):
            s = lat[name]
            print(f"    {label:<20} p50 {s['p50']:8.1f} us   p99 {s['p99']:8.1f} us   "
                  f"p99.9 {s['p999']:8.1f} us   max {s['max']:9.1f} us")
        add50 = lat["tee"]["p50"] - lat["direct"]["p50"]
        add99 = lat["tee"]["p99"] - lat["direct"]["p99"]
        relay50 = lat["relay"]["p50"] - lat["direct"]["p50"]
        relay99 = lat["relay"]["p99"] - lat["direct"]["p99"]
        print(f"    added by the bare relay: p50 {relay50:+.1f} us, p99 {relay99:+.1f} us")
        print(f"    added by mcptap record:  p50 {add50:+.1f} us, p99 {add99:+.1f} us")
        d = lat["db"]
        print(f"    tee session: {d['count']:,} frames stored of {lat['expected_frames']:,} sent; "
              f"exit statuses {lat['statuses']}; tee peak RSS {lat['rss_mb']['tee']:.1f} MB "
              f"(its floor: the interpreter and its imports)")
        if lat["spools"]:
            print(f"    spool files: {lat['spools']}")
        if lat["stderr"]:
            print(f"    tee stderr: {lat['stderr']}")
        rows.append(("latency added p50", f"{add50:+.1f} us", f"<= {TARGET_ADDED_P50_US:.0f} us",
                     verdict(add50 <= TARGET_ADDED_P50_US)))
        rows.append(("latency added p99", f"{add99:+.1f} us", f"<= {TARGET_ADDED_P99_US:.0f} us",
                     verdict(add99 <= TARGET_ADDED_P99_US)))
        rows.append(("latency frames stored", f"{d['count']:,}/{lat['expected_frames']:,}", "all",
                     verdict(d["count"] == lat["expected_frames"])))

        # 2. throughput
        print(f"\n[2] throughput, {frames_n:,} frames of {FRAME_SIZE} bytes "
              f"({frames_n * FRAME_SIZE / 1e6:.0f} MB) from a generator child; times from the first byte read")
        results = {}
        for name in ("direct", "relay", "tee"):
            runs = BASELINE_RUNS if name != "tee" else 1
            r = results[name] = max((bench_throughput(tmp, name, frames_n) for _ in range(runs)),
                                    key=lambda x: x["forward_rate"])
            complete = r["bytes"] == r["expected"] and r["newlines"] == frames_n
            short = "" if complete else f", READ {r['bytes']:,} BYTES OF {r['expected']:,}"
            print(f"    {name:<7} forwarded {r['forward_rate']:>11,.0f} lines/s ({r['forward_s']:.3f} s"
                  f", {r['expected'] / r['forward_s'] / 1e6:.0f} MB/s), exited after {r['exit_s']:.3f} s, "
                  f"start-up {r['startup_s'] * 1e3:.0f} ms, status {r['status']}{short}")
        t = results["tee"]
        d = t["db"]
        where = "committed" if not t["spools"] else "committed or spooled"
        print(f"    tee: every frame {where} after {t['exit_s']:.3f} s = {t['exit_rate']:,.0f} frames/s; "
              f"rows in frames: {d['count']:,} (s2c {d['s2c']:,}, {d['bytes']:,} bytes, max seq {d['max_seq']}); "
              f"database {t['db_mb']:.0f} MB")
        driver_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"    tee: peak RSS {t['total_rss_mb']:.1f} MB = tee process {t['tee_rss_mb']:.1f} MB + recorder process "
              f"{t['recorder_rss_mb']:.1f} MB (VmHWM sampled every {PeakSampler.SAMPLE_S * 1e3:.0f} ms; wait4 says "
              f"{t['wait4_rss_mb']:.1f} MB for the largest of them and the generator, whose own peak is "
              f"{t['gen_rss_mb']:.1f} MB)")
        print(f"    tee: CPU {t['cpu_s']:.2f} s ({t['cpu_s'] / frames_n * 1e6:.2f} us/frame, tee and recorder processes); "
              f"driver peak RSS {driver_mb:.1f} MB")
        for path, lines in t["spools"]:
            print(f"    tee spooled to {os.path.basename(path)}: {lines:,} lines")
        if t["stderr"]:
            print(f"    tee stderr: {t['stderr']}")
        tee_complete = t["bytes"] == t["expected"] and t["newlines"] == frames_n and t["status"] == 0
        all_stored = d["count"] == frames_n and d["bytes"] == frames_n * (FRAME_SIZE - 1)
        base = results["direct"]["forward_rate"]
        rows.append(("direct lines/s", f"{base:,.0f}", "(baseline)", ""))
        rows.append(("relay lines/s", f"{results['relay']['forward_rate']:,.0f}", "(baseline)", ""))
        # the target is a conjunction: the rate counts only while every frame reaches the database
        rows.append(("tee forwarded lines/s", f"{t['forward_rate']:,.0f}", f">= {TARGET_LINES_PER_S:,} + all in db",
                     verdict(t["forward_rate"] >= TARGET_LINES_PER_S and tee_complete and all_stored)))
        rows.append(("tee frames/s to exit" + (" (db+spool)" if t["spools"] else ""), f"{t['exit_rate']:,.0f}",
                     "(info)", ""))
        rows.append(("tee frames in database", f"{d['count']:,}/{frames_n:,}", "all", verdict(all_stored)))
        rows.append(("tee peak RSS (both processes)", f"{t['total_rss_mb']:.1f} MB", f"< {TARGET_PEAK_RSS_MB:.0f} MB",
                     verdict(0 < t["total_rss_mb"] < TARGET_PEAK_RSS_MB)))
        report_telemetry(tmp, round_trip_n, rows)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print_summary(rows)
    return 0


def report_telemetry(tmp: str, n: int, rows: list) -> None:
    print(f"\n[3] live telemetry: round trips of a {LATENCY_LINE_SIZE}-byte tools/call and its answer, {n:,} per "
          f"tee after {WARMUP_ROUND_TRIPS:,} warm-up, interleaved in blocks of {LATENCY_BLOCK}")
    tel = bench_telemetry(tmp, n)
    base = tel["tee"]
    for name, label in (("tee", "(a) no telemetry"), ("up", "(b) endpoint up"), ("down", "(c) endpoint down")):
        s = tel[name]
        print(f"    {label:<20} p50 {s['p50']:8.1f} us   p99 {s['p99']:8.1f} us   "
              f"x{s['p50'] / base['p50']:.2f} / x{s['p99'] / base['p99']:.2f}   sessions.telemetry {s['telemetry']}")
    if tel["stderr"]:
        print(f"    tees' stderr: {tel['stderr'][:300]}")
    for name, label in (("up", "endpoint up"), ("down", "endpoint down")):
        for p in ("p50", "p99"):
            ratio = tel[name][p] / base[p]
            rows.append((f"round trip {p}, --otlp-endpoint {label}", f"x{ratio:.2f}",
                         f"<= x{TARGET_TELEMETRY_RATIO}", verdict(ratio <= TARGET_TELEMETRY_RATIO)))


if __name__ == "__main__":
    run(main)
