"""2026-07-28 authorization rules (MCP 2026-07-28 basic/authorization, client-registration; RFC 9207,
RFC 7591, OIDC Dynamic Client Registration; docs/findings.md "Authorization"): the authorization
response's `iss` where the recording holds the authorization server's redirect (forward mode), the
`application_type` of a dynamic client registration, and that dynamic registration is deprecated
in favour of Client ID Metadata Documents. Like the other authorization rules they read the
session's exchanges stored by role once its frames are analysed."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl

from mcptap.analysis.rules.authorization import _at, _exchanges, headers
from mcptap.analysis.rules.registry import Hit, rule
from mcptap.wire.urls import split_url

AUTH = "MCP 2026-07-28 basic/authorization"
REGISTRATION = "MCP 2026-07-28 basic/authorization/client-registration"
AS_METADATA = ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")
REVISIONS = ("2026-07-28",)


def _json(text) -> dict:
    try:
        value = json.loads(text or "")
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _issuer(s) -> tuple[str | None, bool]:
    """(the issuer the authorization server's metadata names, whether it advertises
    authorization_response_iss_parameter_supported), from the last metadata document fetched."""
    issuer, advertised = None, False
    for row in _exchanges(s):
        if row.get("role") == "auth-discovery" and row.get("status") == 200 and any(p in row["url"] for p in AS_METADATA):
            meta = _json(row.get("response_body"))
            if isinstance(meta.get("issuer"), str):
                issuer = meta["issuer"]
                advertised = meta.get("authorization_response_iss_parameter_supported") is True
    return issuer, advertised


def _responses(s):
    """The authorization responses the recording holds: (exchange row, the redirect's query)."""
    for row in _exchanges(s):
        if row.get("role") != "auth-authorize" or not isinstance(row.get("status"), int) or not 300 <= row["status"] < 400:
            continue
        for location in headers(row, "response", "location")[:1]:
            query = dict(parse_qsl(split_url(location).query, keep_blank_values=True))
            if "code" in query or "error" in query:
                yield row, query


@rule("auth-iss-missing", group="authorization", severity="info", on=["end"], layer="mcp",
      ref=f'{AUTH} §Authorization Response Validation: "MCP authorization servers SHOULD include the iss parameter in '
          'authorization responses, including error responses, as defined in RFC9207 Section 2"; iss absent where '
          'the metadata does not advertise it: the client may "Proceed" (info); with '
          'authorization_response_iss_parameter_supported true, the client must "Reject the response" (an error)',
      summary="2026-07-28: an authorization response (the authorization server's redirect) without iss (RFC 9207)")
def iss_missing(s):
    if s.revision not in REVISIONS:
        return
    issuer, advertised = None, None
    for row, query in _responses(s):
        if "iss" in query:
            continue
        if advertised is None:
            issuer, advertised = _issuer(s)
        if advertised:
            yield _at(s, row, "the authorization response has no iss, though the authorization server's metadata "
                              "sets authorization_response_iss_parameter_supported: the client must reject it",
                      severity="error")
        else:
            yield _at(s, row, "the authorization response has no iss parameter (RFC 9207)")


@rule("auth-iss-mismatch", group="authorization", severity="error", on=["end"], layer="mcp",
      ref=f'{AUTH} §Authorization Response Validation: "MCP clients MUST apply the validation in RFC9207 Section 2.4 '
          'before transmitting the authorization code to any token endpoint": a present iss is compared "to the '
          'recorded issuer using simple string comparison"',
      summary="2026-07-28: an authorization response whose iss is not the issuer of the authorization server's "
              "metadata (RFC 9207, a mix-up)")
def iss_mismatch(s):
    if s.revision not in REVISIONS:
        return
    issuer = None
    for row, query in _responses(s):
        if "iss" not in query:
            continue
        if issuer is None:
            issuer = _issuer(s)[0]
            if issuer is None:
                return  # no metadata in the recording: nothing to compare with
        if query["iss"] != issuer:
            token = any(r.get("role") == "auth-token" and (r.get("started_at") or 0) > (row.get("started_at") or 0)
                        for r in _exchanges(s))
            yield _at(s, row, f"the authorization response says iss {query['iss']!r}; the authorization server's "
                              f"metadata names issuer {issuer!r}"
                              + (" and the client went on to the token endpoint" if token else ""))


def _registrations(s):
    for row in _exchanges(s):
        if row.get("role") == "auth-register" and row.get("method") == "POST":
            yield row


@rule("auth-application-type-missing", group="authorization", severity="error", on=["end"], layer="mcp",
      ref=f'{REGISTRATION} §Application Type and Redirect URI Constraints: "MCP clients MUST specify an appropriate '
          'application_type during Dynamic Client Registration."',
      summary="2026-07-28: a dynamic client registration request without application_type")
def application_type_missing(s):
    if s.revision not in REVISIONS:
        return
    for row in _registrations(s):
        body = row.get("request_body")
        if body is None:
            continue  # the recording does not hold it
        if "application_type" not in _json(body):
            yield _at(s, row, "the dynamic client registration request has no application_type")


@rule("auth-dynamic-registration", group="authorization", severity="info", on=["end"], layer="mcp",
      ref=f'{REGISTRATION} §Dynamic Client Registration: "Dynamic Client Registration is deprecated. New '
          'implementations should use Client ID Metadata Documents instead. This option remains available for '
          'backwards compatibility with authorization servers that do not support Client ID Metadata Documents."',
      summary="2026-07-28: the client registered dynamically (RFC 7591), which is deprecated in favour of Client ID "
              "Metadata Documents")
def dynamic_registration(s):
    if s.revision not in REVISIONS:
        return
    for row in _registrations(s):
        yield _at(s, row, "the client registered dynamically (RFC 7591), deprecated in 2026-07-28: Client ID Metadata "
                          "Documents are the way")
        return
