"""What each MCP revision allows, as lookup tables (docs/mcp-reference.md sections 5 and 10).

Method, direction and kind come from `mcp_types.methods` (the SDK's own per-version maps) and
revisions from `mcp_types.version`; this module only reshapes them into sets keyed by
(revision, direction) and adds what mcp-types leaves out on purpose (the experimental
2025-11-25 tasks methods, which the spec's unions do contain).

Importing mcp-types builds its pydantic models (a quarter of a second, on every command), so
what is read from it is kept in a cache file per installed mcp-types version (`_from_mcp_types`)."""

from __future__ import annotations

import json
import os
from functools import lru_cache

_CACHE_FORMAT = 1  # bump when _from_mcp_types reads something else


def installed_version(module: str) -> str | None:
    """The installed version of the distribution of a top-level `module` (mcp_types, pydantic),
    from its dist-info folder's name beside the package (importlib.metadata costs more to import
    than the rest of a quick command), else from importlib.metadata; None when it is not installed."""
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    parent = os.path.dirname(list(spec.submodule_search_locations)[0])
    try:
        found = {name[len(module) + 1:-len(".dist-info")] for name in os.listdir(parent)
                 if name.startswith(module + "-") and name.endswith(".dist-info")}
    except OSError:
        found = set()
    if len(found) == 1:
        return found.pop()
    from importlib import metadata

    try:
        return metadata.version(module.replace("_", "-"))
    except metadata.PackageNotFoundError:  # pragma: no cover - a source checkout without it installed
        return None


def write_cache(path: str, text: str) -> None:
    """Write a cache file whole or not at all (a reader sees the old one, the new one or none);
    a cache that cannot be written is only not kept."""
    import tempfile

    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".mcptap-")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError:
        pass


def _from_mcp_types() -> dict:
    """The method maps of `mcp_types.methods` as (method, first revision) pairs, and the revision
    lists of `mcp_types.version`: from the cache for this mcp-types version when there is one."""
    version = installed_version("mcp_types")
    folder = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mcptap")
    path = os.path.join(folder, f"mcp-types-{version}-{_CACHE_FORMAT}.json")
    if version is not None:
        try:
            with open(path, encoding="utf-8") as fh:
                return json.load(fh)
        except (OSError, ValueError):
            pass
    from mcp_types import methods
    from mcp_types import version as versions

    tables = {name: [list(pair) for pair in getattr(methods, name)]
              for name in ("CLIENT_REQUESTS", "CLIENT_NOTIFICATIONS", "SERVER_REQUESTS", "SERVER_NOTIFICATIONS")}
    tables.update({name: list(getattr(versions, name))
                   for name in ("HANDSHAKE_PROTOCOL_VERSIONS", "KNOWN_PROTOCOL_VERSIONS", "MODERN_PROTOCOL_VERSIONS")})
    if version is not None:
        write_cache(path, json.dumps(tables))
    return tables


_TABLES = _from_mcp_types()
HANDSHAKE_PROTOCOL_VERSIONS = tuple(_TABLES["HANDSHAKE_PROTOCOL_VERSIONS"])
KNOWN_PROTOCOL_VERSIONS = tuple(_TABLES["KNOWN_PROTOCOL_VERSIONS"])
MODERN_PROTOCOL_VERSIONS = tuple(_TABLES["MODERN_PROTOCOL_VERSIONS"])

C2S, S2C = "c2s", "s2c"
OTHER = {C2S: S2C, S2C: C2S}

KNOWN_REVISIONS: tuple[str, ...] = KNOWN_PROTOCOL_VERSIONS
HANDSHAKE_REVISIONS: frozenset[str] = frozenset(HANDSHAKE_PROTOCOL_VERSIONS)
STATELESS_REVISIONS: frozenset[str] = frozenset(MODERN_PROTOCOL_VERSIONS)
BATCH_REVISIONS = frozenset({"2025-03-26"})
"""Revisions that permit JSON-RPC batches (2025-03-26 "MUST support receiving"; removed 2025-06-18)."""

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
MODERN_REQUIRED_META = (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES)
_MODERN_REQUIRED = frozenset(MODERN_REQUIRED_META)
"""2026-07-28: fields every request's params._meta must carry (S/2026-07-28/basic/index §_meta)."""

RESULT_TYPES = frozenset({"complete", "input_required"})
"""2026-07-28 `resultType` values (S/2026-07-28/basic/index §ResultType)."""

ABSENT = object()
"""A member that is not there (where null would be a value)."""


def missing_meta(meta: dict | None) -> list[str]:
    """The 2026-07-28 per-request `_meta` fields a request's params._meta lacks."""
    if type(meta) is not dict:
        return list(MODERN_REQUIRED_META)
    if meta.keys() >= _MODERN_REQUIRED:  # the common case, told without building a list
        return []
    return [key for key in MODERN_REQUIRED_META if key not in meta]


def bad_result_type(result_type: object) -> bool:
    """A `resultType` that is present but not a known value (ABSENT: not present)."""
    return result_type is not ABSENT and not (type(result_type) is str and result_type in RESULT_TYPES)

# 2025-11-25 tasks (experimental): in both ClientRequest and ServerRequest and both notification
# unions of T/2025-11-25 (docs/mcp-reference.md 5.2); mcp-types leaves them out deliberately.
_TASK_REQUESTS = ("tasks/get", "tasks/result", "tasks/list", "tasks/cancel")
_TASK_NOTIFICATIONS = ("notifications/tasks/status",)


def _by_revision(*maps_and_extras) -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {rev: set() for rev in KNOWN_REVISIONS}
    for source in maps_and_extras:
        for method, rev in source:
            table.setdefault(rev, set()).add(method)
    return {rev: frozenset(names) for rev, names in table.items()}


_TASKS_2025 = [(m, "2025-11-25") for m in _TASK_REQUESTS]
_TASK_NOTES_2025 = [(m, "2025-11-25") for m in _TASK_NOTIFICATIONS]

REQUESTS: dict[tuple[str, str], frozenset[str]] = {}
NOTIFICATIONS: dict[tuple[str, str], frozenset[str]] = {}
for _direction, _requests, _notes in (
    (C2S, _by_revision(_TABLES["CLIENT_REQUESTS"], _TASKS_2025),
     _by_revision(_TABLES["CLIENT_NOTIFICATIONS"], _TASK_NOTES_2025)),
    (S2C, _by_revision(_TABLES["SERVER_REQUESTS"], _TASKS_2025),
     _by_revision(_TABLES["SERVER_NOTIFICATIONS"], _TASK_NOTES_2025)),
):
    for _rev in KNOWN_REVISIONS:
        REQUESTS[(_rev, _direction)] = _requests[_rev]
        NOTIFICATIONS[(_rev, _direction)] = _notes[_rev]


# -- extensions (2026-07-28 docs/extensions/overview.mdx): the official extensions' methods, by
# (revision, direction), each naming the extension that defines it. Such a method is known (classified,
# paired) where the extension was negotiated: the client's `extensions` capability (per request in
# `_meta`, or at initialize) and the server's (server/discover's or initialize's capabilities).
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""SEP-2663, modelcontextprotocol/ext-tasks specification/draft/tasks.md: tasks moved out of the core."""
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
"""The skills SEP draft of modelcontextprotocol/experimental-ext-skills (`skill://` URIs)."""
KNOWN_EXTENSIONS = frozenset({TASKS_EXTENSION, SKILLS_EXTENSION})
EXTENSIONS_FROM = "2026-07-28"
"""The first revision with the `extensions` capability and these extensions."""
_EXTENSION_REQUESTS = {C2S: {"tasks/get": TASKS_EXTENSION, "tasks/update": TASKS_EXTENSION,
                             "tasks/cancel": TASKS_EXTENSION, "skills/list": SKILLS_EXTENSION,
                             "skills/get": SKILLS_EXTENSION, "resources/directory/read": SKILLS_EXTENSION},
                       S2C: {}}
_EXTENSION_NOTIFICATIONS = {C2S: {}, S2C: {"notifications/tasks": TASKS_EXTENSION}}
EXTENSION_REQUESTS: dict[tuple[str, str], dict[str, str]] = {}
EXTENSION_NOTIFICATIONS: dict[tuple[str, str], dict[str, str]] = {}
for _rev in KNOWN_REVISIONS:
    for _direction in (C2S, S2C):
        _on = _rev >= EXTENSIONS_FROM
        EXTENSION_REQUESTS[(_rev, _direction)] = dict(_EXTENSION_REQUESTS[_direction]) if _on else {}
        EXTENSION_NOTIFICATIONS[(_rev, _direction)] = dict(_EXTENSION_NOTIFICATIONS[_direction]) if _on else {}
EXTENSION_SETTINGS = {"resources/directory/read": (SKILLS_EXTENSION, "directoryRead")}
"""A method an extension defines only where the server's settings for it set a flag true (skills:
"clients MUST NOT call resources/directory/read against a server that has not declared directoryRead: true")."""
EXTENSION_RESULT_TYPES = {"task": TASKS_EXTENSION}
"""`resultType` values an extension adds (tasks: a CreateTaskResult answering tools/call)."""


def extension_of(revision: str | None, direction: str, method: str, is_request: bool) -> str | None:
    """The official extension that defines `method` sent this way as this kind in this revision."""
    table = EXTENSION_REQUESTS if is_request else EXTENSION_NOTIFICATIONS
    found = table.get((revision, direction))
    return found.get(method) if found else None


def extensions_declared(capabilities: object) -> dict:
    """The `extensions` member of a capabilities object (client or server), {} when absent."""
    found = capabilities.get("extensions") if type(capabilities) is dict else None
    return found if type(found) is dict else {}


# -- deprecated features (S/2026-07-28 deprecated.mdx, the registry): what a session uses of them is
# `info`, from the revision they were deprecated in.
DEPRECATED_FEATURES: dict[str, tuple[str, str, str]] = {
    "Roots": ("2026-07-28", "SEP-2577", "pass directories or files via tool parameters, resource URIs, or server "
                                        "configuration"),
    "Sampling": ("2026-07-28", "SEP-2577", "integrate directly with LLM provider APIs"),
    "Logging": ("2026-07-28", "SEP-2577", "log to stderr for stdio transports; use OpenTelemetry for observability"),
    "the HTTP+SSE transport": ("2025-03-26", "SEP-2596", "Streamable HTTP"),
}
"""Feature -> (deprecated in, the SEP, the migration path the registry names)."""
DEPRECATED_METHODS: dict[tuple[str, str], str] = {
    ("roots/list", S2C): "Roots", ("notifications/roots/list_changed", C2S): "Roots",
    ("sampling/createMessage", S2C): "Sampling",
    ("logging/setLevel", C2S): "Logging", ("notifications/message", S2C): "Logging",
}
"""(method, direction) -> the deprecated feature it belongs to (a server's request also as an
InputRequiredResult's `inputRequests` entry in 2026-07-28)."""
LEGACY_SSE = "the HTTP+SSE transport"
DEPRECATED = "deprecated:"
"""The prefix of a deprecated feature's name in a session's once-only set, once it reported its use."""


def deprecated(revision: str | None, feature: str) -> bool:
    """Whether `feature` is deprecated in `revision`."""
    return revision_at_least(revision, DEPRECATED_FEATURES[feature][0])


def deprecated_method(revision: str | None, direction: str, method: str) -> str | None:
    """The deprecated feature `method` sent this way belongs to in this revision, or None."""
    feature = DEPRECATED_METHODS.get((method, direction))
    return feature if feature is not None and deprecated(revision, feature) else None


def deprecated_inputs(revision: str | None, result: object) -> list[str]:
    """The deprecated features an InputRequiredResult's `inputRequests` entries ask for."""
    requests = result.get("inputRequests") if type(result) is dict and result.get("resultType") == "input_required" \
        else None
    if type(requests) is not dict:
        return []
    return [f for f in (deprecated_method(revision, S2C, r.get("method")) for r in requests.values()
                        if type(r) is dict and type(r.get("method")) is str) if f is not None]


def is_extension_method(method: str) -> bool:
    """A method namespaced as an extension: its first segment is a dotted (reverse-DNS) name,
    e.g. `io.modelcontextprotocol/tasks/get` or `com.example/reindex`."""
    head, slash, _ = method.partition("/")
    return bool(slash) and "." in head


@lru_cache(maxsize=4096)
def method_verdict(revision: str, direction: str, method: str, is_request: bool) -> str | None:
    """None when the revision allows `method` in this direction as this kind; `extension` when an
    official extension of the revision defines it so (mcptap judges whether it was negotiated); else
    the finding code: unknown-method, wrong-direction, notification-as-request or request-as-notification."""
    if is_request and direction == S2C and revision in STATELESS_REVISIONS:
        return "wrong-direction"  # 2026-07-28: servers MUST NOT send requests, whatever the method
    same, other = (REQUESTS, NOTIFICATIONS) if is_request else (NOTIFICATIONS, REQUESTS)
    if method in same[(revision, direction)]:
        return None
    ext_same, ext_other = ((EXTENSION_REQUESTS, EXTENSION_NOTIFICATIONS) if is_request
                           else (EXTENSION_NOTIFICATIONS, EXTENSION_REQUESTS))
    if method in ext_same[(revision, direction)]:
        return "extension"  # known where its extension was negotiated (extension-not-negotiated)
    if method in same[(revision, OTHER[direction])] or method in ext_same[(revision, OTHER[direction])]:
        return "wrong-direction"
    if (method in other[(revision, direction)] or method in other[(revision, OTHER[direction])]
            or method in ext_other[(revision, direction)] or method in ext_other[(revision, OTHER[direction])]):
        return "notification-as-request" if is_request else "request-as-notification"
    if is_extension_method(method):
        return None
    return "unknown-method"


# -- capabilities (handshake era): which declared capability gates a method ---------------------
# (side that must have declared it, path in its capabilities object, first revision it applies)
# docs/mcp-reference.md 5.1 and 5.2; "present" means the key exists, flags must be true.

CAPABILITY_GATES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "resources/list": ("server", ("resources",), "2024-11-05"),
    "resources/templates/list": ("server", ("resources",), "2024-11-05"),
    "resources/read": ("server", ("resources",), "2024-11-05"),
    "resources/subscribe": ("server", ("resources", "subscribe"), "2024-11-05"),
    "resources/unsubscribe": ("server", ("resources", "subscribe"), "2024-11-05"),
    "notifications/resources/updated": ("server", ("resources", "subscribe"), "2024-11-05"),
    "notifications/resources/list_changed": ("server", ("resources", "listChanged"), "2024-11-05"),
    "prompts/list": ("server", ("prompts",), "2024-11-05"),
    "prompts/get": ("server", ("prompts",), "2024-11-05"),
    "notifications/prompts/list_changed": ("server", ("prompts", "listChanged"), "2024-11-05"),
    "tools/list": ("server", ("tools",), "2024-11-05"),
    "tools/call": ("server", ("tools",), "2024-11-05"),
    "notifications/tools/list_changed": ("server", ("tools", "listChanged"), "2024-11-05"),
    "logging/setLevel": ("server", ("logging",), "2024-11-05"),
    "notifications/message": ("server", ("logging",), "2024-11-05"),
    "completion/complete": ("server", ("completions",), "2025-03-26"),
    "sampling/createMessage": ("client", ("sampling",), "2024-11-05"),
    "roots/list": ("client", ("roots",), "2024-11-05"),
    "notifications/roots/list_changed": ("client", ("roots", "listChanged"), "2024-11-05"),
    "elicitation/create": ("client", ("elicitation",), "2025-06-18"),
}


def gate_missing(method: str, revision: str | None, server_caps: object, client_caps: object
                 ) -> tuple[str, tuple[str, ...]] | None:
    """(side, capability path) when `method` needs a capability its side did not declare at
    initialize; None when the method is not gated in this revision or the capabilities were
    not seen (not negotiated yet, or the handshake was not captured)."""
    gate = CAPABILITY_GATES.get(method)
    if gate is None or not revision_at_least(revision, gate[2]):
        return None
    side, path, _ = gate
    caps = server_caps if side == "server" else client_caps
    if caps is None or declared(caps, path):
        return None
    return side, path


def allowed_downgrade(requested: object, answered: object) -> bool:
    """The server answered an older revision it supports than the client asked for: what the
    lifecycle allows ("Otherwise, the server MUST respond with another protocol version it
    supports"); a client that goes on has accepted it."""
    return (type(requested) is str and type(answered) is str and answered in KNOWN_REVISIONS
            and answered < requested)


def revision_at_least(revision: str | None, minimum: str) -> bool:
    if revision not in KNOWN_REVISIONS:
        return False
    return KNOWN_REVISIONS.index(revision) >= KNOWN_REVISIONS.index(minimum)


def declared(capabilities: object, path: tuple[str, ...]) -> bool:
    """Whether `capabilities` declares `path`: objects by key presence, the last step of a
    longer path (a flag such as `listChanged`) by being true."""
    node = capabilities
    for i, key in enumerate(path):
        if type(node) is not dict or key not in node:
            return False
        node = node[key]
        if i == len(path) - 1 and len(path) > 1:
            return node is True
    return True
