"""`mcptap demo`: the main job on an embedded default. The bundled client drives the bundled
server through `mcptap record`; then the session list, the transcript with its findings, and the
analysis report (stored in the database as `mcptap analyze` stores it) are printed."""

from __future__ import annotations

import sys

from analyzer import engine, report, store, transcript
from analyzer.demo.client import run_session


def run_demo(db: str, out=None) -> int:
    out = out or sys.stdout
    tee = [sys.executable, "-m", "analyzer", "record", "--db", db, "--name", "demo", "--"]
    server = [sys.executable, "-m", "analyzer.demo.server", "--noisy"]
    out.write(f"Recording the bundled MCP server through the tee:\n  {' '.join(tee + server)}\n\n")
    status, stderr_lines = run_session(tee + server)
    for line in stderr_lines:
        if line.startswith("mcptap"):
            out.write(line + "\n")
    conn = store.open_existing(db)
    sid = store.resolve_session(conn, "demo")
    out.write("Sessions in " + db + ":\n")
    rows = transcript.session_rows(conn)
    for r in rows[-5:]:
        out.write(f"  {r['id']}  {r['label']:<8} {r['transport']:<6} {r['started']}  {r['duration']:>9}  "
                  f"{r['frames']} frames  exit {r['exit']}\n")
    out.write("\nTranscript of the demo session:\n")
    for line in transcript.transcript(conn, sid, width=150):
        out.write(line + "\n")
    out.write("\nAnalysis of the demo session (mcptap analyze):\n")
    report.write(engine.analyze(db, session=sid), "table", out)
    out.write(f"\nThe server exited with {status}. Look again with: mcptap show --db {db} {sid[:13]}, "
              f"or: mcptap analyze --db {db}\n")
    out.flush()
    return 0 if status == 0 else 1
