"""The optional parts of mcptap, by the extra that installs them (pyproject.toml): a command that
needs a missing one says in one line which to install (an MCPTapError: exit 2).

The plain install records stdio, imports frame logs, analyzes, shows, exports, redacts, replays
and serves, and writes SARIF and JSON; `mcptap[proxy]` adds mitmproxy (the proxy, the addon,
capture import), `mcptap[notebook]` pandas and matplotlib (the HTML report, the pandas API and
figures), `mcptap[all]` both; `mcptap[view]` Starlette, uvicorn and pandas (`mcptap view`)."""

from __future__ import annotations

import importlib

from mcptap.errors import MCPTapError

EXTRAS = {"proxy": ("mitmproxy",), "notebook": ("pandas", "numpy", "matplotlib"), "parquet": ("pyarrow",),
          "spark": ("pyspark", "pyarrow"), "otel": ("opentelemetry.proto",), "tokens": ("bpe_openai",),
          "schema": ("jsonschema_rs",),
          "view": ("starlette", "uvicorn", "jinja2", "pandas", "prometheus_client"), "mcp": ("mcp",),
          "tui": ("textual",), "metrics": ("prometheus_client",)}
"""The modules each extra installs."""


class MissingExtra(MCPTapError, ImportError):
    """What is asked for needs an extra that is not installed (an ImportError too: `import
    mcptap.data` on a plain install raises it, in one line naming the extra)."""


def need(extra: str, what: str) -> None:
    """Raise MissingExtra unless every module of `extra` imports; `what` names the need."""
    missing = []
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise MissingExtra(f"{what} needs {', '.join(missing)}: pip install 'mcptap[{extra}]'")
