"""Which `Host` and `Origin` a local HTTP listener answers (MCP basic/transports: "Servers MUST
validate the Origin header on all incoming connections to prevent DNS rebinding attacks"), checked
as the reference SDKs check them: a Host naming the machine itself (`localhost`, `127.0.0.1`,
`[::1]`, the address listened on; any port), else 421; an Origin of such a host (http or https, any
port), or one allowed by name, else 403; no Origin at all passes (clients that are not browsers
send none). `--allow-origin ORIGIN` widens both (the origin, and its host as a Host); `*` turns
both checks off."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import orjson

from mcptap.errors import MCPTapError

ANY = "*"
LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})  # listening everywhere names no host of its own
DEFAULT_PORTS = {"http": 80, "https": 443}
VERDICTS = 1024  # Host and Origin pairs whose verdict is remembered (then forgotten, all at once)
SERVER_ERROR = -32000  # the JSON-RPC code the TypeScript SDK answers these refusals with


@dataclass(frozen=True)
class Refusal:
    """A request the listener does not answer: its HTTP status and why (`what`: host, origin)."""

    status: int
    what: str
    message: str

    @property
    def body(self) -> bytes:
        """A JSON-RPC error without an id, as the transports page allows with a 403."""
        return orjson.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": SERVER_ERROR, "message": self.message}})

    @property
    def outcome(self) -> str:
        """What an exchange the proxy refused records as its outcome."""
        return f"refused: {self.what} not allowed ({self.status})"


HOST_REFUSED = Refusal(421, "host", "Misdirected Request: this listener does not answer to that Host")
ORIGIN_REFUSED = Refusal(403, "origin", "Forbidden: Origin not allowed")
CONTENT_TYPE_REFUSED = Refusal(415, "content-type", "Unsupported Media Type: Content-Type must be application/json")


def _hostname(name: str) -> str:
    """A host name as compared here: lower case, an IPv6 address without brackets, normalised."""
    name = name.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name


def host_of(authority: str) -> tuple[str, int | None] | None:
    """(host name, port or None) of a `Host` value (`host[:port]`, `[v6][:port]`); None when it is
    not one."""
    authority = authority.strip()
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            return None
        name, rest = authority[1:end], authority[end + 1:]
        if rest and not rest.startswith(":"):
            return None
        port = rest[1:]
    else:
        name, _, port = authority.partition(":")
        if ":" in port:
            return None
    if not name or any(c in name for c in "/@?#\\ \t"):
        return None
    if port and not (port.isascii() and port.isdigit() and int(port) <= 65535):
        return None
    return _hostname(name), int(port) if port else None


def origin_of(value: str) -> tuple[str, str, int | None] | None:
    """(scheme, host name, port or None for the scheme's default) of a serialised origin
    (`scheme://host[:port]`, nothing after it but an optional `/`); None when it is not one
    (the opaque origin `null` included)."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    if (not parts.scheme or not parts.hostname or parts.username is not None or parts.password is not None
            or parts.path not in ("", "/") or parts.query or parts.fragment or "?" in value or "#" in value):
        return None
    scheme = parts.scheme.lower()
    if port == DEFAULT_PORTS.get(scheme):
        port = None
    return scheme, _hostname(parts.hostname), port


def parse_allowed(values: Iterable[str]) -> tuple[str, ...]:
    """`--allow-origin` values as given, each checked: an origin or `*`."""
    out = []
    for value in values:
        if value.strip() != ANY and origin_of(value) is None:
            raise MCPTapError(f"--allow-origin {value!r}: expected an origin (scheme://host[:port]) or *")
        out.append(value.strip())
    return tuple(out)


class ListenerPolicy:
    """The Host and Origin values a listener on `listen_host` answers; `allowed`: `--allow-origin`
    values; `hosts`: more host names it answers to (a proxy: its upstream's)."""

    def __init__(self, listen_host: str, allowed: Sequence[str] = (), hosts: Iterable[str] = ()) -> None:
        allowed = parse_allowed(allowed)
        self.open = ANY in allowed
        self.origins = frozenset(origin_of(value) for value in allowed if value != ANY)
        local = set(LOCAL_NAMES)
        if _hostname(listen_host) not in WILDCARD_HOSTS:
            local.add(_hostname(listen_host))
        self.local = frozenset(local)
        self.hosts = self.local | {origin[1] for origin in self.origins} | {_hostname(h) for h in hosts}
        self._verdicts: dict[tuple, Refusal | None] = {}

    def check(self, hosts: Sequence[str], origins: Sequence[str]) -> Refusal | None:
        """None when a request with these `Host` values (exactly one is right) and `Origin` values
        (none, or each allowed) is answered, else why not. Verdicts are remembered by value (a
        client sends the same ones every time), a bounded number of them."""
        if self.open:
            return None
        key = (tuple(hosts), tuple(origins))
        try:
            return self._verdicts[key]
        except KeyError:
            pass
        verdict = self._check(hosts, origins)
        if len(self._verdicts) >= VERDICTS:
            self._verdicts.clear()
        self._verdicts[key] = verdict
        return verdict

    def _check(self, hosts: Sequence[str], origins: Sequence[str]) -> Refusal | None:
        if len(hosts) != 1:
            return HOST_REFUSED
        host = host_of(hosts[0])
        if host is None or host[0] not in self.hosts:
            return HOST_REFUSED
        for value in origins:
            if not self.origin_allowed(value):
                return ORIGIN_REFUSED
        return None

    def origin_allowed(self, value: str) -> bool:
        if not value:  # an empty Origin is no Origin (the TypeScript SDK's reading)
            return True
        origin = origin_of(value)
        if origin is None:
            return False
        return origin in self.origins or (origin[0] in DEFAULT_PORTS and origin[1] in self.local)


def is_json(content_type: str | None) -> bool:
    """A POST's Content-Type as the SDKs accept it: `application/json`, parameters allowed."""
    return bool(content_type) and content_type.split(";")[0].strip().lower() == "application/json"


def parse_listen(listen: str | None, default_port: int, *, loopback_only: str | None = None,
                 option: str = "--listen") -> tuple[str, int]:
    """`[HOST:]PORT` (an IPv6 host in brackets) -> (host, port); default 127.0.0.1 and
    `default_port`. `loopback_only`: the command's name, which listens on a loopback address only;
    `option`: the option the value came from, as errors name it."""
    if not listen:
        return "127.0.0.1", default_port
    host, sep, port = listen.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", listen
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise MCPTapError(f"{option} {listen!r}: expected [HOST:]PORT with a port from 0 to 65535")
    if loopback_only is not None:
        try:
            loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise MCPTapError(f"{option} {listen!r}: {loopback_only} listens on a loopback address only "
                              "(127.0.0.1, ::1)")
    return host, int(port)
