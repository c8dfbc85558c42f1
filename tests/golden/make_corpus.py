"""Writes the golden corpus (tests/golden/corpus/), frame-log files that
tests/analysis/test_golden.py analyzes, comparing the JSON report with tests/golden/expected/. The
corpus is data: it is made once and committed, and changes only when this script is run again on
purpose.

    python tests/golden/make_corpus.py            # rules.jsonl from the CASES of tests/analysis/test_rules.py
                                                  # and test_logical_operations.py
    python tests/golden/make_corpus.py --demo     # and demo.jsonl, a live `mcptap demo` recording

rules.jsonl: for every case of tests/analysis/test_rules.py (then of test_logical_operations.py), a session named CODE that fires it
and one named CODE~near that must not, 1 ms between frames; a case over HTTP as a version-2 log:
its exchanges as exchange records (ids prefixed with the session's name) and each frame's exchange. demo.jsonl: the two demo sessions (stdio and HTTP frames), with
the recording machine's command line, host and pid replaced."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # the repository: tests is a package

START = 1764460800.0  # 2025-11-30, the time of the first session; each later one starts an hour on


def line(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def rules_corpus() -> str:
    from tests.analysis.test_logical_operations import CASES as OPERATION_CASES
    from tests.analysis.test_rules import CASES

    out, n = [], 0
    cases = [(code, CASES[code]) for code in sorted(CASES)]
    cases += [(code, tuple([(d, raw.decode()) for _seq, _ts, d, raw in case[0]] for case in OPERATION_CASES[code]))
              for code in sorted(OPERATION_CASES)]  # after the others: their sessions keep their times
    for code, pair in cases:
        for name, frames in zip((code, f"{code}~near"), pair):
            t0 = START + 3600 * n
            n += 1
            http = hasattr(frames, "exchanges")  # over HTTP (tests.support.sessions.Http)
            session = {"record": "session", "session": name, "transport": "http" if http else "stdio",
                       "label": name, "started_at": t0, "ended_at": t0 + 0.001 * (len(frames) + 1)}
            out.append(line({**session, "version": 2} if http else {**session, "exit_status": 0}))
            for exchange in frames.exchanges if http else ():
                out.append(line(exchange_record(name, exchange, t0)))
            for seq, frame in enumerate(frames, 1):
                record = {"session": name, "seq": seq, "ts": round(t0 + 0.001 * seq, 6), "direction": frame[0],
                          "raw": frame[1]}
                if http:
                    record["meta"] = {"exchange": f"{name}/{frame[2]}"}
                elif len(frame) == 3:
                    record["meta"] = {"truncated": frame[2]}
                out.append(line(record))
    return "".join(out)


EXCHANGE_TIMES = ("started_at", "request_end", "response_at", "ended_at")


def exchange_record(session: str, row: dict, t0: float) -> dict:
    """An exchange of a test case (its times on the clock tests.support.sessions.analyze gives its
    frames, frame k at 1000 + k ms) as a record of the session starting at t0 (frame k at t0 + (k + 1) ms)."""
    record = {"record": "exchange", "session": session, "events": 0}
    for key, value in row.items():
        if value is None:
            continue
        if key in EXCHANGE_TIMES:
            value = round(value - 1000.0 + t0 + 0.001, 7)
        record[key] = f"{session}/{value}" if key == "id" else value
    return record


def demo_corpus() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        db, log = Path(tmp) / "demo.db", Path(tmp) / "demo.jsonl"
        subprocess.run([sys.executable, "-m", "mcptap", "demo", "--db", str(db)], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([sys.executable, "-m", "mcptap", "export", "--db", str(db), "-o", str(log)], check=True)
        records = [json.loads(text) for text in log.read_text(encoding="utf-8").splitlines()]
    for record in records:
        if record.get("record") == "session":
            record.update({"command": json.dumps(["python", "-m", "mcptap.demo.server"]), "host": "golden",
                           "pid": 1})
    return "".join(line(r) for r in records)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--demo", action="store_true", help="also record demo.jsonl live")
    args = parser.parse_args()
    (HERE / "corpus" / "rules.jsonl").write_text(rules_corpus(), encoding="utf-8")
    if args.demo:
        (HERE / "corpus" / "demo.jsonl").write_text(demo_corpus(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
