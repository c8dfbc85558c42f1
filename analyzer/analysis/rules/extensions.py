"""Extension and deprecation rules (MCP 2026-07-28): the official extensions' methods used where the
extension was not negotiated (docs/extensions/overview.mdx §Negotiation; tables in
analyzer/analysis/mcp.py), and what a session uses of the features its revision deprecates
(S/2026-07-28 deprecated.mdx: Roots, Sampling and Logging by SEP-2577, the HTTP+SSE transport by SEP-2596)."""

from __future__ import annotations

from mcptap.analysis import mcp
from mcptap.analysis.rules.registry import Hit, rule

NEGOTIATION = ('MCP 2026-07-28 docs/extensions/overview.mdx §Negotiation: "Clients and servers advertise their '
               'support for extensions in the extensions field within their respective capability declarations"; '
               'ext-tasks: "A server MUST NOT return CreateTaskResult to a client that did not include the extension '
               'capability on its request"; skills: "clients MUST NOT call resources/directory/read against a server '
               'that has not declared directoryRead: true"')
REGISTRY = ('MCP 2026-07-28 deprecated.mdx: "A Deprecated feature remains part of the specification but is scheduled '
            'for removal: new implementations SHOULD NOT adopt it, and existing implementations SHOULD migrate"')


@rule("extension-not-negotiated", group="methods", severity="warning", on=["request", "notification"], layer="mcp",
      ref=NEGOTIATION, summary="a method of an official extension (tasks, skills) used where that extension was not "
                              "negotiated, or a setting it needs was not declared",
      when=["extension"])
def extension_not_negotiated(msg, s):
    extension = mcp.extension_of(s.revision, msg.direction, msg.method, msg.kind == "request")
    if extension is None:
        return None
    side = s.extension_missing(extension, msg)
    if side is not None:
        where = ("in its request's _meta capabilities" if s.stateless and msg.direction == mcp.C2S
                 else "in any request's _meta capabilities" if s.stateless else "at initialize") \
            if side == "client" else "in its capabilities"
        return Hit(f"{msg.method} belongs to the extension {extension}, which the {side} did not declare {where}")
    setting = mcp.EXTENSION_SETTINGS.get(msg.method)
    if setting is not None and s.server_caps is not None:
        settings = mcp.extensions_declared(s.server_caps).get(setting[0])
        if not (type(settings) is dict and settings.get(setting[1]) is True):
            return Hit(f"{msg.method} needs the server's {setting[0]} setting {setting[1]}: true, which it did not "
                       "declare")
    return None


@rule("deprecated-feature", group="methods", severity="info", on=["request", "notification", "response"], layer="mcp",
      ref=f"{REGISTRY}; SEP-2577: Roots (roots/list, notifications/roots/list_changed), Sampling "
          "(sampling/createMessage), Logging (logging/setLevel, notifications/message, 2026-07-28: _meta logLevel)",
      summary="a session uses a feature its revision deprecates (Roots, Sampling, Logging: once per feature)",
      when=["deprecated"])
def deprecated_feature(msg, s):
    features = s.deprecated_uses(msg)
    for feature in features:
        s.first(mcp.DEPRECATED + feature)
    if features:
        return Hit("; ".join(_deprecated(feature, s.revision) for feature in features))
    return None


@rule("deprecated-transport", group="transport", severity="info", on=["end"], layer="mcp",
      ref=f'{REGISTRY}; SEP-2596: the HTTP+SSE transport, deprecated in 2025-03-26, migration path "Streamable HTTP"',
      summary="a session of a revision that deprecates it speaks the HTTP+SSE transport (2024-11-05)")
def deprecated_transport(s):
    if s.http_flavour == "legacy-sse" and mcp.deprecated(s.revision, mcp.LEGACY_SSE):
        yield Hit(_deprecated(mcp.LEGACY_SSE, s.revision))


def _deprecated(feature: str, revision: str | None) -> str:
    since, sep, migration = mcp.DEPRECATED_FEATURES[feature]
    return (f"{feature} is deprecated (in {since}, {sep}; this session speaks {revision}): new implementations "
            f"SHOULD NOT adopt it; the migration path: {migration}")
