"""Test instruments for real traffic from both SDKs: one PLAN (JSON, see tests/tools/ts_client.mjs)
drives a real server from the TypeScript SDK client (v1 or v2) or the Python `mcp` SDK client
(tests/tools/sdk_client_plan.py), through `mcptap record` with a wiretap as the oracle (stdio) or
through `mcptap proxy` with a byte-logging relay as the oracle (Streamable HTTP)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import tee, tool, wait_for
from tests.support.http_helpers import Relay, mcptap_proxy

CLIENT_TIMEOUT_S = 90
SETTLE_TIMEOUT_S = 30  # for a recorder to finish a session whose tee the client killed

# (sdk, mode): v1 is @modelcontextprotocol/sdk 1.32 (handshake only), v2 @modelcontextprotocol/client
# 2.4 (its 'auto' probes with server/discover), python the `mcp` SDK 2.3.0 ('auto' is its default).
TS_CLIENTS = [("v1", "legacy"), ("v2", "legacy"), ("v2", "auto")]
PY_CLIENTS = [("python", "legacy"), ("python", "auto")]


def client_id(client: tuple[str, str]) -> str:
    return f"{client[0]}-{client[1]}"


@dataclass
class Client:
    """How to start one SDK client: the TypeScript one needs node and the SDK's node_modules, the
    Python one the side environment's interpreter."""
    sdk: str
    mode: str
    node: str | None = None
    ts_sdk: Path | None = None
    sdk_python: str | None = None

    def argv(self, plan: dict, *target: str) -> list[str]:
        if self.sdk == "python":
            return [self.sdk_python, tool("sdk_client_plan.py"), self.mode, json.dumps(plan), *target]
        return [self.node, tool("ts_client.mjs"), self.sdk, self.mode, json.dumps(plan), *target]

    def env(self) -> dict:
        return {**os.environ, **({"MCPTAP_TS_SDK": str(self.ts_sdk)} if self.ts_sdk else {})}

    def run(self, plan: dict, *target: str) -> dict:
        done = subprocess.run(self.argv(plan, *target), capture_output=True, timeout=CLIENT_TIMEOUT_S, env=self.env(),
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
        return json.loads(done.stdout.splitlines()[-1])


@dataclass
class Recording:
    db: Path
    out: dict
    taps: list[Path] = field(default_factory=list)  # stdio: one wiretap folder per server process, in start order
    relay: Relay | None = None  # HTTP: the relay between client and proxy


def record_stdio(client: Client, plan: dict, server: list[str], folder: Path, name: str) -> Recording:
    """The client runs `server` through a wiretap and `mcptap record`. Each process it starts (the
    v2 client's 'auto' probe runs on a sibling process of its own) logs into a fresh folder."""
    db, taps = folder / "rec.db", folder / "taps"
    taps.mkdir()
    script = f'd="{taps}/$(date +%s%N)"; mkdir "$d" || exit 1; wiretap="$1"; shift; exec "$0" "$wiretap" "$d" "$@"'
    wrapped = ["sh", "-c", script, sys.executable, tool("wiretap.py"), "--", *tee(db, *server, name=name)]
    out = client.run(plan, "--stdio", *wrapped)
    started = sorted(taps.iterdir())
    # A client that kills its server (the v2 probe's sibling, at close) need not wait for the tee:
    # its recorder still stores every frame, and ends the session, after the client is gone.
    wait_for(lambda: ended_sessions(db) == len(started), SETTLE_TIMEOUT_S, "every recorded session to end")
    return Recording(db, out, started)


def ended_sessions(db: Path) -> int:
    if not db.exists():
        return 0
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT count(*) FROM sessions WHERE ended_at IS NOT NULL").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0
    finally:
        conn.close()


def record_http(client: Client, plan: dict, upstream: str, folder: Path, path: str = "/mcp") -> Recording:
    db = folder / "rec.db"
    with mcptap_proxy(db, upstream) as proxy:
        relay = Relay(int(proxy.url.rsplit(":", 1)[1]))
        try:
            out = client.run(plan, "--url", f"http://127.0.0.1:{relay.port}{path}")
        finally:
            assert proxy.stop() == 0, proxy.errors
            relay.close()
    return Recording(db, out, relay=relay)


def lines_of(path: Path) -> list[bytes]:
    data = path.read_bytes()
    if not data:
        return []
    assert data.endswith(b"\n")
    return data[:-1].split(b"\n")


def session_frames(db: Path) -> list[dict[str, list[bytes]]]:
    """Each session's frames per direction, sessions in start order."""
    conn = sqlite3.connect(db)
    sessions = [row[0] for row in conn.execute("SELECT id FROM sessions ORDER BY started_at")]
    found = []
    for session in sessions:
        per = {"c2s": [], "s2c": []}
        for direction, raw in conn.execute("SELECT direction, CAST(raw AS BLOB) FROM frames WHERE session_id = ? "
                                           "ORDER BY seq", (session,)):
            per[direction].append(raw)
        found.append(per)
    conn.close()
    return found


def tapped_frames(taps: list[Path]) -> list[dict[str, list[bytes]]]:
    return [{d: lines_of(tap / f"{d}.bin") for d in ("c2s", "s2c")} for tap in taps]


def messages(db: Path, direction: str | None = None) -> list[dict]:
    """Every recorded frame parsed, in session order then seq."""
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT CAST(raw AS BLOB) FROM frames JOIN sessions ON sessions.id = frames.session_id "
                        + ("WHERE direction = ? " if direction else "") + "ORDER BY sessions.started_at, seq",
                        (direction,) if direction else ()).fetchall()
    conn.close()
    return [json.loads(raw) for (raw,) in rows]
