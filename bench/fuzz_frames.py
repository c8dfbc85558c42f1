"""Fuzz target for the frame parser (analyzer/wire/jsonwire.py) and the session analysis
(analyzer/analysis/session.py) with atheris, libFuzzer for Python. Not a test and not a dependency.

    pip install atheris
    python bench/fuzz_frames.py                          # 30 s
    python bench/fuzz_frames.py -max_total_time=60       # or -runs=N; any libFuzzer flag or corpus folder
    python bench/fuzz_frames.py --keep-going             # report each distinct failure once and go on
    python bench/fuzz_frames.py crash-<sha1>             # replay one input

One input is one session: four header bytes (revision, stdio and ended flags, first time stamp,
step between time stamps), then frames, one per line; a line that starts with `>` is host to
server, `<` server to host, any other takes turns. Each frame alone must parse without raising,
agree with the standard library on what is JSON, write back (`to_json`) to what it parsed to,
and give the same value through the deep-nesting parser; the session must be analysed without
raising, one messages row per frame, every text it hands to SQLite encodable as UTF-8, every
severity known. Without --keep-going the first failure stops the run (libFuzzer writes the input
to crash-<sha1> in the temporary folder it names); with it, each failure is printed once (exception and place) and the run goes on.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

try:
    import atheris
except ImportError:
    print("fuzz_frames: atheris is not installed (pip install atheris): nothing fuzzed")
    sys.exit(0)

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzzing  # noqa: E402  (the command line every fuzz target shares: bench/fuzzing.py)

with atheris.instrument_imports(include=["mcptap"]):
    from mcptap.analysis import revision
    from mcptap.wire import jsonwire
    from mcptap.analysis.classify import KINDS, classify
    from mcptap.analysis.session import SessionAnalysis

REVISIONS = (None, "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", "9999-01-01")
TS_STARTS = (1_764_460_800.0, 0.0, -1.0, 1e12, 1e300, -1.7e308)
TS_STEPS = (0.001, 0.0, -0.25, 3600.0, 1e300, 1.7e308)
SEVERITIES = ("error", "warning", "info")

SEEDS = [
    b'\x04\x00\x00\x00>{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}\n<{"jsonrpc":"2.0","id":1,"result":{'
    b'"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}\n'
    b'>{"jsonrpc":"2.0","method":"notifications/initialized"}\n>{"jsonrpc":"2.0","id":2,"method":"tools/call",'
    b'"params":{"name":"t","arguments":{},"_meta":{"progressToken":"p"}}}\n<{"jsonrpc":"2.0","method":'
    b'"notifications/progress","params":{"progressToken":"p","progress":1}}\n<{"jsonrpc":"2.0","id":2,"result":'
    b'{"content":[]}}\n',
    b'\x00\x01\x00\x00>{"jsonrpc":"2.0","id":"a","method":"ping"}\n<{"jsonrpc":"2.0","id":"a","result":{}}\n'
    b'<server log line\n',
    b'\x02\x00\x01\x01>[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x/y"}]\n'
    b'<[{"jsonrpc":"2.0","id":1,"result":{}}]\n>{"jsonrpc":"2.0","id":1.0,"method":"ping","id":2}\n',
    b'\x05\x00\x00\x00>{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{'
    b'"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}\n<{"jsonrpc":"2.0","id":1,"result":'
    b'{"tools":[],"resultType":"complete"}}\n>{"jsonrpc":"2.0","method":"notifications/cancelled",'
    b'"params":{"requestId":1}}\n',
    b'\x00\x00\x00\x00>{"a":[1.5e3,-0,0.0,1E+2,"\\u00e9\\n"],"b":{"c":null,"d":true,"e":false}}\n',
    b'\x00\x01\x05\x05>{"jsonrpc":"2.0","id":7,"method":"ping"}\n>{"jsonrpc":"2.0","method":"notifications/'
    b'initialized"}\n<{"jsonrpc":"2.0","id":7,"result":{}}\n',  # time stamps at the ends of the float range
]
DICTIONARY = [b'"jsonrpc"', b'"2.0"', b'"id"', b'"method"', b'"params"', b'"result"', b'"error"', b'"code"',
              b'"message"', b'"_meta"', b'"progressToken"', b'"requestId"', b'"initialize"', b'"ping"',
              b'"tools/call"', b'"notifications/cancelled"', b'"notifications/progress"', b'"protocolVersion"',
              b"NaN", b"Infinity", b"-Infinity", b"1e999999", b"-0", b"1.0", b"\\ud800", b"\\udc00", b"\\u0000",
              b"\\u001b", b"\xff", b"\xed\xa0\x80", b"[[[[[[[[", b"]]]]]]]]", b"9" * 30]


def _stdlib_accepts(text: str) -> bool | None:
    """The standard library's verdict on JSON text (None: too deep for it to say)."""
    def constant(name):
        raise ValueError(name)

    try:
        json.loads(text, parse_constant=constant, parse_int=len, parse_float=len)
    except RecursionError:
        return None
    except ValueError:
        return False
    return True


def _same(a, b) -> bool:
    try:
        return a == b
    except RecursionError:
        return True  # too deep to compare here; the parse itself was checked


def check_frame(raw: bytes) -> None:
    parsed = jsonwire.parse(raw)
    assert (parsed.error is None) or parsed.value is None, parsed
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        assert parsed.error is not None, f"bytes that are not UTF-8 were parsed: {raw[:80]!r}"
        return
    verdict = _stdlib_accepts(text)
    if verdict is not None:
        assert (parsed.error is None) == verdict, f"jsonwire says {parsed.error!r}, json says {verdict}: {raw[:200]!r}"
    assert _same(jsonwire.parse(text).value, parsed.value), f"str and bytes parse differently: {raw[:200]!r}"
    if parsed.error is not None:
        return
    if type(parsed.value) is dict:
        assert classify(parsed.value)[1] in KINDS
    written = jsonwire.to_json(parsed.value)
    if "nested too deep to show" not in written:
        again = jsonwire.parse(written)
        assert again.error is None and jsonwire.to_json(again.value) == written, f"to_json does not round-trip: {raw[:200]!r}"
    iterative = getattr(jsonwire, "_parse_iteratively", None)
    if iterative is not None and len(text) < 20_000:
        deep = jsonwire.to_json(iterative(text, dict))  # (the fast path's floats are NumberText there)
        assert deep == written, f"deep parser differs: {raw[:200]!r}"


def _storable(row, what: str) -> None:
    for cell in row:
        if isinstance(cell, str):
            try:
                cell.encode("utf-8")  # what sqlite3 does with a str
            except UnicodeEncodeError:
                raise AssertionError(f"SQLite cannot store this {what} (a lone surrogate): {row!r}"[:300]) from None


def check_session(data: bytes) -> None:
    head, body = data[:4].ljust(4, b"\0"), data[4:]
    rev = REVISIONS[head[0] % len(REVISIONS)]
    stdio, ended = bool(head[1] & 1), bool(head[1] & 2)
    start, step = TS_STARTS[head[2] % len(TS_STARTS)], TS_STEPS[head[3] % len(TS_STEPS)]
    frames = []
    for n, line in enumerate(body.split(b"\n") if body else []):
        direction = "c2s" if n % 2 == 0 else "s2c"
        if line[:1] in (b">", b"<"):
            direction, line = ("c2s" if line[:1] == b">" else "s2c"), line[1:]
        frames.append((n + 1, start + n * step, direction, line))
    for _, _, _, raw in frames[:8]:
        check_frame(raw)
    detected = revision.detect(frames, rev)
    analysis = SessionAnalysis("fuzz", revision=detected.revision, revision_source=detected.source, stdio=stdio,
                               ended=ended)
    for seq, ts, direction, raw in frames:
        analysis.frame(seq, ts, direction, raw)
    analysis.end()
    rows, findings = analysis.take_rows(), analysis.take_findings()
    assert sorted(r[1] for r in rows if r[2] is None) == [f[0] for f in frames], "a frame without its messages row"
    for row in rows:
        _storable(row, "messages row")
    for finding in findings:
        _storable(finding, f"{finding[3]} finding")
        assert finding[4] in SEVERITIES and finding[5], finding
    analysis.summary()


def main() -> None:
    fuzzing.run("fuzz_frames", check_session, SEEDS, DICTIONARY, inside=("mcptap",))


if __name__ == "__main__":
    main()
