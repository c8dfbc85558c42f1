"""`mcptap view` as a real server for tests: a subprocess on a loopback port, and the URL it printed."""

from __future__ import annotations

import contextlib
import subprocess
import threading
from pathlib import Path

from tests.conftest import mcptap


@contextlib.contextmanager
def viewing(db, *args: str):
    """`mcptap view --db DB --listen 127.0.0.1:0 ARGS` running (in DB's folder): the URL it printed."""
    proc = subprocess.Popen(mcptap("view", "--db", Path(db).name, "--listen", "127.0.0.1:0", *args),
                            cwd=Path(db).parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line: list[bytes] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(60)
    try:
        assert line and line[0].startswith(b"http://127.0.0.1:"), (line, proc.poll())
        yield line[0].decode().strip()
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
