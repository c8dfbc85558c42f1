"""Differential fuzz target for the native envelope scanner (analyzer/_wirescan.c) with atheris,
run by .ci/sanitize under AddressSanitizer and UndefinedBehaviorSanitizer. Not a test and not a
dependency; delete it with .ci/sanitize the day the C extension goes.

    pip install atheris
    python bench/fuzz_native.py                          # 30 s, the extension this checkout built
    python bench/fuzz_native.py -max_total_time=60       # or -runs=N; any libFuzzer flag or corpus folder
    python bench/fuzz_native.py crash-<sha1>             # replay one input
    MCPTAP_NATIVE_DIR=DIR python bench/fuzz_native.py    # the extension in DIR/analyzer (.ci/sanitize)

Each input feeds one entry point, chosen by its first byte, and asks of it what the pure-Python
definition it mirrors gives for the same input:
- `_wirescan.scan(frame)`: None, or the envelope the exact parser (analyzer/wire/jsonwire.py) and
  `classify` read from the frame;
- a session of such frames: the same rows, findings and summary on the fast path (the scanner
  and `SessionAnalysis._fast`) as on the exact path (tests/support/sessions.py `analyze`).
The first failure stops the run; libFuzzer writes the input to crash-<sha1> in the folder it
names (-artifact_prefix). A sanitizer report ends the process the same way."""

from __future__ import annotations

import os
import sys
from pathlib import Path

try:
    import atheris
except ImportError:
    print("fuzz_native: atheris is not installed (pip install atheris): nothing fuzzed")
    sys.exit(0)

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]  # the package tests, and the benches

import mcptap  # noqa: E402

if os.environ.get("MCPTAP_NATIVE_DIR"):  # the sanitized build, before anything imports the checkout's
    mcptap.__path__.insert(0, str(Path(os.environ["MCPTAP_NATIVE_DIR"]) / "analyzer"))

with atheris.instrument_imports(include=["mcptap"]):
    from mcptap import _wirescan
    from mcptap.analysis import mcp, session
    from mcptap.wire import jsonwire
    from mcptap.analysis.classify import classify
    from mcptap.wire.jsonwire import NumberText

import fuzz_frames  # noqa: E402  (its seeds and dictionary: sessions as its inputs write them)
import fuzzing  # noqa: E402  (the command line every fuzz target shares)
from tests.support.sessions import analyze  # noqa: E402  (exact == fast, or AssertionError)

TARGETS = ("scan", "session")
REVISIONS = (None, "2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28")


def _loaded_from_where_asked() -> None:
    where = os.environ.get("MCPTAP_NATIVE_DIR")
    if where and not _wirescan.__file__.startswith(os.path.abspath(where)):
        sys.exit(f"fuzz_native: {_wirescan.__name__} came from {_wirescan.__file__}, not from {where}")
    if session._wirescan is not _wirescan:
        sys.exit("fuzz_native: the session analysis does not use mcptap._wirescan (built from other sources?)")


# -- _wirescan.scan against the exact parser ------------------------------------------------------

META_MEMBERS = ("progressToken", mcp.META_PROTOCOL_VERSION, mcp.META_CLIENT_CAPABILITIES, mcp.META_LOG_LEVEL)


def _read_of(meta):
    """What the scanner gives of params._meta: the members the session core reads, those present,
    in META_MEMBERS order (None when _meta is not an object)."""
    return {k: meta[k] for k in META_MEMBERS if k in meta} if type(meta) is dict else None


def _same(a, b) -> bool:
    """Equal as the session core reads them: numbers with a fraction by their id_key."""
    if type(a) in (float, NumberText) or type(b) in (float, NumberText):
        return (type(a) in (float, NumberText) and type(b) in (float, NumberText)
                and session.id_key(a) == session.id_key(b))
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def check_scan(raw: bytes) -> None:
    found = _wirescan.scan(raw)
    if found is None:
        return  # left to the exact path: always allowed
    parsed = jsonwire.parse(raw)
    assert parsed.error is None and not parsed.duplicate_keys and type(parsed.value) is dict, f"scanned {raw[:200]!r}"
    value = parsed.value
    key, method, ident, id_text, meta, params, result_type, ident_key, member = found
    assert key == tuple(classify(value)[0])[1:], f"key {key}: {raw[:200]!r}"
    assert method == value.get("method", None), f"method {method!r}: {raw[:200]!r}"
    if "id" in value:
        assert type(ident) is type(value["id"]) and ident == value["id"], f"id {ident!r}: {raw[:200]!r}"
        assert id_text == (str(ident) if type(ident) is int else jsonwire.to_json(ident)), f"id text: {raw[:200]!r}"
        assert ident_key == session.id_key(value["id"]) and type(ident_key[1]) is type(value["id"]), \
            f"id key: {raw[:200]!r}"
    else:
        assert ident is mcp.ABSENT and id_text is None and ident_key is None, f"an id where there is none: {raw[:200]!r}"
    p = value.get("params")
    exact_meta = p.get("_meta") if type(p) is dict else None
    assert _same(meta, _read_of(exact_meta)), f"_meta: {raw[:200]!r}"
    if method in ("notifications/progress", "notifications/cancelled") and type(p) is dict:
        assert _same(params, p), f"params: {raw[:200]!r}"
    else:
        assert params is None, f"params kept: {raw[:200]!r}"
    r = value.get("result")
    expected = r.get("resultType", mcp.ABSENT) if type(r) is dict else mcp.ABSENT
    assert (result_type is mcp.ABSENT and expected is mcp.ABSENT) or _same(result_type, expected), \
        f"resultType: {raw[:200]!r}"
    judged = "params" if "method" in value else "result"
    assert (member == b"") if judged not in value else _same(jsonwire.parse(member).value, value[judged]), \
        f"member: {raw[:200]!r}"


# -- a session's fast path against its exact path ---------------------------------------------------

def check_session(data: bytes) -> None:
    head, body = data[:1].ljust(1, b"\0"), data[1:]
    frames = []
    for n, line in enumerate(body.split(b"\n")[:64] if body else []):
        direction = "c2s" if n % 2 == 0 else "s2c"
        if line[:1] in (b">", b"<"):
            direction, line = ("c2s" if line[:1] == b">" else "s2c"), line[1:]
        frames.append((direction, line))
    for _, raw in frames[:8]:
        check_scan(raw)
    revision = REVISIONS[head[0] % len(REVISIONS)] if head[0] & 0x80 else "detect"
    analyze(frames, revision=revision, stdio=bool(head[0] & 0x40), ended=bool(head[0] & 0x20))


def check(data: bytes) -> None:
    if not data:
        return
    target = TARGETS[data[0] % len(TARGETS)]
    if target == "scan":
        check_scan(data[1:])
    else:
        check_session(data[1:])


FRAMES = [  # long ones too: the fuzzer sees no coverage of the C code (gcc), so seeds must reach its paths
    b'{"jsonrpc":"2.0","id":17,"result":{"content":[{"type":"text","text":"line one\\nline \\"two\\" \\u00e9\\ud83d'
    b'\\ude00 \xc3\xa9\xe2\x80\xa8 tab\\t end"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}],'
    b'"structuredContent":{"n":[0,-1,1.5e-7,12345678901234567890,-0.0,1E+2],"deep":[[[{"a":[{"b":null}]}]]],'
    b'"t":true,"f":false},"isError":false,"_meta":{"x":1}}}',
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok-\\u0041","progress":0.25,'
    b'"total":1e2,"message":"a quarter \\/ done","_meta":{"io.modelcontextprotocol/logLevel":"debug"}}}',
    b'{"jsonrpc":"2.0","id":"req-9","method":"tools/call","params":{"name":"search","arguments":{"q":"x",'
    b'"limit":10},"_meta":{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    b'"io.modelcontextprotocol/clientCapabilities":{"sampling":{},"roots":{"listChanged":true}},'
    b'"io.modelcontextprotocol/logLevel":"info"}}}',
    b'{ "jsonrpc" : "2.0" , "id" : -9007199254740993 , "error" : { "code" : -32603 , "message" : "internal" ,'
    b' "data" : { "trace" : [ "a" , "b" ] , "at" : 1.0e+300 } } }',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"req-1","reason":"user \\"stop\\""}}',
    b'{"jsonrpc":"2.0","id":3,"result":{"resultType":"input_required","inputRequests":[{"method":"elicitation/create",'
    b'"params":{"message":"' + b"long text " * 40 + b'"}}]}}',
]
SEEDS = ([b"\x00" + frame for frame in FRAMES] + [b"\x01\x60" + b"\n".join(FRAMES)]
         + [b"\x00" + line.lstrip(b"<>") for seed in fuzz_frames.SEEDS for line in seed[4:].split(b"\n") if line]
         + [b"\x01" + bytes([0x20 | seed[1] << 6 & 0x40]) + seed[4:] for seed in fuzz_frames.SEEDS])


def main() -> None:
    _loaded_from_where_asked()
    print(f"fuzz_native: {_wirescan.__file__}", flush=True)
    fuzzing.run("fuzz_native", check, SEEDS, fuzz_frames.DICTIONARY)


if __name__ == "__main__":
    main()
