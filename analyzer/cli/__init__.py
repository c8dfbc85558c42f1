"""The `mcptap` command line (docs/contract.md, Commands): a thin layer over the library.
Each command parses, calls one library function, and turns the library's MCPTapError into one
line on stderr and exit status 2. The app and what commands share are in common; the commands,
by what they do: capture (demo, record, proxy, addon-path, wrap, unwrap), database (sessions,
show, import, redact), export (export, bundle), analyze (analyze, report, diff), audit (audit), replay (replay, serve),
baseline (baseline, cost); progress draws the long ones' progress on stderr."""

from mcptap.cli import capture, database, export, analyze, replay  # noqa: F401  (each registers its commands, in this order)
from mcptap.cli import audit  # noqa: F401  (audit)
from mcptap.cli import baseline  # noqa: F401  (baseline, cost)
from mcptap.cli import view  # noqa: F401  (view)
from mcptap.cli import mcpface  # noqa: F401  (mcp)
from mcptap.cli import tui  # noqa: F401  (tui)
from mcptap.cli import runs  # noqa: F401  (runs)
from mcptap.cli import helptopic  # noqa: F401  (help)
from mcptap.cli.common import PER_CODE, app

__all__ = ["PER_CODE", "app"]
