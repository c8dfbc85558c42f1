"""The library's calls about what servers declare: the baseline document, a baseline file read
back and checked, and what each server costs in a model's context."""

from __future__ import annotations

from collections.abc import Sequence

from mcptap.api.databases import sessions
from mcptap.errors import AnalysisError


def baseline(db: str, servers: Sequence[str] | None = None) -> dict:
    """The baseline document (`mcptap baseline`): the definitions each server declared, keyed by
    server name and version; `servers`: only these (AnalysisError naming one that declared none)."""
    from mcptap.analysis import drift
    from mcptap.engine import declared_pass

    doc = drift.document(declared_pass.declared(db))
    if servers:
        missing = [name for name in servers if name not in doc["servers"]]
        if missing:
            raise AnalysisError(f"no server named {missing[0]!r} declared definitions in {db}"
                                f" (servers: {', '.join(sorted(doc['servers'])) or 'none'})")
        doc["servers"] = {name: doc["servers"][name] for name in servers}
    return doc


def read_baseline(path: str) -> dict:
    """The baseline file at `path`, checked (BaselineError, OutputError: one line)."""
    import json

    from mcptap.analysis import drift
    from mcptap.wire.textsafe import storable_tree

    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except OSError as exc:
        raise drift.BaselineError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, RecursionError):
        raise drift.BaselineError(f"{path} is not JSON: write a baseline with `mcptap baseline`") from None
    return drift.check_document(storable_tree(doc), path)  # a lone surrogate escaped, as the traffic's


def cost(db: str, named: Sequence[str] | None = None, *, results: bool = True) -> dict:
    """What each server and session costs in a model's context (`mcptap cost`): bytes and tokens
    of each definition and, with `results`, of each tool's results; the tokenizer named."""
    from mcptap.engine import declared_pass

    return declared_pass.cost_report(db, sessions(db, named) if named else None, results=results)
