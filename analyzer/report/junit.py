"""`mcptap analyze --format junit`: the analysis as JUnit XML, the dialect CI systems read
(Jenkins' junit-10.xsd, GitLab, GitHub test reporters): a `<testsuite>` per session, a
`<testcase>` per finding rule that applies to it (the transport rules on HTTP sessions only),
a `<failure>` per finding that reaches --fail-on (error by default; warnings too at `--fail-on
warning`), each message naming the frame and the rule's spec reference; the findings below
--fail-on are listed in the case's `<system-out>`. Text from traffic is made printable
(analyzer/wire/textsafe.py) and XML-escaped. Written suite by suite."""

from __future__ import annotations

from collections import defaultdict
from typing import IO
from xml.sax.saxutils import escape, quoteattr

from mcptap.analysis import rules
from mcptap.engine import Report
from mcptap.outfile import NO_OPTIONS, WriteOptions
from mcptap.wire.textsafe import printable

RANK = {"error": 0, "warning": 1, "info": 2}
HTTP_ONLY_GROUPS = frozenset({"transport"})


def _attr(value) -> str:
    return quoteattr(printable(str(value)))


def _text(value: str) -> str:
    return escape(printable(value))


def _transports(report: Report) -> dict[str, str]:
    """Each session's transport, from the report's database (none when it cannot be read)."""
    from mcptap import store

    try:
        conn = store.open_existing(report.db_path)
    except Exception:  # noqa: BLE001 - no database to ask: every rule applies
        return {}
    try:
        return {s["id"]: store.get_session(conn, s["id"])["transport"] for s in report.sessions}
    finally:
        conn.close()


def _where(finding: tuple) -> str:
    _sid, seq, idx, _code, _severity, _message, related = finding
    where = "session" if seq is None else f"frame {seq}" + (f"[{idx}]" if idx is not None else "")
    return where + (f" (related frame {related})" if related is not None else "")


def write(report: Report, out: IO[str], options: WriteOptions = NO_OPTIONS) -> None:
    """A suite per session, a case per rule, a failure per finding at or above `options.fail_on`."""
    registry = sorted(rules.load().items())
    limit = RANK.get(options.fail_on, -1)  # never: nothing fails
    by_session: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for f in report.findings:
        by_session[f.session_id][f.code].append(f)
    transports = _transports(report)
    total_tests = total_failures = 0
    suites = []
    for s in report.sessions:
        sid = s["id"]
        http = transports.get(sid) in ("http", "sse") if transports else True
        applying = [(code, r) for code, r in registry if http or r.group not in HTTP_ONLY_GROUPS]
        found = by_session.get(sid, {})
        failures = sum(1 for code, _ in applying for f in found.get(code, ()) if RANK[f.severity] <= limit)
        cases_failing = sum(1 for code, _ in applying if any(RANK[f.severity] <= limit for f in found.get(code, ())))
        total_tests += len(applying)
        total_failures += cases_failing
        suites.append((s, applying, found, cases_failing, failures))
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(f'<testsuites name="mcptap analyze" tests="{total_tests}" failures="{total_failures}" errors="0">\n')
    for n, (s, applying, found, cases_failing, _failures) in enumerate(suites):
        out.write(f'  <testsuite name={_attr(s["id"])} id="{n}" package="mcptap" tests="{len(applying)}" '
                  f'failures="{cases_failing}" errors="0" skipped="0" time="0">\n')
        out.write("    <properties>\n")
        for key in ("revision", "revision_source", "frames"):
            out.write(f'      <property name="{key}" value={_attr(s.get(key) if s.get(key) is not None else "")}/>\n')
        out.write("    </properties>\n")
        for code, rule in applying:
            findings = found.get(code, ())
            out.write(f'    <testcase name={_attr(code)} classname={_attr("mcptap." + rule.group)} time="0"')
            if not findings:
                out.write("/>\n")
                continue
            out.write(">\n")
            quiet = []
            for f in findings:
                text = f"{f.severity} {code} at {_where(f)}: {f.message} (spec: {rule.ref})"
                if RANK[f.severity] <= limit:
                    out.write(f"      <failure message={_attr(text)} type={_attr(f.severity)}>{_text(text)}</failure>\n")
                else:
                    quiet.append(text)
            if quiet:
                out.write("      <system-out>" + "\n".join(map(_text, quiet)) + "</system-out>\n")
            out.write("    </testcase>\n")
        out.write("  </testsuite>\n")
    out.write("</testsuites>\n")
