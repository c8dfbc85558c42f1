"""Which run a recorded session belongs to, and who started it. A host starts one `mcptap record`
per stdio server; the sessions one host process started form a run, told by that process's
identity (machine, process id, start time), so every tee of one host computes the same run id on
its own, with nothing shared. Shells and `env` between the host and the tee are looked through.
Over HTTP the proxy sees clients, not processes: the sessions of one client address and
User-Agent form a run while each starts within RUN_WINDOW_S of the run's last one (`HttpRuns`)."""

from __future__ import annotations

import binascii
import json
import os
import time

LOOKED_THROUGH = frozenset({"sh", "bash", "dash", "zsh", "fish", "ksh", "env", "mcptap"})
"""Programs between a host and the tee that are not the host (a shell running the command line,
`env` setting variables, mcptap's own console script)."""
RUN_WINDOW_S = 300.0


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks since boot) of a Linux process, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()
    try:
        return int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None


def _exe(pid: int) -> str | None:
    """The name of the process's executable (its comm when the link is unreadable or anonymous)."""
    try:
        target = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return _comm(pid)
    if target.startswith("memfd:") or target.endswith(" (deleted)"):
        return _comm(pid)
    return os.path.basename(target)


def _comm(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def _boot_time() -> float | None:
    try:
        with open("/proc/stat", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def host_process(start: int | None = None) -> dict:
    """The process that started this one, past shells and `env`: {"pid", "exe", "started_at"}
    (started_at in Unix seconds where /proc tells it, else None; "ticks": its start in clock ticks
    since boot, what makes the identity exact)."""
    pid = os.getppid() if start is None else start
    for _ in range(8):
        stat = _stat(pid)
        name = _comm(pid)
        if stat is None or name not in LOOKED_THROUGH or stat[0] <= 1:
            break
        pid = stat[0]
    stat = _stat(pid)
    ticks = stat[1] if stat else None
    boot = _boot_time()
    started = round(boot + ticks / os.sysconf("SC_CLK_TCK"), 2) if boot is not None and ticks is not None else None
    return {"pid": pid, "exe": _exe(pid), "started_at": started, "ticks": ticks}


def _crc(text: str) -> int:
    return binascii.crc32(text.encode("utf-8", "surrogatepass"))


def stdio_run(machine: str, host: dict) -> str:
    """The run id of the sessions a host process starts, the same in every tee that process starts:
    the machine's name (a checksum), the process id and its start in clock ticks, in hex (no hash
    library: the tee starts before the server's first answer)."""
    ticks = host["ticks"] if host["ticks"] is not None else _crc(host["exe"] or "")
    return f"{_crc(machine):08x}{host['pid']:07x}{ticks:010x}"


def stdio_client(host: dict, app: str | None = None) -> str:
    """The `client` cell of a stdio session (JSON): the host process, and under "host_app" the name of
    the application it is when the command line says (`mcptap record --host-app`, which wrap writes)."""
    return json.dumps({"pid": host["pid"], "exe": host["exe"], "started_at": host["started_at"],
                       **({"host_app": app} if app else {})})


class HttpRuns:
    """The runs of the proxy's sessions: one per client address and User-Agent, continued while
    that client's sessions start within RUN_WINDOW_S of the last."""

    def __init__(self, window: float = RUN_WINDOW_S):
        self.window = window
        self._open: dict[tuple[str, str], tuple[str, float]] = {}

    def run_for(self, address: str | None, user_agent: str | None, now: float | None = None) -> str:
        now = time.time() if now is None else now
        key = (address or "", user_agent or "")
        held = self._open.get(key)
        if held is not None and now - held[1] <= self.window:
            run = held[0]
        else:
            run = f"{_crc(key[0] + chr(0) + key[1]):08x}{int(now * 1000):011x}"
        self._open[key] = (run, now)
        return run

    @staticmethod
    def client(address: str | None, user_agent: str | None) -> str:
        return json.dumps({"address": address, "user_agent": user_agent})
