"""What `mcptap proxy` checks and sets on each request before it goes upstream (MCP
basic/transports: local servers validate Origin against DNS rebinding; analyzer/origins.py says
which Host and Origin values pass): a foreign Host (421) or Origin (403) is answered by the proxy
itself and never reaches the upstream; an accepted request reaches it under the upstream's own
Host (unless the client's Host already names the upstream) and with the `--upstream` URL's
credentials as `Authorization: Basic` (unless the client sent an Authorization of its own).

Its hook is McpTap's `requestheaders` (one addon in mitmproxy, addons/http/tap.py), which records
a refused exchange without frames and every exchange with the headers the client sent (never the
credentials added here)."""

from __future__ import annotations

import base64
from urllib.parse import unquote, urlsplit

from mitmproxy import http

from mcptap.origins import ListenerPolicy, host_of

REFUSED = "mcptap_refused"  # flow.metadata: the proxy answered the request itself (the exchange's outcome)
CLIENT_HEADERS = "mcptap_client_headers"  # flow.metadata: the header fields as the client sent them


def basic_credentials(url: str) -> bytes | None:
    """`Authorization` for the user and password of an `http://user:pass@host/` URL, else None."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return None
    pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}".encode()
    return b"Basic " + base64.b64encode(pair)


class OriginGuard:
    """`policy`: what the proxy answers; `upstream`: the upstream's origin (scheme://host[:port]);
    `authorization`: an Authorization value for every upstream request that has none.

    On mitmproxy's event loop, once per request: one pass over the raw header fields, the Host
    and Origin verdicts remembered by value (a client sends the same ones every time), and the
    fields rewritten at most once."""

    def __init__(self, policy: ListenerPolicy, upstream: str, authorization: bytes | None = None) -> None:
        parts = urlsplit(upstream)
        self.policy = policy
        self.upstream_host = parts.netloc.encode("idna")  # what an upstream that checks Host expects
        self.upstream_name = host_of(parts.netloc)[0]
        self.upstream_port = parts.port or (443 if parts.scheme == "https" else 80)
        self.authorization = authorization
        self._names_upstream: dict[bytes, bool] = {}

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        req = flow.request
        fields = req.headers.fields
        hosts, origins, authorized = [], [], False
        for name, value in fields:
            lower = name.lower()
            if lower == b"host":
                hosts.append(value)
            elif lower == b"origin":
                origins.append(value)
            elif lower == b"authorization":
                authorized = True
        h2 = req.is_http2 or req.is_http3
        if h2:
            hosts = [req.data.authority or (hosts[0] if hosts else b"")]
        refusal = self.policy.check([_text(v) for v in hosts], [_text(v) for v in origins])
        if refusal is not None:
            flow.metadata[REFUSED] = refusal.outcome
            req.stream = False  # an answer made here is sent once the body is read (mitmproxy refuses both)
            flow.response = http.Response.make(refusal.status, refusal.body, {"Content-Type": "application/json"})
            return
        rehost = not self._names_the_upstream(hosts[0])
        reauth = self.authorization is not None and not authorized
        if not (rehost or reauth):
            return
        flow.metadata[CLIENT_HEADERS] = fields  # what the tap records: the client's, never what is added here
        if h2:
            if rehost:
                req.host_header = self.upstream_host
            fields = req.headers.fields
            rehost = False
        if rehost:
            fields = tuple((name, self.upstream_host) if name.lower() == b"host" else (name, value)
                           for name, value in fields)
        if reauth:
            fields += ((b"Authorization", self.authorization),)
        req.headers.fields = fields

    def _names_the_upstream(self, host: bytes) -> bool:
        """The client's Host is the upstream's own name (a port left out: its port); such a Host
        reaches the upstream as the client sent it (mitmproxy's `keep_host_header`)."""
        known = self._names_upstream.get(host)
        if known is None:
            parsed = host_of(_text(host))
            known = parsed is not None and parsed[0] == self.upstream_name and parsed[1] in (None, self.upstream_port)
            if len(self._names_upstream) < 256:
                self._names_upstream[host] = known
        return known


def _text(value: bytes) -> str:
    """A header value as mitmproxy decodes it."""
    return value.decode("utf-8", "surrogateescape")
