"""What to do with each finding code, apart from detecting it (Zeek's notice policy): silence a
code, or give it another severity. From `--ignore-code CODE`, `--severity CODE=LEVEL`, and the same
in a TOML file (`mcptap.toml` in the working folder, or `--config FILE`):

    [analyze]
    ignore = ["duplicate-key"]
    severity = { "unknown-method" = "error", "batch-used" = "info" }
    context_budget = 20000   # model tokens a server's definitions may take
    call_loop = { calls = 3, seconds = 60 }   # call-loop: the same call this often within so long

and the rule groups to run (`--rules GROUP[,GROUP]`): every code of another group is silenced.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from mcptap.analysis import rules
from mcptap.errors import MCPTapError

DEFAULT_CONFIG = "mcptap.toml"
LEVELS = ("error", "warning", "info")


class PolicyError(MCPTapError):
    """A policy names a code or a level that does not exist."""


@dataclass
class Policy:
    ignore: set[str] = field(default_factory=set)
    overrides: dict[str, str] = field(default_factory=dict)
    baseline: dict | None = None
    """The definitions servers are judged against (`mcptap analyze --baseline`, analyzer/analysis/drift.py)."""
    context_budget: int | None = None
    """Model tokens a server's definitions may take (`context_budget`; None: analyzer/analysis/cost.py's default)."""
    only: frozenset[str] | None = None
    """The codes of the rule groups selected (`--rules GROUP`); None: every code."""
    call_loop: tuple[int, float] | None = None
    """`call-loop`'s (calls, seconds) (`call_loop`; None: 3 in 60, analyzer/analysis/security/reading.py)."""
    catalogue: dict | None = None
    """{session id: {tool name: the other servers declaring it}} across the sessions of one analysis
    (analyzer/engine/security.py), for `tool-shadowing`."""

    def severity(self, code: str, severity: str) -> str | None:
        """The severity to report `code` at, or None to drop it."""
        if code in self.ignore or (self.only is not None and code not in self.only):
            return None
        return self.overrides.get(code, severity)


def _check_code(code: str, where: str) -> str:
    if code not in rules.load():
        raise PolicyError(f"{where}: unknown finding code {code!r} (list them with `mcptap analyze --rules`)")
    return code


def _check_level(level: str, where: str) -> str:
    if level not in LEVELS:
        raise PolicyError(f"{where}: severity must be one of {', '.join(LEVELS)}, not {level!r}")
    return level


def build(ignore: Iterable[str] = (), severity: Iterable[str] = (), config: str | None = None,
          groups: Iterable[str] | None = None) -> Policy:
    """The policy from a config file (explicit, else ./mcptap.toml if present) and options, which win.
    `groups`: only the rules of these groups run."""
    policy = Policy()
    if groups is not None:
        wanted = set(groups)
        unknown = wanted - set(rules.GROUPS)
        if unknown:
            raise PolicyError(f"--rules: unknown rule group {sorted(unknown)[0]!r}; groups: {', '.join(rules.GROUPS)}")
        policy.only = frozenset(code for code, r in rules.load().items() if r.group in wanted)
    path = config if config is not None else (DEFAULT_CONFIG if os.path.isfile(DEFAULT_CONFIG) else None)
    if path is not None:
        _load_file(policy, path)
    for code in ignore:
        policy.ignore.add(_check_code(code, "--ignore-code"))
    for item in severity:
        code, sep, level = item.partition("=")
        if not sep:
            raise PolicyError(f"--severity takes CODE=LEVEL, not {item!r}")
        policy.overrides[_check_code(code.strip(), "--severity")] = _check_level(level.strip(), "--severity")
    return policy


def _load_file(policy: Policy, path: str) -> None:
    import tomllib  # here: only a policy file is TOML

    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise PolicyError(f"cannot read {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(f"{path} is not valid TOML: {exc}") from None
    section = data.get("analyze", {})
    if not isinstance(section, dict):
        raise PolicyError(f"{path}: [analyze] must be a table")
    ignore = section.get("ignore", [])
    if not isinstance(ignore, list) or not all(isinstance(c, str) for c in ignore):
        raise PolicyError(f"{path}: analyze.ignore must be a list of finding codes")
    for code in ignore:
        policy.ignore.add(_check_code(code, path))
    budget = section.get("context_budget")
    if budget is not None:
        if type(budget) is not int or budget < 1:
            raise PolicyError(f"{path}: analyze.context_budget must be a positive number of tokens")
        policy.context_budget = budget
    loop = section.get("call_loop")
    if loop is not None:
        calls, seconds = (loop.get("calls", 3), loop.get("seconds", 60)) if isinstance(loop, dict) else (None, None)
        if type(calls) is not int or calls < 2 or type(seconds) not in (int, float) or not 0 < seconds:
            raise PolicyError(f"{path}: analyze.call_loop must be {{ calls = N (at least 2), seconds = T (above 0) }}")
        policy.call_loop = (calls, float(seconds))
    overrides = section.get("severity", {})
    if not isinstance(overrides, dict):
        raise PolicyError(f"{path}: analyze.severity must be a table of CODE = LEVEL")
    for code, level in overrides.items():
        policy.overrides[_check_code(code, path)] = _check_level(str(level), path)
