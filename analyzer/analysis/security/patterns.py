"""Text addressed to the model rather than describing a tool: a documented, tested table of
patterns (`PATTERNS`), each with a weight, summed into a score that a description must reach
(`THRESHOLD`) to be reported; and what such a description asks for (a file path, a URL, a tool's
name: `asks`), to find the call that did it. Regular expressions over the text, nothing learned
and nothing fetched (docs/security.md lists the table)."""

from __future__ import annotations

import re
from typing import Any, NamedTuple


class Pattern(NamedTuple):
    name: str
    weight: int
    regex: re.Pattern
    what: str


def _p(name: str, weight: int, regex: str, what: str) -> Pattern:
    return Pattern(name, weight, re.compile(regex, re.IGNORECASE | re.DOTALL), what)


_SENSITIVE = (r"(?:~/\.ssh|\.ssh/|id_rsa|id_ed25519|/etc/passwd|/etc/shadow|\.aws/credentials|\.env\b|\.netrc|"
              r"\.npmrc|\.pypirc|\.git-credentials|\.kube/config|mcp\.json|claude_desktop_config|\.cursor/)")

PATTERNS: tuple[Pattern, ...] = (
    _p("ignore-instructions", 3, r"\b(?:ignore|disregard|forget|override)\b.{0,40}?\b(?:previous|prior|earlier|above|"
       r"all|other|system)\b.{0,30}?\b(?:instructions?|prompts?|rules?|guidelines|directions)\b",
       "tells the model to ignore its instructions"),
    _p("hide-from-user", 3, r"\b(?:do not|don't|never|must not|without)\b.{0,40}?\b(?:tell|telling|inform|informing|"
       r"mention|mentioning|reveal|revealing|show|showing|notify|notifying|alert|alerting)\b.{0,30}?\buser\b"
       r"|\buser\b.{0,30}?\b(?:must|should)\s+not\s+(?:know|see|be told)",
       "tells the model to keep something from the user"),
    _p("read-secret-file", 3, r"\b(?:read|open|cat|load|access|include|attach|get|send|pass|upload)\b.{0,60}?"
       + _SENSITIVE, "asks for a sensitive file"),
    _p("sensitive-path", 2, _SENSITIVE, "names a sensitive file"),
    _p("instruction-tags", 2, r"<\s*/?\s*(?:important|system|secret|instructions?|admin|hidden|critical)\s*>",
       "wraps text in tags meant for the model"),
    _p("exfiltrate-url", 2, r"\b(?:fetch|visit|send|post|upload|curl|wget|download|forward|transmit|navigate)\b"
       r".{0,60}?\bhttps?://", "asks to send to or fetch from a URL"),
    _p("system-prompt", 2, r"\b(?:system prompt|system message|new instructions|conversation history|"
       r"previous messages)\b", "speaks of the model's prompt or conversation"),
    _p("before-using", 1, r"\b(?:before|after|whenever|every time|each time)\b.{0,30}?\b(?:using|calling|you use|"
       r"you call|invoking|running)\b", "sets a condition on the model's other actions"),
    _p("pass-as-argument", 1, r"\b(?:pass|put|include|add|send|provide)\b.{0,50}?\b(?:as|in|into)\b.{0,20}?"
       r"(?:parameter|argument|field|`\w+`)", "asks to put something into an argument"),
    _p("address-model", 1, r"\b(?:you must|you should always|as an ai|the assistant must|ai assistant|"
       r"the model must|llm)\b", "speaks to the model"),
    _p("call-other-tool", 1, r"\b(?:call|use|invoke|run)\b\s+(?:the\s+)?[`'\"]?[A-Za-z_][\w.-]*[`'\"]?\s+tool\b",
       "tells the model to call a tool"),
    _p("urgency", 1, r"\b(?:IMPORTANT|CRITICAL|MANDATORY|REQUIRED)\b[:!]", "shouts at the model"),
)
"""The patterns, each counted once per description however often it matches."""

THRESHOLD = 3
"""The score a description must reach to be reported (one strong pattern, or a few weak ones)."""
SHOWN = 60
"""Characters of each matched phrase a finding shows."""


class Scored(NamedTuple):
    score: int
    matched: list[tuple[Pattern, str]]


def score(text: str) -> Scored:
    """The patterns `text` matches (each with its first matched phrase) and their summed weight."""
    matched = []
    for pattern in PATTERNS:
        found = pattern.regex.search(text)
        if found is not None:
            matched.append((pattern, " ".join(found.group(0).split())[:SHOWN]))
    return Scored(sum(p.weight for p, _ in matched), matched)


def descriptions(definition: Any) -> list[tuple[str, str]]:
    """(JSON path, text) of every `description` and `title` in a definition (its arguments' and
    input schema's too), walked without recursion."""
    out: list[tuple[str, str]] = []
    stack: list[tuple[Any, str]] = [(definition, "$")]
    while stack:
        value, at = stack.pop()
        if type(value) is dict:
            for key, member in value.items():
                if key in ("description", "title") and type(member) is str:
                    out.append((f"{at}.{key}", member))
                elif type(member) in (dict, list):
                    stack.append((member, f"{at}.{key}"))
        elif type(value) is list:
            stack.extend((member, f"{at}[{i}]") for i, member in enumerate(value))
    out.sort()
    return out


_PATH = re.compile(r"(?<![\w/])(?:~/|/)[\w.@-]+(?:/[\w.@-]+)*|(?<![\w/])\.(?:ssh|aws|env|netrc|npmrc|kube)[\w./-]*"
                   r"|\bid_(?:rsa|ed25519|ecdsa)\b")
_URL = re.compile(r"\bhttps?://[^\s\"'<>`)]+")


def asks(text: str, tools: frozenset[str]) -> list[str]:
    """What a description asks for that a later call's arguments could carry: file paths, URLs,
    and the names of other tools (among `tools`) it mentions."""
    found = [m.group(0).rstrip(".,;:") for m in _URL.finditer(text)]
    stripped = _URL.sub(" ", text)
    found += [m.group(0).rstrip(".,;:") for m in _PATH.finditer(stripped)]
    found += [name for name in sorted(tools) if len(name) > 2 and re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)]
    return list(dict.fromkeys(f for f in found if len(f) > 2))
