"""`mcptap cost` as text and JSON (analyzer/analysis/cost.py's figures): per server, then per
session, the instructions and each definition in bytes and tokens, and each tool's results."""

from __future__ import annotations

from typing import IO

from mcptap.report import columns, jsonout
from mcptap.wire.textsafe import printable

KIND_NAMES = (("tools", "tool"), ("prompts", "prompt"), ("resources", "resource"),
              ("resourceTemplates", "resource template"))


def write_json(figures: dict, out: IO[str]) -> None:
    out.write(jsonout.dumps(figures) + "\n")


def _definitions(out: IO[str], defs: dict) -> None:
    rows = []
    if defs["instructions"] is not None:
        m = defs["instructions"]
        rows.append(["instructions", "", str(m["bytes"]), str(m["tokens"]), str(m["tokens"])])
    for kind, label in KIND_NAMES:
        for row in defs.get(kind, ()):
            rows.append([label, printable(row["name"]), str(row["bytes"]), str(row["tokens"]),
                         str(row.get("model_tokens", row["tokens"]))])
    total = defs["total"]
    rows.append(["total", "", str(total["bytes"]), str(total["tokens"]), str(total["model_tokens"])])
    columns.write(out, ("definition", "name", "bytes", "tokens", "model tokens"), rows, right={2, 3, 4})


def _results(out: IO[str], results: list[dict]) -> None:
    if not results:
        return
    out.write("\n")
    rows = [[printable(r["tool"]), str(r["count"]), str(r.get("tokens_p50", "")), str(r["tokens_max"]),
             str(r["bytes_max"])] for r in results]
    columns.write(out, ("tool results", "count", "tokens p50", "tokens max", "bytes max"), rows, right={1, 2, 3, 4})


def write_text(figures: dict, out: IO[str]) -> None:
    """The figures for a reader: the tokenizer first, each server, then each session."""
    label = figures["tokenizer"] + (" (an estimate: pip install 'mcptap[tokens]' for o200k_base)"
                                    if figures["estimate"] else "")
    out.write(f"tokens: {label}; model tokens: tools as name, description and input schema\n")
    for server in figures["servers"]:
        version = f" {server['version']}" if server["version"] else ""
        out.write(f"\nserver {printable(server['server'])}{printable(version)} "
                  f"({server['sessions']} session{'s' if server['sessions'] != 1 else ''})\n")
        _definitions(out, server["definitions"])
        _results(out, server["results"])
    for session in figures["sessions"]:
        out.write(f"\nsession {printable(session['session'])} (server {printable(session['server'])})\n")
        _definitions(out, session["definitions"])
        _results(out, session["results"])
