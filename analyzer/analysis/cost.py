"""What a server costs in a model's context: the bytes and tokens of its instructions, of each
tool, prompt, resource and resource template definition, and of each tool result, from what a
session recorded (analyzer/analysis/declared.py). A definition is measured as compact JSON
(UTF-8) of the object the server declared, and a tool also as the projection a client sends to a
model (name, description, input schema: the fields a model provider's tool format keeps). Tokens
are o200k_base's (the `bpe-openai` package's offline copy, `mcptap[tokens]`), else an estimate of
one token per 4 bytes, named as such. Definitions and results come normalised
(definitions.normalised): what a bound left out is counted by its mark, its bytes as they were and
its tokens as the estimate. Pure: `Declared` records in, plain dicts out."""

from __future__ import annotations

import math
import warnings
from functools import lru_cache
from collections.abc import Iterable
from typing import Any

import orjson

from mcptap.analysis.declared import KINDS, LEFT_OUT, Declared
from mcptap.analysis.messages import Finding

ESTIMATE = "bytes/4 estimate"
BUDGET_CODE = "context-budget-exceeded"
DEFAULT_BUDGET = 20_000
"""Tokens a server's definitions may take (instructions and every definition, tools as their
model projection) before `context-budget-exceeded`; `[analyze] context_budget` in the policy file."""


COUNTED = 4096
"""Texts whose token counts are kept, at most."""


class Tokenizer:
    """Counts tokens of a text: `name` says which tokenizer, `estimate` whether it is a guess."""

    def __init__(self, name: str, count=None):
        self.name, self._count = name, count
        self.estimate = count is None
        self._counted: dict[str, int] = {}  # the same definitions come back session after session

    def count(self, text: str) -> int:
        if self._count is None:
            return math.ceil(len(text.encode("utf-8", "surrogatepass")) / 4)
        found = self._counted.get(text)
        if found is None:
            if len(self._counted) >= COUNTED:
                self._counted.clear()
            found = self._counted[text] = self._count(text)
        return found


_BYTES = Tokenizer(ESTIMATE)
"""The estimate, for sizes (its tokens unused)."""


@lru_cache(maxsize=1)
def tokenizer() -> Tokenizer:
    """o200k_base when an installed package carries its data (never downloaded), else the
    estimate; built once per process, on the first session that has something to count."""
    count = _o200k_count()
    return Tokenizer(ESTIMATE) if count is None else Tokenizer("o200k_base", count)


def named() -> Tokenizer:
    """The tokenizer `tokenizer()` gives, named without building it (o200k_base where the package
    is installed), to say which one a report with nothing to count would have used; the built
    one if it is."""
    import importlib.util

    if tokenizer.cache_info().currsize:
        return tokenizer()
    try:
        found = importlib.util.find_spec("bpe_openai") is not None
    except (ImportError, ValueError):
        found = False
    return Tokenizer("o200k_base", len) if found else Tokenizer(ESTIMATE)


def _o200k_count():
    """The token count of o200k_base, from bpe-openai's Rust extension alone: importing the
    package decodes the data of three encodings in Python (a third of a second and 70 MB) for
    what counting does not need. Its Python wrapper where the extension cannot be loaded so;
    None without either."""
    import importlib.machinery
    import importlib.util
    import os

    try:
        spec = importlib.util.find_spec("bpe_openai")
        folder = list(spec.submodule_search_locations or ())[0] if spec is not None else None
        names = [n for n in os.listdir(folder) if n.startswith("_bindings.") and
                 n.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))] if folder else []
        if names:
            path = os.path.join(folder, names[0])
            loader = importlib.machinery.ExtensionFileLoader("bpe_openai._bindings", path)
            module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
            loader.exec_module(module)
            backend = module.tokenizer_for_encoding("o200k_base")
            backend.count("ok")
            return lambda text: _counted(backend.count, text)
    except Exception:  # noqa: BLE001 - a build of the package laid out otherwise: its own way, below
        pass
    try:
        with warnings.catch_warnings():  # its data is read with a deprecated importlib.resources call
            warnings.simplefilter("ignore", DeprecationWarning)
            import bpe_openai

            encoding = bpe_openai.get_encoding("o200k_base")
            encoding.encode("ok")
    except Exception:  # not installed, or its data missing: the estimate, labelled
        return None
    return lambda text: len(encoding.encode(text))


def _counted(count, text: str) -> int:
    try:
        return count(text)
    except UnicodeEncodeError:  # a lone surrogate: counted as the wrapper encodes it, replaced
        return count(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))


_BYTES = Tokenizer("bytes", lambda text: len(text.encode("utf-8", "surrogatepass")))
"""A bound no tokenizer's count exceeds: every token is at least one byte of UTF-8."""


def as_text(value: Any) -> str:
    return orjson.dumps(value).decode()


def projection(tool: dict) -> dict:
    """The tool as a client hands it to a model: name, description, input schema."""
    out = {"name": tool.get("name")}
    if tool.get("description") is not None:
        out["description"] = tool["description"]
    out["input_schema"] = tool.get("inputSchema", {})
    return out


def measure(text: str, tok: Tokenizer) -> dict:
    """Bytes and tokens of a normalised text: what it holds, and what its marks stand for."""
    left = [int(m.group(1)) for m in LEFT_OUT.finditer(text)] if "[left out: " in text else []
    return {"bytes": len(text.encode("utf-8", "surrogatepass")) + sum(left),
            "tokens": tok.count(text) + sum(math.ceil(n / 4) for n in left)}


def definitions_cost(declared: Declared, tok: Tokenizer | None = None) -> dict:
    """The instructions and each definition of the session's last listings, and their totals:
    `tokens` (as declared) and `model_tokens` (instructions, tools as their projection, the rest as
    declared: what a client puts in a model's context)."""
    tok = tok or tokenizer()
    out: dict[str, Any] = {"instructions": None}
    total = {"bytes": 0, "tokens": 0, "model_bytes": 0, "model_tokens": 0}
    if declared.instructions is not None:
        m = out["instructions"] = measure(declared.instructions, tok)
        for key in ("bytes", "tokens"):
            total[key] += m[key]
            total[f"model_{key}"] += m[key]
    latest = declared.latest()
    for kind in KINDS:
        rows = []
        for name, item in sorted(latest[kind].items.items()) if kind in latest else ():
            row = {"name": name, **measure(as_text(item), tok)}
            model = measure(as_text(projection(item)), tok) if kind == "tools" else row
            if kind == "tools":
                row["model_bytes"], row["model_tokens"] = model["bytes"], model["tokens"]
            rows.append(row)
            total["bytes"] += row["bytes"]
            total["tokens"] += row["tokens"]
            total["model_bytes"] += model["bytes"]
            total["model_tokens"] += model["tokens"]
        out[kind] = rows
    out["total"] = total
    return out


def results_cost(results: list[tuple[str, int, Any]], tok: Tokenizer | None = None) -> list[dict]:
    """Per tool called: how many results, their bytes (p50, max), and the tokens of the result at
    the byte p50 and of the largest (tokenizing every result of a long recording would take
    longer than its analysis); each result (tool name, frame, result) measured as compact JSON of
    its `content` and `structuredContent`."""
    tok = tok or tokenizer()
    sizes: dict[str, list[tuple[int, str]]] = {}
    for name, _seq, result in results:
        text = as_text({k: result[k] for k in ("content", "structuredContent") if k in result})
        sizes.setdefault(name, []).append((measure(text, _BYTES)["bytes"], text))
    out = []
    for name in sorted(sizes):
        ranked = sorted(sizes[name], key=lambda s: s[0])
        mid, top = median(ranked), ranked[-1]
        out.append({"tool": name, "count": len(ranked), "bytes_p50": mid[0], "bytes_max": top[0],
                    "tokens_p50": measure(mid[1], tok)["tokens"], "tokens_max": measure(top[1], tok)["tokens"]})
    return out


def median(values: list) -> Any:
    """The lower median of sorted values (exact: one of them)."""
    return values[(len(values) - 1) // 2]


def report(sessions: Iterable[tuple[Declared, tuple[str, str]]], tok: Tokenizer | None = None) -> dict:
    """The `cost` member of the JSON report and `mcptap cost --format json`: per server (name,
    version; the definitions of its last session, the results of all its sessions) and per session
    (each with its server's name and version; a session with no definitions and no tool result is
    left out). The tokenizer is built on the first session with something to count: with none,
    it is named (`named`), not built."""
    per_session, last, pooled, count = [], {}, {}, {}
    for declared, server in sessions:
        if not (declared.listings or declared.results or declared.instructions is not None):
            continue  # a session that declared nothing and called no tool costs nothing to show
        tok = tok or tokenizer()
        defs = definitions_cost(declared, tok)
        per_session.append({"session": declared.session_id, "server": server[0], "version": server[1],
                            "definitions": defs, "results": results_cost(declared.results, tok)})
        last[server] = defs
        pooled.setdefault(server, []).extend(declared.results)
        count[server] = count.get(server, 0) + 1
    servers = [{"server": name, "version": version, "sessions": count[(name, version)], "definitions": defs,
                "results": results_cost(pooled[(name, version)], tok)} for (name, version), defs in last.items()]
    tok = tok or named()
    return {"tokenizer": tok.name, "estimate": tok.estimate,
            "measured_as": "compact JSON (UTF-8) of each definition; tools also as their model projection "
                           "(name, description, input_schema); results as their content and structuredContent, "
                           "tokens of the result at the byte p50 and of the largest",
            "servers": servers, "sessions": per_session}


def budget_findings(declared: Declared, server: tuple[str, str], policy=None) -> list[Finding]:
    """`context-budget-exceeded` when the session's definitions take more model tokens than the
    policy's budget (DEFAULT_BUDGET unless it says otherwise)."""
    from mcptap.analysis import rules

    if not declared.listings and declared.instructions is None:
        return []
    budget = getattr(policy, "context_budget", None) or DEFAULT_BUDGET
    if definitions_cost(declared, _BYTES)["total"]["model_tokens"] <= budget:
        return []  # a token is at least a byte: within the budget whatever the tokenizer says, none loaded
    tok = tokenizer()
    rule = rules.load()[BUDGET_CODE]
    hit = rule.check(definitions_cost(declared, tok), {"server": server, "budget": budget, "tokenizer": tok.name})
    if hit is None:
        return []
    severity = rule.severity_for("mcp")
    if policy is not None and (severity := policy.severity(rule.code, severity)) is None:
        return []
    latest = declared.latest()
    seq = latest["tools"].seq if "tools" in latest else (
        declared.listings[-1].seq if declared.listings else declared.instructions_seq)
    return [Finding(declared.session_id, seq, None, rule.code, severity, hit.message, None)]
