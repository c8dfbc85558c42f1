"""The official MCP conformance suite as an oracle: its scenarios by release and requirement set, one
scenario run against a server URL or with a client command, its verdict read from the checks.json it
writes, and the table of docs/conformance.md that says, scenario by scenario, what mcptap says of it."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

DOC = Path(__file__).parents[2] / "docs" / "conformance.md"
SCENARIO_TIMEOUT_MS = 30_000  # the suite's own bound on one scenario (its default)
RUN_TIMEOUT_S = 120  # ours on the whole command: node's start, the scenario, and a client's shutdown


@dataclass(frozen=True)
class Suite:
    """One way of running the suite: a release, and the revision whose scenarios it runs (`spec`:
    `--spec-version`, the wire the scenario speaks; None: the release's default)."""
    name: str
    version: str
    spec: str | None


SUITES = {suite.name: suite for suite in (
    Suite("0.1.16", "0.1.16", None),
    Suite("0.2.0-alpha.12 2025-11-25", "0.2.0-alpha.12", "2025-11-25"),
    Suite("0.2.0-alpha.12 2026-07-28", "0.2.0-alpha.12", "2026-07-28"),
)}

# Every scenario of each (`conformance list --server|--client` for 0.1.16, every scenario of
# `list --requirements REVISION` for 0.2.0-alpha.12: the scored ones and those run but never scored).
# tests/e2e/test_conformance.py checks these lists against the installed suite.
SERVER_0_1_16 = (
    "server-initialize", "logging-set-level", "ping", "completion-complete", "tools-list", "tools-call-simple-text",
    "tools-call-image", "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content",
    "tools-call-with-logging", "tools-call-error", "tools-call-with-progress", "tools-call-sampling",
    "tools-call-elicitation", "json-schema-2020-12", "elicitation-sep1034-defaults", "server-sse-polling",
    "server-sse-multiple-streams", "elicitation-sep1330-enums", "resources-list", "resources-read-text",
    "resources-read-binary", "resources-templates-read", "resources-subscribe", "resources-unsubscribe",
    "prompts-list", "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource",
    "prompts-get-with-image", "dns-rebinding-protection")
SERVER_2025_11_25 = tuple(s for s in SERVER_0_1_16 if s not in ("json-schema-2020-12", "server-sse-polling")) + (
    "server-session-lifecycle", "json-schema-2020-12", "server-sse-polling")
SERVER_2026_07_28 = (
    "server-stateless", "completion-complete", "tools-list", "tools-call-simple-text", "tools-call-image",
    "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-error",
    "tools-call-with-progress", "server-sse-multiple-streams", "resources-list", "resources-read-text",
    "resources-read-binary", "resources-templates-read", "sep-2164-resource-not-found", "prompts-list",
    "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image",
    "dns-rebinding-protection", "caching", "input-required-result-basic-elicitation",
    "input-required-result-basic-sampling", "input-required-result-basic-list-roots",
    "input-required-result-request-state", "input-required-result-multiple-input-requests",
    "input-required-result-multi-round", "input-required-result-missing-input-response",
    "input-required-result-non-tool-request", "input-required-result-result-type",
    "input-required-result-unsupported-methods", "input-required-result-tampered-state",
    "input-required-result-capability-check", "input-required-result-ignore-extra-params",
    "input-required-result-validate-input", "tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields",
    "tasks-request-state-removal", "tasks-mrtr-input", "tasks-request-headers", "tasks-dispatch-and-envelope",
    "tasks-status-notifications", "tasks-required-task-error", "tasks-mrtr-composition", "json-schema-2020-12",
    "http-header-validation", "http-custom-header-server-validation")
AUTH_2025_11_25 = (
    "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3", "auth/basic-cimd",
    "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
    "auth/scope-step-up", "auth/scope-retry-limit", "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none", "auth/pre-registration")
AUTH_EXTENSIONS = ("auth/client-credentials-jwt", "auth/client-credentials-basic",
                   "auth/enterprise-managed-authorization", "auth/dpop", "auth/dpop-nonce", "auth/wif-jwt-bearer")
CLIENT = {
    "0.1.16": ("initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry", *AUTH_2025_11_25,
               "auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
               "auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported",
               "auth/client-credentials-jwt", "auth/client-credentials-basic", "auth/cross-app-access-complete-flow"),
    "0.2.0-alpha.12 2025-11-25": ("initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry",
                                  *AUTH_2025_11_25, *AUTH_EXTENSIONS, "json-schema-2020-12-preservation"),
    "0.2.0-alpha.12 2026-07-28": (
        "tools_call", "request-metadata", *AUTH_2025_11_25, "auth/resource-mismatch", "auth/offline-access-scope",
        "auth/offline-access-not-supported", "auth/authorization-server-migration", "auth/iss-supported",
        "auth/iss-not-advertised", "auth/iss-supported-missing", "auth/iss-wrong-issuer", "auth/iss-unexpected",
        "auth/iss-normalized", "auth/metadata-issuer-mismatch", "sep-2322-client-request-state",
        "http-standard-headers", "http-custom-headers", "http-invalid-tool-headers", "json-schema-ref-no-deref",
        *AUTH_EXTENSIONS, "json-schema-2020-12-preservation"),
}
SERVER = {"0.1.16": SERVER_0_1_16, "0.2.0-alpha.12 2025-11-25": SERVER_2025_11_25,
          "0.2.0-alpha.12 2026-07-28": SERVER_2026_07_28}


@dataclass(frozen=True)
class Outcome:
    """One scenario run: `pass` when no check failed (warnings and infos do not fail a scenario)."""
    verdict: str
    failed: tuple[str, ...]
    output: str


def run_scenario(conformance: list[str], suite: Suite, side: str, scenario: str, out: Path, *,
                 url: str | None = None, command: list[str] | None = None, env: dict | None = None) -> Outcome:
    """Run one scenario (`side`: server, against `url`; client, running `command` with the URL the suite
    appends) and read its verdict from the checks it wrote into `out`."""
    argv = [*conformance, side, "--scenario", scenario, "-o", str(out)]
    if suite.spec:  # --force: an extension scenario is run at a revision too (as `--requirements` runs it)
        argv += ["--spec-version", suite.spec, "--force"]
    if side == "server":
        argv += ["--url", url]
        if suite.version != "0.1.16":
            argv += ["--timeout", str(SCENARIO_TIMEOUT_MS)]
    else:
        argv += ["--command", shlex.join(command), "--timeout", str(SCENARIO_TIMEOUT_MS)]
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=RUN_TIMEOUT_S, env=env)
    output = (done.stdout + done.stderr).decode(errors="replace")
    files = sorted(out.rglob("checks.json"))
    assert len(files) == 1, f"exit {done.returncode}, no single checks.json in {out}: {output[-3000:]}"
    checks = json.loads(files[0].read_text(encoding="utf-8"))
    failed = tuple(sorted({c["id"] for c in checks if c["status"] == "FAILURE"}))
    return Outcome("fail" if failed else "pass", failed, output)


# -- the table in docs/conformance.md ----------------------------------------------------------

@dataclass(frozen=True)
class Row:
    suite: str
    side: str
    scenario: str
    direct: str
    proxy: str
    codes: tuple[str, ...]  # mcptap's error and warning findings through the proxy
    note: str

    def line(self) -> str:
        codes = ", ".join(f"`{c}`" for c in self.codes) or "none"
        return f"| {self.suite} | {self.side} | `{self.scenario}` | {self.direct} | {self.proxy} | {codes} | {self.note} |"


_ROW = re.compile(r"^\| (?P<suite>[^|]+) \| (?P<side>server|client) \| `(?P<scenario>[^`]+)` \| (?P<direct>\w+) \| "
                  r"(?P<proxy>\w+) \| (?P<codes>[^|]+) \| (?P<note>[^|]*) \|$")


def table() -> dict[tuple[str, str, str], Row]:
    """The rows of docs/conformance.md, by (suite, side, scenario)."""
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = _ROW.match(line)
        if m:
            codes = () if m["codes"].strip() == "none" else tuple(c.strip(" `") for c in m["codes"].split(","))
            row = Row(m["suite"].strip(), m["side"], m["scenario"], m["direct"], m["proxy"], codes, m["note"].strip())
            rows[(row.suite, row.side, row.scenario)] = row
    return rows


def agrees(row: Row) -> bool:
    """Whether mcptap's findings agree with the suite: a finding where it fails, none where it passes."""
    return (row.proxy == "fail") == bool(row.codes)


def render(rows_dir: Path) -> None:
    """Put the rows the tests wrote into `rows_dir` into docs/conformance.md's table (by suite, side, and
    the suite's own order), keeping the notes the table already has."""
    order = {suite: i for i, suite in enumerate(SUITES)}
    position = {(suite, "server", s): i for suite, names in SERVER.items() for i, s in enumerate(names)}
    position.update({(suite, "client", s): i for suite, names in CLIENT.items() for i, s in enumerate(names)})
    rows = dict(table())
    for path in rows_dir.glob("*.md"):
        m = _ROW.match(path.read_text(encoding="utf-8").strip())
        codes = () if m["codes"].strip() == "none" else tuple(c.strip(" `") for c in m["codes"].split(","))
        key = (m["suite"].strip(), m["side"], m["scenario"])
        note = rows[key].note if key in rows else ""
        rows[key] = Row(*key, m["direct"], m["proxy"], codes, note)
    lines = [rows[key].line() for key in sorted(rows, key=lambda k: (order[k[0]], k[1] != "server",
                                                                      position.get(k, 999)))]
    text = DOC.read_text(encoding="utf-8")
    head, _, rest = text.partition(TABLE_START)
    _, _, tail = rest.partition(TABLE_END)
    DOC.write_text(f"{head}{TABLE_START}\n{TABLE_HEADER}\n" + "\n".join(lines) + f"\n{TABLE_END}{tail}", encoding="utf-8")


TABLE_START, TABLE_END = "<!-- scenarios: start -->", "<!-- scenarios: end -->"
TABLE_HEADER = ("| suite | side | scenario | direct | through the proxy | mcptap's errors and warnings | why they differ |\n"
                "| --- | --- | --- | --- | --- | --- | --- |")

if __name__ == "__main__":
    import sys

    render(Path(sys.argv[1]))
