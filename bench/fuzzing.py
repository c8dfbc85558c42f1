"""The command line the atheris fuzz targets (bench/fuzz_*.py) share: 30 s unless told, libFuzzer
flags and corpus folders passed through, --keep-going, a crash file replayed; not a test."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path

DEFAULT_SECONDS = 30
REGRESSIONS = Path(__file__).resolve().parent / "fuzz_regressions"
"""One folder per target of the inputs that once made it fail (a fixed bug stays fixed)."""


def dict_entry(token: bytes) -> str:
    """One line of a libFuzzer dictionary: the token quoted, with \\, \" and \\xNN escapes."""
    return '"' + "".join(chr(b) if 32 <= b < 127 and b not in b'\\"' else f"\\x{b:02x}" for b in token) + '"\n'


def place(exc: BaseException, inside: tuple[str, ...]) -> str:
    """The innermost line of mcptap's own code (folders `inside`) the exception passed through."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if any(f"/{folder}/" in f.filename for folder in inside)]
    frame = ours[-1] if ours else frames[-1]
    return f"{Path(frame.filename).name}:{frame.lineno} in {frame.name}"


def keep_going(name: str, check: Callable[[bytes], None], inside: tuple[str, ...]) -> Callable[[bytes], None]:
    """`check`, with each distinct failure (exception and place) printed once and the run going on."""
    seen: set[tuple[str, str, str]] = set()

    def target(data: bytes) -> None:
        try:
            check(data)
        except Exception as exc:  # noqa: BLE001 - every failure is reported once
            message = str(exc).splitlines()[0][:200] if str(exc) else ""
            key = (type(exc).__name__, place(exc, inside), message.split(":")[0] if isinstance(exc, AssertionError) else "")
            if key not in seen:
                seen.add(key)
                print(f"\n{name}: FAILURE {key[0]} at {key[1]}: {message}\n    input {data[:300]!r}", flush=True)

    return target


def run(name: str, check: Callable[[bytes], None], seeds: list[bytes], dictionary: list[bytes],
        inside: tuple[str, ...] = ("mcptap",)) -> None:
    """Fuzz `check` with atheris, the arguments of this process as libFuzzer's: the default time
    when neither -max_total_time nor -runs nor an input file is given, a dictionary, artifacts and a
    corpus folder seeded with `seeds` and the target's regressions in a temporary folder of `name` unless given."""
    import atheris

    args = [a for a in sys.argv if a != "--keep-going"]
    target = keep_going(name, check, inside) if len(args) != len(sys.argv) else check
    flags = [a for a in args[1:] if a.startswith("-")]
    inputs = [a for a in args[1:] if not a.startswith("-")]
    if not any(f.startswith(("-max_total_time=", "-runs=")) for f in flags) and not any(os.path.isfile(i) for i in inputs):
        args.append(f"-max_total_time={DEFAULT_SECONDS}")
    work = tempfile.mkdtemp(prefix=f"{name}-")
    if not any(f.startswith("-dict=") for f in flags):
        with open(os.path.join(work, "tokens.dict"), "w", encoding="utf-8") as fh:
            fh.writelines(dict_entry(token) for token in dictionary)
        args.append(f"-dict={os.path.join(work, 'tokens.dict')}")
    if not any(f.startswith("-artifact_prefix=") for f in flags):
        args.append(f"-artifact_prefix={work}/")
    if not inputs:  # a corpus folder of our own, seeded
        corpus = os.path.join(work, "corpus")
        os.mkdir(corpus)
        for n, seed in enumerate(seeds):
            with open(os.path.join(corpus, f"seed{n}"), "wb") as fh:
                fh.write(seed)
        for found in sorted((REGRESSIONS / name).glob("*")):  # inputs that once failed: run first, every time
            shutil.copyfile(found, os.path.join(corpus, found.name))
        args.append(corpus)
    print(f"{name}: {' '.join(args[1:])}", flush=True)
    atheris.Setup(args, target)
    atheris.Fuzz()
