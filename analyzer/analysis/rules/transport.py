"""Transport rules (docs/findings.md "Transport"; docs/mcp-reference.md sections 8.2, 10 and the
HTTP rows of section 12): what the HTTP metadata of a session says, exchange by exchange. They
run on sessions recorded through the HTTP capture or imported from HTTP captures, never on stdio.

Streamable HTTP only: the legacy HTTP+SSE transport (2024-11-05) answers every POST 202 and
has no session or version headers."""

from __future__ import annotations

import json

from mcptap.analysis.mcp import STATELESS_REVISIONS
from mcptap.analysis.rules.registry import Hit, rule
from mcptap.wire.urls import host_name, is_loopback

HTTP = "MCP basic/transports §Streamable HTTP"
ANSWERS = ("response", "error")
REQUEST = "request"
VERSION_HEADER_REVISIONS = ("2025-06-18", "2025-11-25")


def _streamable(s) -> bool:
    return s.http_flavour == "streamable"


def _after_handshake(ex, s) -> bool:
    """A request sent after the InitializeResult reached the client (the initialize POST aside)."""
    return (not ex.is_initialize and s.init_result_ts is not None
            and ex.row["started_at"] is not None and ex.row["started_at"] >= s.init_result_ts)


def _after_assignment(ex, s) -> bool:
    """A request sent after the initialize answer assigned the session's id (that POST aside)."""
    return (_streamable(s) and s.handshake and s.assigned_session is not None and not ex.is_initialize
            and ex.row["started_at"] >= s.assigned_at)


@rule("session-id-missing", group="transport", severity="error", on=["exchange"], layer="mcp",
      ref=f'{HTTP} §Session Management: "clients using the Streamable HTTP transport MUST include it in the '
          'Mcp-Session-Id header on all of their subsequent HTTP requests."',
      summary="the server assigned a session id but a later client request omits it")
def session_id_missing(ex, s):
    if _after_assignment(ex, s) and ex.row["mcp_session_id"] is None:
        return Hit(f"{ex} carries no Mcp-Session-Id, though the server assigned {s.assigned_session!r}")


@rule("session-id-mismatch", group="transport", severity="error", on=["exchange"], layer="mcp",
      ref=f'{HTTP} §Session Management: "clients ... MUST include it in the Mcp-Session-Id header on all of their '
          'subsequent HTTP requests."',
      summary="an HTTP request carries an Mcp-Session-Id other than the one the server assigned")
def session_id_mismatch(ex, s):
    sent = ex.row["mcp_session_id"]
    if _after_assignment(ex, s) and sent is not None and sent != s.assigned_session:
        return Hit(f"{ex} carries Mcp-Session-Id {sent!r}; the server assigned {s.assigned_session!r}")


@rule("protocol-version-header-missing", group="transport", severity="warning", on=["exchange"], layer="mcp",
      ref=f'{HTTP} §Protocol Version Header: "the client MUST include the MCP-Protocol-Version: '
          '<protocol-version> HTTP header on all subsequent requests to the MCP server" (2025-06-18 on); '
          '2026-07-28: MUST be on every POST',
      summary="MCP-Protocol-Version header absent on a request after initialize (2025-06-18 and later)")
def protocol_version_header_missing(ex, s):
    if not _streamable(s) or ex.row["protocol_version"] is not None:
        return None
    if s.revision in VERSION_HEADER_REVISIONS and _after_handshake(ex, s):
        return Hit(f"{ex} has no MCP-Protocol-Version header (the session negotiated {s.revision})")
    if s.revision in STATELESS_REVISIONS and ex.method == "POST" and REQUEST in ex.kinds:
        return Hit(f"{ex} has no MCP-Protocol-Version header ({s.revision} requires it on every POST)")


@rule("protocol-version-header-mismatch", group="transport", severity="error", on=["exchange"], layer="mcp",
      ref=f'{HTTP} §Protocol Version Header: the header names the negotiated version; 2026-07-28: it "MUST match" '
          'the request\'s _meta protocol version (else 400, HeaderMismatch -32020)',
      summary="MCP-Protocol-Version header differs from the negotiated revision (2025-06-18 and later)")
def protocol_version_header_mismatch(ex, s):
    sent = ex.row["protocol_version"]
    if not _streamable(s) or sent is None:
        return None
    if s.revision in VERSION_HEADER_REVISIONS and _after_handshake(ex, s) and sent != s.revision:
        return Hit(f"{ex} says MCP-Protocol-Version {sent!r}; the session negotiated {s.revision}")
    if s.revision in STATELESS_REVISIONS and isinstance(ex.meta_version, str) and sent != ex.meta_version:
        return Hit(f"{ex} says MCP-Protocol-Version {sent!r}; its _meta says {ex.meta_version!r}")


@rule("bad-content-type", group="transport", severity="error", on=["exchange"],
      ref=f'{HTTP} §Sending Messages to the Server: "If the input contains any number of JSON-RPC requests, the '
          'server MUST either return Content-Type: text/event-stream, to initiate an SSE stream, or '
          'Content-Type: application/json, to return one JSON object."',
      summary="answer to a POST carrying requests is neither application/json nor text/event-stream")
def bad_content_type(ex, s):
    status = ex.status
    if not _streamable(s) or ex.method != "POST" or REQUEST not in ex.kinds or status is None or not 200 <= status < 300:
        return None
    media = (ex.row["response_type"] or "").split(";")[0].strip().lower()
    if media not in ("application/json", "text/event-stream"):
        return Hit(f"{ex} carried a request and was answered {status} with Content-Type "
                   f"{ex.row['response_type'] or '(none)'}")


@rule("notification-not-accepted", group="transport", severity="warning", on=["exchange"],
      ref=f'{HTTP} §Sending Messages to the Server: "If the input is a JSON-RPC response or notification: If the '
          'server accepts the input, the server MUST return HTTP status code 202 Accepted with no body. If the '
          'server cannot accept the input, it MUST return an HTTP error status code"',
      summary="POST carrying only notifications/responses answered with a status other than 202")
def notification_not_accepted(ex, s):
    if (not _streamable(s) or ex.method != "POST" or not ex.kinds or ex.status is None or ex.status == 202
            or not all(k == "notification" or k in ANSWERS for k in ex.kinds)):
        return None
    return Hit(f"{ex} carried only {' and '.join(sorted(set(ex.kinds)))} and was answered {ex.status}, not 202")


def _request_header(row: dict, name: str) -> str | None:
    try:
        fields = json.loads(row.get("request_headers") or "[]")
    except ValueError:
        return None
    return next((v for n, v in fields if isinstance(n, str) and n.lower() == name and isinstance(v, str)), None)


@rule("dns-rebinding-unprotected", group="transport", severity="warning", on=["exchange"],
      ref=f'{HTTP} §Security Warning: "Servers MUST validate the Origin header on all incoming connections to '
          'prevent DNS rebinding attacks"; "When running locally, servers SHOULD bind only to localhost"',
      summary="a server on loopback answered 2xx to a request carrying a foreign Origin (a web page's), its Host "
              "naming that origin's host or not")
def dns_rebinding_unprotected(ex, s):
    status = ex.status
    if not isinstance(status, int) or not 200 <= status < 300 or not is_loopback(host_name(ex.row["url"])):
        return None
    origin = _request_header(ex.row, "origin")
    if origin is None:
        return None
    host = host_name(origin)
    if is_loopback(host):
        return None
    named = host_name("//" + (_request_header(ex.row, "host") or ""))
    how = (f" and Host {named!r}: the name was rebound to this loopback address" if named == host
           else ": a web page on that origin can reach this local server")
    return Hit(f"{ex} carried Origin {origin!r} and was answered {status}{how} (DNS rebinding)")
