"""`elicitation-asks-secret`: a form-mode elicitation that asks the user for a password, a token
or a key, which the specification sends through URL mode."""

from __future__ import annotations

import re

from mcptap.analysis.rules.registry import Hit, rule

_NAME = re.compile(r"(?:^|[-_.\s])(?:password|passwd|passphrase|pwd|pin|secret|token|api[-_\s]?key|apikey|"
                   r"private[-_\s]?key|secret[-_\s]?key|access[-_\s]?key|client[-_\s]?secret|credentials?|otp|cvv|"
                   r"card[-_\s]?number)(?:$|[-_.\s])", re.IGNORECASE)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _secret(name: str, spec) -> str | None:
    """What of a requested field says it is a secret, or None."""
    if _NAME.search(_CAMEL.sub("_", name)):
        return f"field {name!r}"
    if type(spec) is dict:
        if spec.get("format") == "password" or spec.get("writeOnly") is True:
            return f"field {name!r} ({'format password' if spec.get('format') == 'password' else 'writeOnly'})"
        for member in ("title", "description"):
            text = spec.get(member)
            if type(text) is str and _NAME.search(f" {text} "):
                return f"field {name!r} ({member} {' '.join(text.split())[:60]!r})"
    return None


@rule("elicitation-asks-secret", group="security", severity="error", on=["elicitation"], layer="mcp",
      ref='MCP client/elicitation (2025-11-25) §Security: "Servers MUST NOT use form mode elicitation to request '
          'sensitive information such as passwords, API keys, access tokens, or payment credentials"; "Servers MUST '
          'use URL mode for interactions involving such sensitive information"',
      summary="a form-mode elicitation/create requests a password, token, key or other credential (named by a field "
              "or its title or description)")
def elicitation_asks_secret(elicitation, ctx):
    params = elicitation.params
    if params.get("mode", "form") != "form":
        return None
    schema = params.get("requestedSchema")
    properties = schema.get("properties") if type(schema) is dict else None
    if type(properties) is not dict:
        return None
    found = [what for name, spec in properties.items() if type(name) is str and (what := _secret(name, spec))]
    if not found:
        return None
    return Hit(f"a form-mode elicitation asks the user for a secret: {'; '.join(found[:6])}")
