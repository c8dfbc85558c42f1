"""The finding codes' reference page (docs/rules.md), generated from the rule registry
(analyzer/analysis/rules/), with one stable anchor per code that SARIF rules point at (`help_uri`).
Regenerate with `python -m mcptap.report.ruledocs > docs/rules.md`."""

from __future__ import annotations

import sys

from mcptap.analysis import rules

REPOSITORY = "https://github.com/mcptap/mcptap"
DOCS_URI = f"{REPOSITORY}/blob/main/docs/rules.md"


def help_uri(code: str) -> str:
    """Where a code is explained: its section of docs/rules.md (the anchor is the code itself)."""
    return f"{DOCS_URI}#{code}"


def severity_text(rule: rules.Rule) -> str:
    """'error', or one severity per profile: 'jsonrpc: warning, mcp: error'."""
    if isinstance(rule.severity, str):
        return rule.severity
    return ", ".join(f"{profile}: {level}" for profile, level in rule.severity.items())


def default_severity(rule: rules.Rule) -> str:
    """The severity a session with a known MCP revision gets (most sessions)."""
    if isinstance(rule.severity, str):
        return rule.severity
    return rule.severity.get("mcp", rule.severity.get("jsonrpc", "error"))


def full_description(rule: rules.Rule) -> str:
    return f"{rule.summary[:1].upper()}{rule.summary[1:]}. Severity: {severity_text(rule)}. Reference: {rule.ref}"


def help_text(rule: rules.Rule) -> str:
    """A code's help as plain text: what it means, its severity, the layer that judges it, the
    spec it follows and where it is explained (SARIF `help.text`)."""
    return (f"{rule.summary[:1].upper()}{rule.summary[1:]}.\n\nSeverity: {severity_text(rule)}.\n"
            f"Layer: {rule.layer}.\nReference: {rule.ref}\n\nSee {help_uri(rule.code)}")


def help_markdown(rule: rules.Rule) -> str:
    """The same help as Markdown (SARIF `help.markdown`: what code scanning shows)."""
    return (f"{rule.summary[:1].upper()}{rule.summary[1:]}.\n\n- severity: {severity_text(rule)}\n"
            f"- layer: {rule.layer}\n- reference: {rule.ref}\n\n[{rule.code} in the finding codes]({help_uri(rule.code)})")


def markdown() -> str:
    """docs/rules.md: every code by group, each under a heading that is the code."""
    registry = rules.load()
    out = ["# Finding codes", "",
           "Generated from the rule registry (`analyzer/analysis/rules/`) by `python -m mcptap.report.ruledocs > docs/rules.md`;",
           "do not edit by hand. `mcptap analyze --rules` prints the same. A code is a contract: it is never",
           "renamed, and a new behaviour gets a new code. Severity per profile: `jsonrpc` when the session's MCP",
           "revision is unknown, `mcp` for any known revision, or a revision by name.", ""]
    for group in rules.GROUPS:
        codes = sorted(code for code, r in registry.items() if r.group == group)
        if not codes:
            continue
        out += [f"## {group}", ""]
        for code in codes:
            r = registry[code]
            out += [f"### {code}", "", f"{r.summary[:1].upper()}{r.summary[1:]}.", "",
                    f"- severity: {severity_text(r)}", f"- layer: {r.layer}", f"- reference: {r.ref}", ""]
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(markdown())
