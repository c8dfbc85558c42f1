"""Which rules run for which facts, for one revision (analyzer/analysis/rules)."""

from __future__ import annotations

from mcptap.analysis import rules
from mcptap.analysis.classify import Signature, by_key
from mcptap.analysis.rules import Hit, Rule


class _Dispatch:
    """Which rules run for which facts, for one revision (computed once per revision; the
    lists for each combination of facts are cached, so a frame costs a dictionary lookup)."""

    _cache: dict[str | None, "_Dispatch"] = {}

    def __init__(self, revision: str | None):
        registry = rules.load()
        active = [r for r in registry.values() if r.layer == "jsonrpc" or revision is not None]
        self.revision = revision
        self.end = [r for r in active if "end" in r.on]
        self._frame = [r for r in active if "frame" in r.on]
        self._envelope_rules = [r for r in active if "envelope" in r.on]
        self._by_event = {e: [r for r in active if e in r.on] for e in ("request", "notification", "response")}
        self.exchange = [r for r in active if "exchange" in r.on]
        self._envelope: dict[Signature, list[tuple[Rule, Hit]]] = {}
        self._lists: dict[tuple, list[Rule]] = {}
        self.clean: dict[tuple, tuple[Signature, str] | bool] = {}  # shape key -> (sig, kind), False: a rule looks

    @classmethod
    def for_revision(cls, revision: str | None) -> "_Dispatch":
        dispatch = cls._cache.get(revision)
        if dispatch is None:
            dispatch = cls._cache[revision] = cls(revision)
        return dispatch

    def clean_shape(self, key: tuple) -> tuple[Signature, str] | bool:
        """(signature, kind) of an envelope shape no envelope rule has anything to say about;
        False when one has."""
        sig, kind = by_key(key)
        found = self.clean[key] = (sig, kind) if not self.envelope(sig) else False
        return found

    def envelope(self, sig: Signature) -> list[tuple[Rule, Hit]]:
        found = self._envelope.get(sig)
        if found is None:
            found = []
            for rule in self._envelope_rules:
                result = rule.check(sig)
                if result is not None:
                    found.append((rule, result if isinstance(result, Hit) else Hit(result)))
            self._envelope[sig] = found
        return found

    def rules(self, event: str, facts: tuple[str, ...]) -> list[Rule]:
        key = (event, facts)
        found = self._lists.get(key)
        if found is None:
            found = self._lists[key] = _subscribed(self._by_event[event], facts)
        return found

    def frame_rules(self, tags: tuple[str, ...]) -> list[Rule]:
        key = ("frame", tags)
        found = self._lists.get(key)
        if found is None:
            found = self._lists[key] = _subscribed(self._frame, tags)
        return found


def _subscribed(candidates: list[Rule], facts: tuple[str, ...]) -> list[Rule]:
    """The rules that subscribe to any of `facts` (worked out once per combination of facts)."""
    assert set(facts) <= rules.FACTS.keys(), f"facts {set(facts) - rules.FACTS.keys()} are not declared"
    return [r for r in candidates if any(f in r.when for f in facts)]
