"""Which MCP revision governs a session (docs/mcp-reference.md section 1; section 10 for
2026-07-28): the InitializeResult's protocolVersion in the handshake era, else the per-request
`_meta` protocol version of 2026-07-28, else the HTTP `MCP-Protocol-Version` header (when HTTP
metadata exists), else the user's `--revision`. A quick scan that parses only frames that can
carry a signal, and stops at the first decisive one."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mcptap.analysis import mcp

from mcptap.wire import jsonwire

INITIALIZE, META, HEADER, OPTION, UNKNOWN = "initialize", "meta", "header", "option", "unknown"
_INITIALIZE_MARK = '"initialize"'
_META_MARK = mcp.META_PROTOCOL_VERSION


@dataclass(frozen=True, slots=True)
class Revision:
    revision: str | None  # as the session said it (may be a string no revision has)
    source: str


def _text(raw: str | bytes) -> str | None:
    if type(raw) is str:
        return raw
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return None


def detect(frames: Iterable[tuple], fallback: str | None = None, header: str | None = None) -> Revision:
    """Scan (seq, ts, direction, raw, ...) in order for the session's revision; `header` is the
    `MCP-Protocol-Version` the session's HTTP requests carried, if any.

    An initialize request selects the handshake era even after a 2026-07-28 request: a dual-era
    client may probe with `server/discover` and fall back to initialize when the server answers
    with an error (S/2026-07-28/basic/versioning §Backward Compatibility). A 2026-07-28 request
    that the server answers with a result settles the stateless era at once."""
    init_id = None
    proposed = None
    modern: tuple[str, object] | None = None  # (version, id) of the first request carrying it
    for _seq, _ts, direction, raw, *_ in frames:
        text = _text(raw)
        if text is None:
            continue
        if direction == mcp.C2S:
            if init_id is None and _INITIALIZE_MARK in text:
                value = jsonwire.parse(text).value
                if type(value) is dict and value.get("method") == "initialize" and "id" in value:
                    params = value.get("params")
                    init_id = value["id"]
                    proposed = params.get("protocolVersion") if type(params) is dict else None
                    continue
            if init_id is None and modern is None and _META_MARK in text:
                value = jsonwire.parse(text).value
                params = value.get("params") if type(value) is dict else None
                meta = params.get("_meta") if type(params) is dict else None
                if type(meta) is dict and type(meta.get(_META_MARK)) is str and "id" in value:
                    modern = (meta[_META_MARK], value["id"])
        elif init_id is not None and '"protocolVersion"' in text:
            value = jsonwire.parse(text).value
            if type(value) is dict and "id" in value and _same_id(value["id"], init_id):
                result = value.get("result")
                if type(result) is dict and type(result.get("protocolVersion")) is str:
                    return Revision(result["protocolVersion"], INITIALIZE)
        elif init_id is None and modern is not None and '"result"' in text:
            value = jsonwire.parse(text).value
            if type(value) is dict and "result" in value and "id" in value and _same_id(value["id"], modern[1]):
                return Revision(modern[0], META)  # the server took the 2026-07-28 request
    if init_id is not None and type(proposed) is str:
        return Revision(proposed, INITIALIZE)  # initialize never answered: what the client proposed
    if modern is not None:
        return Revision(modern[0], META)
    if header:
        return Revision(header, HEADER)
    if fallback is not None:
        return Revision(fallback, OPTION)
    return Revision(None, UNKNOWN)


def _same_id(a, b) -> bool:
    return type(a) is type(b) and a == b
