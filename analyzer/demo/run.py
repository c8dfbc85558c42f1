"""`mcptap demo`: the main job on an embedded default. The bundled client drives the bundled
server through `mcptap record` (stdio), then the bundled HTTP server through `mcptap proxy`
(Streamable HTTP); then the session list, each transcript with its findings, and each session's
analysis report (stored in the database as `mcptap analyze` stores it) are printed, and the HTML
report is written beside the database. The bundled servers misbehave on purpose (planted faults,
said so before they show), so that the analysis has something to find. Paths and commands are
printed as the user would type them: relative to the current folder when under it."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading

from mcptap import api, store

from mcptap.report import listing, transcript
from mcptap.demo.client import run_http_session, run_session
from mcptap.errors import MCPTapError

START_TIMEOUT_S = 30


PLANTED = ("The bundled servers make three mistakes on purpose, for the analysis to find: the stdio server "
           "writes a log line on stdout,\nthe HTTP server answers a notification with a body, and then sends a "
           "message without `jsonrpc`.\n")


def shown(path: str) -> str:
    """A path as the user would type it: relative to the current folder when it is under it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def typed(argv: list[str]) -> str:
    """A command line of the demo as a user would type it: `mcptap ...`, `python ...`."""
    if argv[:3] == [sys.executable, "-m", "mcptap"]:
        return " ".join(["mcptap", *argv[3:]])
    if argv[:1] == [sys.executable]:
        return " ".join(["python", *argv[1:]])
    return " ".join(argv)


def run_demo(db: str, out=None) -> int:
    out = out or sys.stdout
    tee = [sys.executable, "-m", "mcptap", "record", "--db", shown(db), "--name", "demo", "--"]
    server = [sys.executable, "-m", "mcptap.demo.server", "--noisy"]
    out.write(PLANTED + "\n")
    out.write(f"Recording the bundled MCP server through the tee:\n  {typed(tee)} {typed(server)}\n\n")
    status, stderr_lines = run_session(tee + server)
    for line in stderr_lines:
        if line.startswith("mcptap"):
            out.write(line + "\n")
    out.write("Recording the bundled HTTP MCP server through the proxy:\n")
    record_http(db, out)
    conn = store.open_existing(db)
    sids = [store.resolve_session(conn, "demo"), store.resolve_session(conn, "demo-http")]
    out.write("\nSessions in " + shown(db) + ":\n")
    for obj in listing.session_objects(conn)[-5:]:
        r = dict(zip(listing.SESSION_COLUMNS, listing.session_cells(obj)))
        out.write(f"  {r['id']}  {r['label']:<9} {r['transport']:<6} {r['started']}  {r['duration']:>9}  "
                  f"{r['frames']} frames  exit {r['exit']}\n")
    for sid, what in zip(sids, ("stdio", "HTTP")):
        out.write(f"\nTranscript of the {what} demo session:\n")
        for line in transcript.transcript(conn, sid, width=150):
            out.write(line + "\n")
        out.write(f"\nAnalysis of the {what} demo session (mcptap analyze):\n")
        with api.analyze(db, sessions=[sid]) as done:
            api.write_analysis(done, out)
    conn.close()
    page = shown(os.path.splitext(db)[0] + "-report.html")
    api.report_html(db, page)
    handle = store.handles(store.session_ids(store.open_existing(db))).get(sids[0], sids[0])
    out.write(f"\nThe stdio server exited with {status}. Look again with: mcptap show --db {shown(db)} {handle}, "
              f"or: mcptap analyze --db {shown(db)}\nThe HTML report (every frame, a display filter, the sequence "
              f"diagrams): {page}\n")
    notebook = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                            "notebooks", "explore.ipynb")
    if os.path.exists(notebook):
        out.write(f"Explore it in a notebook: MCPTAP_NOTEBOOK_DB={shown(os.path.abspath(db))} jupyter lab "
                  f"{shown(notebook)}  (JupyterLab is no extra of mcptap's: pip install jupyterlab)\n")
    out.flush()
    return 0 if status == 0 else 1


def _first_line(stream, pattern: str, what: str) -> re.Match:
    """The first line of `stream` matching `pattern`, within START_TIMEOUT_S."""
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for raw in stream:
            lines.put(raw.decode("utf-8", "replace"))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    while True:
        try:
            line = lines.get(timeout=START_TIMEOUT_S)
        except queue.Empty:
            raise MCPTapError(f"the demo's {what} did not start within {START_TIMEOUT_S}s") from None
        if line is None:
            raise MCPTapError(f"the demo's {what} ended before it started")
        found = re.search(pattern, line)
        if found:
            return found


def record_http(db: str, out) -> None:
    server = subprocess.Popen([sys.executable, "-m", "mcptap.demo.http_server", "0", "--noisy"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    proxy = None
    try:
        port = _first_line(server.stdout, r"listening on (\d+)", "HTTP server").group(1)
        argv = [sys.executable, "-m", "mcptap", "proxy", "--db", db, "--name", "demo-http",
                "--upstream", f"http://127.0.0.1:{port}", "--listen", "127.0.0.1:0"]
        out.write(f"  {typed(argv)}\n")
        proxy = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        address = _first_line(proxy.stderr, r"listening on (http://[^/]+)/", "proxy").group(1)
        run_http_session(address + "/mcp")
    finally:
        if proxy is not None:
            proxy.send_signal(signal.SIGINT)
            try:
                proxy.wait(START_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proxy.kill()
                proxy.wait()
            proxy.stderr.close()
        server.terminate()
        server.wait()
        server.stdout.close()
