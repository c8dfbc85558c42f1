"""Authorization rules (MCP basic/authorization, per revision; RFC 9728, RFC 8707, RFC 6750,
OAuth 2.1; docs/findings.md "Authorization"): what an HTTP session's exchanges show of its OAuth
flow, where the wire shows it. They read the session's exchanges (the MCP ones, and those the
capture stored by role: `auth-discovery`, `auth-authorize`, `auth-token`, ...) once its frames are
analysed, and never judge what the wire cannot show (a token's audience, a server's storage).
A finding on an exchange that carried no frame is the session's, and its message names the exchange."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl

from mcptap.analysis.mcp import revision_at_least
from mcptap.analysis.rules.registry import Hit, rule
from mcptap.wire.urls import host_name, is_loopback, split_url

AUTH = "MCP basic/authorization"
PRM_PATH = "/.well-known/oauth-protected-resource"
AS_ROLES = ("auth-discovery", "auth-register", "auth-authorize", "auth-token")


def headers(row: dict, which: str, name: str) -> list[str]:
    """The values of a header of the exchange's request or response (`which`), as stored."""
    try:
        fields = json.loads(row.get(f"{which}_headers") or "[]")
    except ValueError:
        return []
    return [v for n, v in fields if isinstance(n, str) and n.lower() == name and isinstance(v, str)]


def _mcp(row: dict) -> bool:
    role = row.get("role")
    return role is None or not role.startswith("auth-") or role == "auth-challenge"


def _named(row: dict) -> str:
    return f"{row['method']} {row['url']}"


def _at(s, row: dict, message: str, severity: str | None = None) -> Hit:
    """A finding on the request frame the exchange carried (or refused), else the session's."""
    seq = s.refused_seqs.get(row["id"])
    if seq is None:
        posted = s._posted.get(row["id"])
        seq = posted.seq if posted is not None else None
    return Hit(message if seq is not None else f"{_named(row)}: {message}", seq=seq, severity=severity)


def _query(url: str) -> dict[str, str]:
    return dict(parse_qsl(split_url(url).query, keep_blank_values=True))


def _exchanges(s):
    return s.exchanges or ()


@rule("auth-challenge-missing", group="authorization", severity="error", on=["end"], layer="mcp",
      ref=f'{AUTH} (every revision): "servers MUST respond with HTTP 401 Unauthorized"; OAuth 2.1 §5.3.1 and '
          'RFC 6750 §3: "the resource server MUST include the HTTP WWW-Authenticate response header field"',
      summary="a 401 answer without a WWW-Authenticate challenge")
def challenge_missing(s):
    for row in _exchanges(s):
        if row.get("status") == 401 and _mcp(row) and not headers(row, "response", "www-authenticate"):
            yield _at(s, row, "answered 401 Unauthorized without a WWW-Authenticate header: the client cannot "
                              "tell how to authorize")


@rule("auth-resource-metadata-missing", group="authorization", severity="error", on=["end"], layer="mcp",
      ref=f'{AUTH} 2025-06-18: "MCP servers MUST use the HTTP header WWW-Authenticate when returning a 401 '
          'Unauthorized to indicate the location of the resource server metadata URL"; 2025-11-25 on: "MCP servers '
          'MUST implement one of the following discovery mechanisms" (the header, or the well-known URI)',
      summary="a Bearer challenge without resource_metadata (2025-06-18; later revisions: and no protected-resource "
              "metadata at the well-known URI either; a flow of 2025-03-26's shape, the authorization server at "
              "the MCP server's origin, is judged by 2025-03-26)")
def resource_metadata_missing(s):
    if not revision_at_least(s.revision, "2025-06-18") or flow_2025_03_26(s):
        return  # a 2025-03-26 flow: the authorization server at the MCP server's origin, no resource metadata
    found_prm = any(PRM_PATH in row["url"] and row.get("status") == 200 for row in _exchanges(s))
    failed_prm = any(PRM_PATH in row["url"] and (row.get("status") or 0) >= 400 for row in _exchanges(s))
    if s.revision != "2025-06-18" and (found_prm or not failed_prm):
        return  # the well-known URI may be the mechanism: wrong only when the wire shows it is not there
    for row in _exchanges(s):
        if row.get("status") == 401 and _mcp(row):
            challenges = headers(row, "response", "www-authenticate")
            if any(c.lstrip().lower().startswith("bearer") and "resource_metadata" not in c.lower()
                   for c in challenges):
                yield _at(s, row, "its Bearer challenge has no resource_metadata"
                          + ("" if s.revision == "2025-06-18" else ", and the well-known protected-resource "
                                                                   "metadata was not found"))


@rule("auth-token-in-query", group="authorization", severity="error", on=["end"], layer="mcp",
      ref=f'{AUTH}: "Access tokens MUST NOT be included in the URI query string"; OAuth 2.1 §5.1: "clients MUST '
          'NOT send the access token in a URI query parameter"',
      summary="an access token in the query string of a request to the MCP server")
def token_in_query(s):
    for row in _exchanges(s):
        if _mcp(row) and "access_token" in _query(row["url"]):
            yield _at(s, row, "the request carries access_token in its URL's query string")


@rule("auth-resource-missing", group="authorization", severity="error", on=["end"], layer="mcp",
      ref=f'{AUTH} 2025-06-18 on, §Resource Parameter Implementation (RFC 8707): the resource parameter "MUST be '
          'included in both authorization requests and token requests"',
      summary="an authorization or token request without the resource parameter (2025-06-18 and later, where the "
              "server named its protected-resource metadata)")
def resource_missing(s):
    if not revision_at_least(s.revision, "2025-06-18") or not _protected_resource(s):
        return  # a 2025-03-26 flow (no protected-resource metadata): resource indicators came later
    for row in _exchanges(s):
        role = row.get("role")
        if role == "auth-authorize" and "resource" not in _query(row["url"]):
            yield _at(s, row, "the authorization request has no resource parameter")
        elif role == "auth-token":
            form = dict(parse_qsl(row.get("request_body") or "", keep_blank_values=True))
            if form.get("grant_type") in ("authorization_code", "refresh_token") and "resource" not in form:
                yield _at(s, row, f"the token request ({form['grant_type']}) has no resource parameter")


def _protected_resource(s) -> bool:
    """The flow found the server's protected-resource metadata (RFC 9728), or a challenge named it:
    the 2025-06-18 flow. Without it the client discovered the authorization server the 2025-03-26
    way (its metadata at the server's root, or the default endpoints)."""
    for row in _exchanges(s):
        if PRM_PATH in row["url"] and row.get("status") == 200:
            return True
        if row.get("status") in (401, 403) and any("resource_metadata" in c.lower()
                                                   for c in headers(row, "response", "www-authenticate")):
            return True
    return False


def _origin(url: str) -> tuple[str, str]:
    parts = split_url(url)
    return parts.scheme.lower(), parts.netloc.lower()


AS_METADATA = ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")


def flow_2025_03_26(s) -> bool:
    """The flow has 2025-03-26's shape, so that revision's authorization rules apply whatever the
    session negotiated (MCP 2025-03-26 basic/authorization: the authorization base URL is the MCP
    server's with the path discarded; its RFC 8414 metadata there, or the default `/authorize`,
    `/token`, `/register`): no protected-resource metadata found or named, and the client found
    the authorization server at the MCP server's origin (its metadata served there, or an
    authorization, token or registration request sent there)."""
    if _protected_resource(s):
        return False
    rows = list(_exchanges(s))
    servers = {_origin(row["url"]) for row in rows if row.get("role") in (None, "auth-challenge", "http-error")}
    for row in rows:
        if _origin(row["url"]) not in servers or PRM_PATH in row["url"]:
            continue
        role = row.get("role")
        if role == "auth-discovery" and row.get("status") == 200 and split_url(row["url"]).path in AS_METADATA:
            return True
        if role in ("auth-register", "auth-authorize", "auth-token"):
            return True
    return False


def _insecure(url: str) -> bool:
    return split_url(url).scheme.lower() == "http" and not is_loopback(host_name(url))


@rule("auth-server-insecure", group="authorization", severity="error", on=["end"], layer="mcp",
      ref=f'{AUTH} §Communication Security: "All authorization server endpoints MUST be served over HTTPS"; '
          'OAuth 2.1 §1.5 (loopback addresses aside)',
      summary="an authorization server reached, or named by the protected-resource metadata, over plain http "
              "on a host that is not loopback")
def server_insecure(s):
    for row in _exchanges(s):
        role = row.get("role")
        if role in AS_ROLES and PRM_PATH not in row["url"] and _insecure(row["url"]):
            yield _at(s, row, "an authorization server endpoint over plain http")
        elif role == "auth-discovery" and PRM_PATH in row["url"] and row.get("status") == 200:
            try:
                servers = json.loads(row.get("response_body") or "{}").get("authorization_servers") or []
            except (ValueError, AttributeError):
                continue
            for server in servers if isinstance(servers, list) else ():
                if isinstance(server, str) and _insecure(server):
                    yield _at(s, row, f"the protected-resource metadata names the authorization server {server!r} "
                                      "over plain http")
