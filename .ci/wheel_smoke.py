"""CI's first step: the product as users install it. Builds the wheel, installs it (not editable)
into a fresh virtual environment, and from a folder outside the checkout imports every module the
checkout has and runs every command of the README, so a module, subpackage or file the wheel
leaves out fails CI before the test suite runs (an editable install would hide it).

    python3 .ci/wheel_smoke.py [--keep DIR]

Exit 0 when every step passed; 1, with the failing step and its output, otherwise."""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEP_TIMEOUT_S = 300


def _package_dir() -> dict[str, str]:
    """setup.py's PACKAGE_DIR (package -> folder), read from its source: one place says it."""
    for node in ast.parse((ROOT / "setup.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "PACKAGE_DIR" for t in node.targets):
            return ast.literal_eval(node.value)
    raise SystemExit("wheel smoke: setup.py has no PACKAGE_DIR")


PACKAGES = {folder: package for package, folder in _package_dir().items()}  # folder -> package


class Failed(Exception):
    pass


def run(argv, *, cwd, input: bytes = b"", ok=(0,), env=None, timeout=STEP_TIMEOUT_S) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in argv], cwd=cwd, input=input, capture_output=True, timeout=timeout,
                          env=env)
    if done.returncode not in ok:
        raise Failed(f"{' '.join(map(str, argv))} exited {done.returncode}\n--- stdout\n"
                     f"{done.stdout.decode(errors='replace')[-3000:]}\n--- stderr\n"
                     f"{done.stderr.decode(errors='replace')[-3000:]}")
    return done


def source_modules() -> list[str]:
    """Every module of the product's packages in the checkout, by its dotted name."""
    listed = subprocess.run(["git", "ls-files", *(f"{p}/*.py" for p in PACKAGES)], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.split()
    names = []
    for path in listed:
        parts = Path(path).with_suffix("").parts
        folder = max((f for f in PACKAGES if Path(path).is_relative_to(f)), key=len)
        parts = (PACKAGES[folder], *parts[len(Path(folder).parts):])
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(names)


def wait_line(proc: subprocess.Popen, pattern: str, timeout: float) -> re.Match:
    """The first stderr line of `proc` matching `pattern`, within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    seen = []
    os.set_blocking(proc.stderr.fileno(), False)
    buffer = b""
    while time.monotonic() < deadline:
        if proc.poll() is not None and not buffer:
            break
        chunk = proc.stderr.read() or b""
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            text = line.decode(errors="replace")
            seen.append(text)
            found = re.search(pattern, text)
            if found:
                return found
        if not chunk:
            time.sleep(0.05)
    proc.kill()
    raise Failed(f"no line matching {pattern!r} within {timeout}s; stderr:\n" + "\n".join(seen[-20:]))


def post_to(port: str, request: bytes) -> None:
    """POST `request` as an MCP client would to 127.0.0.1:`port`/mcp, whose upstream is not there."""
    post = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=request.strip(), method="POST",
                                  headers={"Content-Type": "application/json",
                                           "Accept": "application/json, text/event-stream"})
    try:
        urllib.request.urlopen(post, timeout=30).read()
    except (urllib.error.HTTPError, ConnectionError):
        pass  # the upstream is not there: mcptap proxy answers 502, mitmdump closes the connection


def stop(proc: subprocess.Popen, what: str) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        status = proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise Failed(f"{what} did not stop within 30 s of SIGINT") from None
    if status != 0:
        raise Failed(f"{what} exited {status} after SIGINT")


def smoke(work: Path) -> None:
    wheels = work / "wheel"
    venv = work / "venv"
    here = work / "outside"  # the folder users run from: no checkout in sight
    here.mkdir()
    step("build the sdist and, from it, the wheel (python -m build), and twine check both")
    tools = work / "build-tools"
    run([sys.executable, "-m", "venv", tools], cwd=here)
    run([tools / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", "build", "twine"],
        cwd=here, timeout=900)
    run([tools / "bin" / "python", "-m", "build", "--outdir", wheels, ROOT], cwd=here, timeout=900)
    run([tools / "bin" / "twine", "check", "--strict", *sorted(wheels.iterdir())], cwd=here)
    wheel = next(wheels.glob("mcptap-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        top = sorted({name.split("/")[0] for name in archive.namelist()} - {f"{wheel.name.split('-')[0]}-"
                                                                             f"{wheel.name.split('-')[1]}.dist-info"})
    if top != ["mcptap"]:
        raise Failed(f"the wheel's top-level names are {top}, not exactly ['mcptap']")
    plain_install(wheel, work / "plain-venv", here)
    mcp_face(wheel, work / "plain-venv", here)

    step(f"install {wheel.name}[all] into a fresh venv")
    run([sys.executable, "-m", "venv", venv], cwd=here)
    python, mcptap = venv / "bin" / "python", venv / "bin" / "mcptap"
    run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", f"{wheel}[all]"], cwd=here, timeout=900)

    modules = source_modules()
    step(f"import each of the checkout's {len(modules)} modules from the installed wheel")
    probe = ("import importlib, json, sys\nout = {}\nfor name in json.loads(sys.argv[1]):\n"
             "    try:\n        out[name] = importlib.import_module(name).__file__\n"
             "    except Exception as exc:\n        out[name] = 'FAILED ' + type(exc).__name__ + ': ' + str(exc)\n"
             "print(json.dumps(out))")
    found = json.loads(run([python, "-c", probe, json.dumps(modules)], cwd=here).stdout)
    site = str(venv)
    wrong = {name: where for name, where in found.items() if not (where or "").startswith(site)}
    if wrong:
        raise Failed("modules missing from the installed wheel (or imported from elsewhere):\n"
                     + "\n".join(f"  {name}: {where}" for name, where in sorted(wrong.items())))

    db = here / "demo.db"
    step("mcptap --version, python -m mcptap --version, mcptap.__version__, and --help of every command")
    version = run([mcptap, "--version"], cwd=here).stdout
    if run([python, "-m", "mcptap", "--version"], cwd=here).stdout != version:
        raise Failed("python -m mcptap --version does not print what mcptap --version prints")
    said = run([python, "-c", "import mcptap; print(mcptap.__version__)"], cwd=here).stdout.decode().strip()
    if said not in version.decode():
        raise Failed(f"mcptap.__version__ is {said!r}; mcptap --version printed {version!r}")
    commands = ["record", "proxy", "sessions", "show", "analyze", "export", "import", "redact", "report",
                "replay", "serve", "diff", "wrap", "unwrap", "demo", "addon-path", "view", "runs", "audit", "tui", "mcp"]
    for command in commands:
        if "Example:" not in run([mcptap, command, "--help"], cwd=here).stdout.decode():
            raise Failed(f"mcptap {command} --help has no example")

    step("mcptap demo (the README's first command)")
    out = run([mcptap, "demo", "--db", db], cwd=here).stdout.decode()
    for expected in ("Transcript of the stdio demo session", "Analysis of the HTTP demo session"):
        if expected not in out:
            raise Failed(f"mcptap demo printed no {expected!r}:\n{out[-2000:]}")

    step("mcptap sessions, show, analyze (every format), export, import, report, redact")
    run([mcptap, "sessions", "--db", db], cwd=here)
    run([mcptap, "sessions", "--db", db, "--json"], cwd=here)
    run([mcptap, "show", "--db", db, "demo"], cwd=here)
    for fmt in ("table", "json", "jsonl", "sarif"):
        run([mcptap, "analyze", "--db", db, "--format", fmt, "-o", here / f"report.{fmt}"], cwd=here, ok=(0, 1))
    report = json.loads((here / "report.json").read_text(encoding="utf-8"))
    if len(report["sessions"]) != 2:
        raise Failed(f"mcptap analyze found {len(report['sessions'])} sessions in the demo database, not 2")
    run([mcptap, "analyze", "--rules"], cwd=here)
    run([mcptap, "sessions", "--db", db, "--format", "json"], cwd=here)
    json.loads(run([mcptap, "show", "--db", db, "demo-http", "--format", "json"], cwd=here).stdout)
    run([mcptap, "export", "--db", db, "-o", here / "demo.jsonl"], cwd=here)
    run([mcptap, "import", "--db", here / "imported.db", here / "demo.jsonl"], cwd=here)
    run([mcptap, "analyze", "--db", here / "imported.db"], cwd=here, ok=(0, 1))
    run([mcptap, "analyze", "demo.jsonl", "--format", "sarif", "-o", here / "file.sarif"], cwd=here, ok=(0, 1))
    if "region" not in (here / "file.sarif").read_text(encoding="utf-8"):
        raise Failed("mcptap analyze FILE --format sarif points at no line of the file")
    run([mcptap, "report", "--db", db, "-o", here / "report.html"], cwd=here)
    page = (here / "report.html").read_text(encoding="utf-8")
    if 'id="mcptap-data"' not in page or "mcptap report viewer" not in page or "#list .row" not in page:
        raise Failed("mcptap report wrote a page without its viewer (template, script or styles missing from the wheel)")
    run([mcptap, "export", "--format", "parquet", "-o", here / "dataset", db], cwd=here)
    dataset_report = json.loads(run([mcptap, "analyze", here / "dataset", "--format", "json"], cwd=here,
                                    ok=(0, 1)).stdout)
    if [s["id"] for s in dataset_report["sessions"]] != [s["id"] for s in report["sessions"]]:
        raise Failed("mcptap analyze of the Parquet export did not analyse the demo's sessions")
    step("mcptap runs, show --run, audit")
    if "demo" not in run([mcptap, "runs", "--db", db], cwd=here).stdout.decode():
        raise Failed("mcptap runs lists no run of the demo's servers")
    if "initialize" not in run([mcptap, "show", "--db", db, "--run", "@1"], cwd=here).stdout.decode():
        raise Failed("mcptap show --run @1 printed no frame of the newest run")
    run([mcptap, "audit", "--db", db, "--format", "json"], cwd=here, ok=(0, 1))
    shutil.copy(db, here / "scrubbed.db")
    run([mcptap, "redact", "--db", here / "scrubbed.db", "--redact-key", "*name*"], cwd=here)

    step("mcptap record: a stdio server behind the tee")
    server = [python, "-m", "mcptap.demo.server"]
    request = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    done = run([mcptap, "record", "--db", here / "tee.db", "--name", "smoke", "--", *server], cwd=here, input=request)
    if b'"id":1' not in done.stdout.replace(b" ", b""):
        raise Failed(f"the tee passed no answer through: {done.stdout[:500]!r}")

    step("mcptap diff: the demo session against its import (equal), and against the HTTP one (different)")
    run([mcptap, "diff", "--db", db, "--db-b", here / "imported.db", "demo", "demo"], cwd=here)
    run([mcptap, "diff", "--db", db, "demo", "demo-http", "--format", "json"], cwd=here, ok=(1,))

    step("mcptap wrap: a host config's server behind the installed mcptap record, run as the host would; unwrap")
    config = here / "claude_desktop_config.json"
    original = json.dumps({"mcpServers": {"demo": {"command": str(python), "args": ["-m", "mcptap.demo.server"]}}},
                          indent=2)
    config.write_text(original, encoding="utf-8")
    run([mcptap, "wrap", config, "--db", here / "host.db"], cwd=here)
    entry = json.loads(config.read_text(encoding="utf-8"))["mcpServers"]["demo"]
    if entry["command"] != str(mcptap):
        raise Failed(f"mcptap wrap made the command {entry['command']!r}, not the installed {str(mcptap)!r}")
    done = run([entry["command"], *entry["args"]], cwd=here, input=request)
    if b'"id":1' not in done.stdout.replace(b" ", b""):
        raise Failed(f"the wrapped server passed no answer through: {done.stdout[:500]!r}")
    run([mcptap, "sessions", "--db", here / "host.db"], cwd=here)
    run([mcptap, "unwrap", config], cwd=here)
    if config.read_text(encoding="utf-8") != original:
        raise Failed("mcptap unwrap did not give the config back as it was")

    step("mcptap replay and mcptap serve (stdio) of the demo session")
    run([mcptap, "replay", "--db", db, "demo", "--command-from-log", "--no-record", "--timeout", "20"], cwd=here,
        ok=(0, 1))
    first = run([python, "-c", "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("
                 "\"SELECT CAST(raw AS TEXT) FROM frames JOIN sessions ON sessions.id = session_id "
                 "WHERE label = 'demo' AND direction = 'c2s' ORDER BY seq LIMIT 1\").fetchone()[0])", db],
                cwd=here).stdout
    done = run([mcptap, "serve", "--db", db, "demo"], cwd=here, input=first)
    if b'"result"' not in done.stdout:
        raise Failed(f"mcptap serve did not answer the recorded initialize: {done.stdout[:500]!r}")

    step("mcptap proxy: listens, records an exchange, stops on Ctrl-C")
    proxied = here / "proxy.db"
    proc = subprocess.Popen([mcptap, "proxy", "--db", proxied, "--upstream", "http://127.0.0.1:9/mcp",
                             "--listen", "0"], cwd=here, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        post_to(wait_line(proc, r"listening on http://127\.0\.0\.1:(\d+)/", 60).group(1), request)
    finally:
        if proc.poll() is None:
            stop(proc, "mcptap proxy")
    run([mcptap, "sessions", "--db", proxied], cwd=here)
    listed = [json.loads(line) for line in run([mcptap, "sessions", "--db", proxied, "--json"],
                                               cwd=here).stdout.splitlines()]
    if len(listed) != 1:
        raise Failed(f"mcptap proxy recorded {len(listed)} sessions, not 1")

    step("the installed mitmproxy script, where `mcptap addon-path` says, records a POST through mitmdump")
    script = run([mcptap, "addon-path"], cwd=here).stdout.decode().strip()
    if script != found["mcptap.addons.http.mitmdump_script"]:
        raise Failed(f"mcptap addon-path printed {script!r}, not the installed {found['mcptap.addons.http.mitmdump_script']!r}")
    mitmdump = venv / "bin" / "mitmdump"
    upstream = subprocess.Popen([python, "-m", "mcptap.demo.http_server", "0"], cwd=here, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    upstream.stderr = upstream.stdout  # the bundled server says its port on stdout
    try:
        server_port = wait_line(upstream, r"listening on (\d+)", 60).group(1)
        proc = subprocess.Popen([mitmdump, "--mode", f"reverse:http://127.0.0.1:{server_port}", "--listen-host",
                                 "127.0.0.1", "--listen-port", "0", "-s", script, "--set",
                                 f"mcptap_db={here / 'mitm.db'}"],
                                cwd=here, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        proc.stderr = proc.stdout
        try:
            post_to(wait_line(proc, r"listening at .*:(\d+)", 60).group(1), request)
        finally:
            if proc.poll() is None:
                stop(proc, "mitmdump -s $(mcptap addon-path)")
    finally:
        upstream.kill()
        upstream.wait()
    frames = run([python, "-c", "import sqlite3, sys; print([bytes(r) for r, in sqlite3.connect(sys.argv[1])"
                  ".execute('SELECT CAST(raw AS BLOB) FROM frames')])", here / "mitm.db"], cwd=here).stdout
    if repr(request.strip()).encode() not in frames:
        raise Failed(f"mitmdump -s $(mcptap addon-path) did not record the POST: {frames[:500]!r}")

    step("pandas loaders and plots")
    run([python, "-c", "import sys, mcptap.data as mt, mcptap.plots as mp\n"
         "assert len(mt.sessions(sys.argv[1])) == 2\nmt.latency(mt.messages(sys.argv[1]))\n"
         "mp.latency(sys.argv[1]).savefig('latency.png')", db], cwd=here)


MCP_FACE_TOOLS = {"list_runs", "list_sessions", "search_frames", "list_findings", "get_frame", "summarize_session"}


def mcp_face(wheel: Path, venv: Path, here: Path) -> None:
    """`pip install 'mcptap[mcp]'` over the plain install, then `mcptap mcp` from it serves the plain
    session to the real SDK client (tests/tools/sdk_face_client.py): its six tools, the session
    listed, its frames searched with the filter language, its findings read."""
    step(f"install {wheel.name}[mcp] over the plain install; mcptap mcp serves its session to the SDK client")
    python = venv / "bin" / "python"
    run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", f"{wheel}[mcp]", "mcp==2.3.0"],
        cwd=here, timeout=900)
    calls = [["list_sessions", {}], ["search_frames", {"filter": 'method == "tools/list"'}], ["list_findings", {}]]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/root")}
    done = run([python, ROOT / "tests" / "tools" / "sdk_face_client.py", "--", venv / "bin" / "mcptap", "mcp",
                "--db", here / "plain.db"], cwd=here, timeout=300,
               env={**os.environ, "MCPTAP_TEST_SERVER_ENV": json.dumps(env), "MCPTAP_TEST_CALLS": json.dumps(calls)})
    out = json.loads(done.stdout.decode().strip().splitlines()[-1])
    if set(out["tools"]) != MCP_FACE_TOOLS:
        raise Failed(f"mcptap mcp from the wheel lists the tools {sorted(out['tools'])}")
    failed = [call for call in out["calls"] if "error" in call]
    if failed:
        raise Failed(f"mcptap mcp from the wheel answered with errors: {failed}")
    listed, searched, _findings = (call["result"] for call in out["calls"])
    if [s["label"] for s in listed["sessions"]] != ["plain"] or not searched["frames"]:
        raise Failed(f"mcptap mcp from the wheel listed {listed} and found {searched}")


PLAIN_MB = 120  # the plain install with its venv weighs under this (issue 16)
EXTRAS_ONLY = ("mitmproxy", "pandas", "numpy", "matplotlib", "pyarrow", "pyspark")


def plain_install(wheel: Path, venv: Path, here: Path) -> None:
    """The wheel without extras: none of the extras' packages, under PLAIN_MB with its venv, and it
    records, analyzes, shows, exports, imports and redacts a stdio session; `mcptap proxy` and
    `mcptap report` say which extra to install, exit 2."""
    step(f"install {wheel.name} alone (no extras) into a fresh venv")
    run([sys.executable, "-m", "venv", venv], cwd=here)
    python, mcptap = venv / "bin" / "python", venv / "bin" / "mcptap"
    run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel], cwd=here, timeout=900)
    installed = {line.split("==")[0].lower() for line in run([python, "-m", "pip", "freeze"], cwd=here)
                 .stdout.decode().split()}
    extra = sorted(installed & set(EXTRAS_ONLY))
    if extra:
        raise Failed(f"the plain install has {', '.join(extra)}")
    size = sum(f.stat().st_size for f in venv.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6
    if size > PLAIN_MB:
        raise Failed(f"the plain install weighs {size:.0f} MB with its venv, over {PLAIN_MB} MB")
    step(f"the plain install ({size:.0f} MB with its venv) records, analyzes, shows, exports, imports, redacts")
    db = here / "plain.db"
    calls = b"".join(json.dumps(c).encode() + b"\n" for c in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "smoke", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"}))
    done = run([mcptap, "record", "--db", db, "--name", "plain", "--", python, "-m", "mcptap.demo.server"],
               cwd=here, input=calls)
    answers = done.stdout.count(b"\n")
    if answers != 3:
        raise Failed(f"the plain tee passed {answers} answers through, not 3")
    for fmt in ("table", "json", "sarif"):
        run([mcptap, "analyze", "--db", db, "--format", fmt], cwd=here)
    run([mcptap, "show", "--db", db, "plain"], cwd=here)
    run([mcptap, "export", "--db", db, "-o", here / "plain.jsonl"], cwd=here)
    run([mcptap, "import", "--db", here / "plain-again.db", here / "plain.jsonl"], cwd=here)
    run([mcptap, "redact", "--db", here / "plain-again.db"], cwd=here)
    for command, extra in ((["proxy", "--upstream", "http://127.0.0.1:9/mcp", "--db", db], "proxy"),
                           (["report", "--db", db, "-o", here / "plain.html"], "notebook"),
                           (["export", "--format", "parquet", "-o", here / "plain-ds", db], "parquet")):
        said = run([mcptap, *command], cwd=here, ok=(2,)).stderr.decode()
        if f"pip install 'mcptap[{extra}]'" not in said or said.count("\n") != 1:
            raise Failed(f"mcptap {command[0]} in the plain install said {said!r}, not which extra to install")


def step(what: str) -> None:
    print(f"wheel smoke: {what}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (default: a temporary folder)")
    args = parser.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="mcptap-wheel-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        smoke(work)
    except (Failed, subprocess.TimeoutExpired) as exc:
        print(f"wheel smoke: FAILED: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"wheel smoke: passed in {time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
