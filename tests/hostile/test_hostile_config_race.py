"""A host's config edit is never lost to a `wrap` that renames over it: the real `mcptap wrap`
process is paused at the rename of the config, after its last check (its `os.replace` of that file
waits for the test: a file appears, the test writes, another file lets it go); the host writes the
config in place right then, or renames its own version over the path just after. Wrap exits 2 in
one line and the host's new server is in the file. Bounded waits on conditions, no sleeps."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mcptap.hostconfig import hosts, jsonc
from tests.conftest import PROCESS_TIMEOUT_S, wait_for

PLAIN = '{\n  "mcpServers": {\n    "time": {"command": "uvx", "args": ["mcp-server-time"]}\n  },\n  "x": 1\n}\n'
HOSTS = PLAIN.replace('"mcpServers": {\n', '"mcpServers": {\n    "new": {"command": "npx", "args": ["the-hosts"]},\n')

PAUSED = textwrap.dedent("""
    import os, sys, time
    config, ready, go, after = (os.path.realpath(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4])
    replace = os.replace

    def paused(src, dst, *a, **k):
        if os.path.realpath(dst) == config and after == "before":
            open(ready, "w").close()
            deadline = time.monotonic() + 60
            while not os.path.exists(go) and time.monotonic() < deadline:
                time.sleep(0.01)
        replace(src, dst, *a, **k)
        if os.path.realpath(dst) == config and after == "after":
            open(ready, "w").close()
            deadline = time.monotonic() + 60
            while not os.path.exists(go) and time.monotonic() < deadline:
                time.sleep(0.01)

    os.replace = paused
    sys.argv = ["mcptap", "wrap", config, "--db", os.path.join(os.path.dirname(config), "rec.db")]
    from mcptap.__main__ import main
    sys.exit(main())
""")


def names(path: Path) -> set[str]:
    return {s.name for s in hosts.servers(jsonc.parse(path.read_text(encoding="utf-8")))}


def in_place(path: Path) -> None:
    """The host's write: the same file truncated and written (what most editors and hosts do)."""
    with open(path, "r+b") as f:
        f.truncate(0)
        f.write(HOSTS.encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())


def renamed(path: Path) -> None:
    """The host's write: its own file renamed over the path."""
    tmp = path.with_name("host.tmp")
    tmp.write_text(HOSTS, encoding="utf-8")
    os.replace(tmp, path)


@pytest.mark.parametrize(("moment", "write"), [("before", in_place), ("after", renamed), ("after", in_place)],
                         ids=["in-place-before-the-rename", "renamed-after-it", "in-place-after-it"])
def test_a_host_write_as_wrap_renames_over_the_config_is_kept_and_wrap_exits_2(tmp_path, moment, write):
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(PLAIN, encoding="utf-8")
    ready, go = tmp_path / "ready", tmp_path / "go"
    proc = subprocess.Popen([sys.executable, "-c", PAUSED, str(path), str(ready), str(go), moment],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: ready.exists() or proc.poll() is not None, 60, "wrap at the rename of the config")
        assert ready.exists(), proc.communicate()
        write(path)
        go.touch()
        out, err = proc.communicate(timeout=PROCESS_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "new" in names(path), path.read_text(encoding="utf-8")
    if moment == "after" and write is in_place:  # the host wrote wrap's file: its write is all there is
        assert proc.returncode == 0 and path.read_text(encoding="utf-8") == HOSTS
        return
    assert path.read_text(encoding="utf-8") == HOSTS
    assert proc.returncode == 2 and err.decode().count("\n") == 1 and "Traceback" not in err.decode(), err
