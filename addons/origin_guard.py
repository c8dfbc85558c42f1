"""What `mcptap proxy` checks and sets on each request before it goes upstream (MCP
basic/transports: local servers validate Origin against DNS rebinding; analyzer/origins.py says
which Host and Origin values pass): a foreign Host (421) or Origin (403) is answered by the proxy
itself and never reaches the upstream; an accepted request reaches it under the upstream's own
Host (unless the client's Host already names the upstream) and with the `--upstream` URL's
credentials as `Authorization: Basic` (unless the client sent an Authorization of its own).

Its hook is McpTap's `requestheaders` (one addon in mitmproxy, addons/http_tap.py), which records
a refused exchange without frames and every exchange with the headers the client sent (never the
credentials added here)."""

from __future__ import annotations

import base64
from urllib.parse import unquote, urlsplit

from mitmproxy import http

from analyzer.origins import ListenerPolicy, host_of

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
    `authorization`: an Authorization value for every upstream request that has none."""

    def __init__(self, policy: ListenerPolicy, upstream: str, authorization: bytes | None = None) -> None:
        parts = urlsplit(upstream)
        self.policy = policy
        self.upstream_host = parts.netloc  # what an upstream that checks Host expects
        self.upstream_name = host_of(parts.netloc)[0]
        self.upstream_port = parts.port or (443 if parts.scheme == "https" else 80)
        self.authorization = authorization

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        req = flow.request
        headers = req.headers
        hosts = [req.host_header or ""] if req.is_http2 or req.is_http3 else headers.get_all("host")
        refusal = self.policy.check(hosts, headers.get_all("origin"))
        if refusal is not None:
            flow.metadata[REFUSED] = refusal.outcome
            req.stream = False  # an answer made here is sent once the body is read (mitmproxy refuses both)
            flow.response = http.Response.make(refusal.status, refusal.body, {"Content-Type": "application/json"})
            return
        flow.metadata[CLIENT_HEADERS] = headers.fields
        if not self._names_upstream(hosts[0]):
            req.host_header = self.upstream_host
        if self.authorization is not None and "authorization" not in headers:
            headers["Authorization"] = self.authorization.decode()

    def _names_upstream(self, host: str) -> bool:
        """The client's Host is the upstream's own name (a port left out: its port); such a Host
        reaches the upstream as the client sent it (mitmproxy's `keep_host_header`)."""
        parsed = host_of(host)
        return parsed is not None and parsed[0] == self.upstream_name and parsed[1] in (None, self.upstream_port)
