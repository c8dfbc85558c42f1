"""2026-07-28 request headers (MCP 2026-07-28 basic/transports/streamable-http §Request Metadata,
server/tools §x-mcp-header, SEP-2243; docs/findings.md "Transport"): the headers a Streamable HTTP
request mirrors from its body (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-{Name}`, `MCP-Protocol-Version`),
whether the server refused a request whose headers disagree with its body (400, HeaderMismatch
-32020) and refused no other with that code, and the HTTP status each 2026-07-28 error carries.
Exchange rules: they run on HTTP sessions only, once their frames are read, on the POSTs that
carried one request of a 2026-07-28 session."""

from __future__ import annotations

import base64
import binascii
import re

from mcptap.analysis import mcp
from mcptap.analysis.classify import ERROR, REQUEST, RESPONSE
from mcptap.analysis.rules.registry import Hit, rule
from mcptap.wire.jsonwire import NumberText

HTTP = "MCP 2026-07-28 basic/transports/streamable-http"
HEADER_MISMATCH, MISSING_CAPABILITY, UNSUPPORTED_VERSION, METHOD_NOT_FOUND = -32020, -32021, -32022, -32601
INVALID_PARAMS = -32602
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""The requests that carry `Mcp-Name`, and the params member it mirrors."""
STATUS = {METHOD_NOT_FOUND: 404, HEADER_MISMATCH: 400, MISSING_CAPABILITY: 400, UNSUPPORTED_VERSION: 400}
"""The HTTP status a 2026-07-28 error must carry over Streamable HTTP."""
_SENTINEL = re.compile(r"=\?base64\?(.*)\?=", re.DOTALL)
_SAFE = re.compile(r"[\x20-\x7e\t]*")
_DECIMAL = re.compile(r"-?[0-9]+(\.0+)?")


def _judged(ex, s) -> bool:
    """A POST of a 2026-07-28 Streamable HTTP session that carried one request, with its headers stored."""
    return (s.stateless and s.http_flavour == "streamable" and ex.method == "POST" and ex.kinds == (REQUEST,)
            and ex.headers_known and len(ex.methods) == 1 and type(ex.methods[0]) is str)


def decoded(value: str) -> str | None:
    """A header value as the body would say it: the Base64 sentinel `=?base64?…?=` decoded (UTF-8),
    a plain value as it is; None for a value no conforming client sends (bad Base64 or UTF-8,
    characters outside visible ASCII, space and tab, or leading or trailing whitespace)."""
    found = _SENTINEL.fullmatch(value)
    if found is None:
        return value if _SAFE.fullmatch(value) and value == value.strip() else None
    try:
        return base64.b64decode(found.group(1), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def _rendered(value) -> str | None:
    """A body value as its header carries it (string as is, integer in decimal, boolean lower case)."""
    if value is True or value is False:
        return "true" if value else "false"
    if type(value) is str:
        return value
    if type(value) is int:
        return str(value)
    if type(value) is float:
        return str(value)
    if type(value) is NumberText:
        return value.text
    return None


def _same(header: str, value, kind) -> bool:
    text = _rendered(value)
    if text is None:
        return False
    if kind == "integer" and type(value) is not bool and _DECIMAL.fullmatch(header) and _DECIMAL.fullmatch(text):
        return int(header.split(".")[0]) == int(text.split(".")[0])
    return header == text


def _at(arguments, path: tuple[str, ...]):
    node = arguments
    for key in path:
        if type(node) is not dict:
            return None
        node = node.get(key)
    return node


def _one(ex, name: str) -> str | None:
    values = ex.header(name)
    return values[0] if len(values) == 1 else (", ".join(values) if values else None)


def problems(ex, s) -> tuple[list[tuple[str, str]], bool]:
    """(what is wrong with the request's mirrored headers, as (code, message), and whether the
    `Mcp-Param-{Name}` headers could be judged at all: not for a tools/call of a tool no listing
    in the recording annotated, unless listings were seen and none annotates any tool). Worked out once per exchange."""
    memo = ex.memo.get("headers")
    if memo is not None:
        return memo
    found: list[tuple[str, str]] = []
    method = ex.methods[0]
    sent = _one(ex, "mcp-method")
    if sent is None:
        found.append(("mcp-method-header-missing", f"{ex} carries {method} without an Mcp-Method header"))
    elif sent != method:
        found.append(("mcp-method-header-mismatch", f"{ex} says Mcp-Method {sent!r}; its body's method is {method!r}"))
    params = ex.params or {}
    member = NAMED.get(method)
    if member is not None:
        body = params.get(member)
        sent = _one(ex, "mcp-name")
        if sent is None:
            found.append(("mcp-name-header-missing", f"{ex} carries {method} without an Mcp-Name header"))
        elif decoded(sent) != body:
            said = "" if decoded(sent) in (None, sent) else f" (decoded {decoded(sent)!r})"
            found.append(("mcp-name-header-mismatch", f"{ex} says Mcp-Name {sent!r}{said}; its body's "
                                                      f"params.{member} is {body!r}"))
    judged = True
    if method == "tools/call":
        tool = params.get("name")
        annotated = s.param_headers.get(tool) if type(tool) is str else None
        if annotated is None:  # a tool no listing annotated: known only if listings were seen and none annotates
            judged = s.tools_listed and not s.param_headers
        else:
            found += _param_problems(ex, tool, annotated, params.get("arguments"))
    version = _one(ex, "mcp-protocol-version")
    if version is not None and isinstance(ex.meta_version, str) and version != ex.meta_version:
        found.append(("protocol-version-header-mismatch", f"{ex} says MCP-Protocol-Version {version!r}; "
                                                          f"its _meta says {ex.meta_version!r}"))
    ex.memo["headers"] = found, judged
    return found, judged


def _param_problems(ex, tool: str, annotated: dict, arguments) -> list[tuple[str, str]]:
    found = []
    for path, (token, kind) in annotated.items():
        name = f"Mcp-Param-{token}"
        value = _at(arguments, path)
        sent = _one(ex, name.lower())
        where = ".".join(path)
        if value is None:
            if sent is not None:
                found.append(("mcp-param-header-mismatch", f"{ex} carries {name} {sent!r}, but tool {tool!r} got no "
                                                           f"{where} argument (the header must be omitted)"))
        elif sent is None:
            found.append(("mcp-param-header-missing", f"{ex} calls tool {tool!r} with {where}={value!r} but carries "
                                                      f"no {name} header (its inputSchema marks it x-mcp-header)"))
        else:
            text = decoded(sent)
            if text is None or not _same(text, value, kind):
                found.append(("mcp-param-header-mismatch", f"{ex} says {name} {sent!r}; tool {tool!r}'s argument "
                                                           f"{where} is {value!r}"))
    return found


def _header_rule(code: str, severity: str, ref: str, summary: str):
    @rule(code, group="transport", severity=severity, on=["exchange"], layer="mcp", ref=ref, summary=summary)
    def check(ex, s):
        if not _judged(ex, s):
            return None
        said = [m for c, m in problems(ex, s)[0] if c == code]
        return Hit("; ".join(said)) if said else None

    return check


_REQUIRED = (f'{HTTP} §Standard Request Headers: "Mcp-Method | method | All requests", "Mcp-Name | params.name or '
             'params.uri | tools/call, resources/read, prompts/get requests"; "These headers are REQUIRED for '
             'compliance."')
_HEADER_ENCODING = ('§Value Encoding: "servers MUST decode an encoded Mcp-Name or Mcp-Param-{Name} value before '
                    'comparing it to the corresponding request body value"')
_PARAM = (f'{HTTP} §Custom Headers from Tool Parameters: "When a server\'s tool definition includes x-mcp-header '
          'annotations, conforming clients MUST mirror the designated parameter values into HTTP headers"; '
          '"Parameter value is null | Client MUST omit the header"; "Parameter not in arguments | Client MUST omit '
          'the header"')
_header_rule("mcp-method-header-missing", "error", _REQUIRED,
             "a 2026-07-28 request POSTed without the Mcp-Method header")
_header_rule("mcp-method-header-mismatch", "error", f'{_REQUIRED} §Server Validation: servers "MUST reject requests '
             'where the values specified in the headers do not match the corresponding values in the request body"',
             "a 2026-07-28 request whose Mcp-Method header differs from its body's method")
_header_rule("mcp-name-header-missing", "error", _REQUIRED,
             "a 2026-07-28 tools/call, resources/read or prompts/get POSTed without the Mcp-Name header")
_header_rule("mcp-name-header-mismatch", "error", f"{_REQUIRED} {_HEADER_ENCODING}",
             "a 2026-07-28 request whose Mcp-Name header (Base64 sentinel decoded) differs from params.name or "
             "params.uri")
_header_rule("mcp-param-header-missing", "error", _PARAM,
             "a 2026-07-28 tools/call without the Mcp-Param-{Name} header of an argument the tool marks x-mcp-header")
_header_rule("mcp-param-header-mismatch", "error", f"{_PARAM} {_HEADER_ENCODING}",
             "a 2026-07-28 tools/call whose Mcp-Param-{Name} header differs from its argument (Base64 sentinel "
             "decoded), or is sent for an argument that is absent or null")

_VALIDATION = (f'{HTTP} §Server Validation: "Servers that process the request body MUST reject requests where the '
               'values specified in the headers do not match the corresponding values in the request body"; "When '
               'rejecting a request due to header validation failure, servers MUST return HTTP status 400 Bad Request '
               'and MUST include a JSON-RPC error response using the following error code: -32020 HeaderMismatch"')


@rule("header-mismatch-accepted", group="transport", severity="error", on=["exchange"], layer="mcp", ref=_VALIDATION,
      summary="a server served a 2026-07-28 request whose headers are missing or disagree with its body, instead of "
              "refusing it 400 with HeaderMismatch -32020")
def header_mismatch_accepted(ex, s):
    if not _judged(ex, s) or not isinstance(ex.status, int) or not 200 <= ex.status < 300:
        return None
    if ex.answer is None or ex.answer[1] == HEADER_MISMATCH:
        return None
    found = problems(ex, s)[0]
    if not found:
        return None
    kind, code = ex.answer
    how = "a result" if kind == RESPONSE else f"error {code}"
    first = next(message for _code, message in found)
    return Hit(f"{ex} was answered {ex.status} with {how}, though its headers disagree with its body ({first}"
               f"{'' if len(found) == 1 else f', and {len(found) - 1} more'}): it must be refused 400 with "
               "HeaderMismatch -32020")


@rule("header-mismatch-false", group="transport", severity="error", on=["exchange"], layer="mcp", ref=_VALIDATION,
      summary="a server refused with HeaderMismatch -32020 a 2026-07-28 request whose headers all match its body")
def header_mismatch_false(ex, s):
    if not _judged(ex, s) or ex.answer is None or ex.answer[1] != HEADER_MISMATCH:
        return None
    if _one(ex, "mcp-protocol-version") is None:
        return None  # a missing version header is reason enough
    found, judged = problems(ex, s)
    if found or not judged:
        return None
    return Hit(f"{ex} was refused with HeaderMismatch -32020, though Mcp-Method, Mcp-Name, MCP-Protocol-Version and "
               "every Mcp-Param header match its body")


@rule("error-http-status", group="transport", severity="error", on=["exchange"], layer="mcp",
      ref=f'{HTTP} §Protocol Version Header: "If the server does not implement the requested RPC method, it MUST '
          'respond with 404 Not Found and a JSON-RPC error with code -32601"; schema: HeaderMismatchError, '
          'MissingRequiredClientCapabilityError, UnsupportedProtocolVersionError: "For HTTP, the response status code '
          'MUST be 400 Bad Request"; basic/index §Request Metadata: "A request missing any required field is malformed; '
          'the server MUST reject it with JSON-RPC error code -32602 (Invalid params). On HTTP, the response status MUST '
          'be 400 Bad Request."',
      summary="a 2026-07-28 error over Streamable HTTP with another status than its own (-32601: 404; -32020, -32021, "
              "-32022, and -32602 to a request missing a required _meta field: 400)")
def error_http_status(ex, s):
    if (not s.stateless or s.http_flavour != "streamable" or ex.method != "POST" or ex.answer is None
            or ex.answer[0] != ERROR or not isinstance(ex.status, int)):
        return None
    code = ex.answer[1]
    wanted = STATUS.get(code) if type(code) is int else None
    if code == INVALID_PARAMS and ex.kinds == (REQUEST,) and mcp.missing_meta((ex.params or {}).get("_meta")):
        wanted = 400  # the request lacks a required _meta field: malformed
    if wanted is None or ex.status == wanted:
        return None
    return Hit(f"{ex} was answered with error {code} and HTTP status {ex.status}; that error is sent with {wanted}")
