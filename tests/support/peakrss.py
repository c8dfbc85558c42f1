"""Peak memory of a process, for the memory tests and the benches alike: `run_measured` runs a
command under a tiny launcher process and gives its result with the command's peak RSS (wait4's
ru_maxrss of the launcher's children: a child spawned straight from a big test or bench process
would carry that process's own high-water mark, which Linux keeps across execve), and `peak_kb`
reads a live process's VmHWM. Linux only (/proc, ru_maxrss in KiB)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

LAUNCHER = r'''
import resource, subprocess, sys
status = subprocess.run(sys.argv[2:]).returncode
with open(sys.argv[1], "w", encoding="utf-8") as fh:
    fh.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(status)
'''


def run_measured(argv: list[str], **run_options) -> tuple[subprocess.CompletedProcess, int]:
    """`argv` run to its end (subprocess.run's options: capture_output, env, timeout, ...) and its
    peak RSS in KiB."""
    fd, peak_path = tempfile.mkstemp(prefix="mcptap-peak-")
    os.close(fd)
    try:
        result = subprocess.run([sys.executable, "-I", "-S", "-c", LAUNCHER, peak_path, *argv], **run_options)
        with open(peak_path, encoding="utf-8") as fh:
            text = fh.read().strip()
        return result, int(text) if text else 0
    finally:
        os.unlink(peak_path)


def peak_kb(pid: int) -> int:
    """The live process's peak RSS so far (VmHWM), KiB."""
    with open(f"/proc/{pid}/status", encoding="utf-8") as fh:
        return int(re.search(r"VmHWM:\s+(\d+) kB", fh.read()).group(1))
