"""The rule engine: linear-time matching of every rule pack against one message.

Matching uses RE2 (google-re2), whose automata run in time linear in the input, so no message can
make a rule backtrack. One ``re2.Set`` holds every pattern and canary; a single pass over the text
tells which patterns match at all, and only those are run again to find their spans. Callers
enforce the size limit before they get here (``ChatEvent`` rejects over-size content).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import re2

from schemas.events import Role
from services.rules.pack import Pattern, Rule, RulePack
from services.rules.prompts import PromptRegistry, words
from services.rules.validators import VALIDATORS

__all__ = ["Match", "RuleEngine"]


@dataclass(frozen=True, slots=True)
class Match:
    """One confirmed match of a rule in a text (code-point offsets)."""

    rule: Rule
    start: int
    end: int
    value: str
    score: float
    explanation: str


@dataclass(frozen=True, slots=True)
class _Matcher:
    rule: Rule
    pattern: Pattern
    regex: re2._Regexp  # type: ignore[name-defined]


def _applies(rule: Rule, role: str, language: str | None) -> bool:
    if role not in rule.roles:
        return False
    return language is None or "*" in rule.languages or language in rule.languages


class RuleEngine:
    """Compiled rule packs plus the prompt registry; :meth:`scan` is a pure function."""

    def __init__(self, packs: Sequence[RulePack], prompts: PromptRegistry | None = None) -> None:
        self.packs = list(packs)
        self.prompts = prompts or PromptRegistry()
        self.rules: dict[str, Rule] = {}
        for pack in self.packs:
            for rule in pack.rules:
                if rule.id in self.rules:
                    raise ValueError(f"duplicate rule id {rule.id!r}")
                self.rules[rule.id] = rule
        self._matchers: list[_Matcher] = []
        self._set = re2.Set.SearchSet(re2.Options())
        for rule in self.rules.values():
            pats = rule.patterns
            if rule.source == "canaries":
                pats = [
                    Pattern(name=f"canary{i}", regex=re2.escape(c), score=1.0)
                    for i, c in enumerate(self.prompts.canaries)
                ]
            for pat in pats:
                self._matchers.append(_Matcher(rule, pat, re2.compile(pat.regex)))
                self._set.Add(pat.regex)
        self._empty = not self._matchers
        if not self._empty:
            self._set.Compile()
        self._overlap_rules = [r for r in self.rules.values() if r.source == "system_prompts"]
        self._shingles = self.prompts.shingles() if self._overlap_rules else {}

    @property
    def rule_ids(self) -> list[str]:
        return list(self.rules)

    def scan(self, text: str, role: Role, language: str | None = None) -> list[Match]:
        """Every confirmed match in ``text`` for a message of ``role`` in ``language``.

        Overlapping matches of the same category are resolved to the best one (highest score, then
        longest, then first rule), so one digit run is not reported as both a phone number and a
        card number.
        """
        found: list[Match] = []
        if not self._empty and text:
            for idx in self._set.Match(text) or ():
                m = self._matchers[idx]
                if _applies(m.rule, role, language):
                    found.extend(self._confirm(m, text))
        for rule in self._overlap_rules:
            if _applies(rule, role, language):
                found.extend(self._overlap(rule, text))
        return _resolve(found)

    def _confirm(self, m: _Matcher, text: str) -> Iterable[Match]:
        rule, pat = m.rule, m.pattern
        validate = VALIDATORS[rule.validator] if rule.validator else None
        for hit in m.regex.finditer(text):
            start, end = hit.span(pat.group)
            if start < 0 or end <= start:
                continue
            value = text[start:end]
            if validate is not None and not validate(value, rule.validator_args):
                continue
            score = pat.score
            why = f"pattern {pat.name}"
            if validate is not None:
                why += f", validator {rule.validator}"
            if rule.context:
                near = _near_context(rule, text, start, end)
                if near:
                    score = min(1.0, score + rule.context_boost)
                    why += f", context word {near!r}"
                elif rule.context_required:
                    continue
            yield Match(rule, start, end, value, round(score, 4), why)

    def _overlap(self, rule: Rule, text: str) -> Iterable[Match]:
        n = self.prompts.min_overlap_words
        toks = words(text)
        i, hits = 0, []
        while i + n <= len(toks):
            key = tuple(w for w, _, _ in toks[i : i + n])
            prompt_id = self._shingles.get(key)
            if prompt_id is None:
                i += 1
                continue
            j = i + n
            while (
                j < len(toks) and tuple(w for w, _, _ in toks[j - n + 1 : j + 1]) in self._shingles
            ):
                j += 1
            start, end = toks[i][1], toks[j - 1][2]
            why = f"{j - i} consecutive words of system prompt {prompt_id!r}"
            hits.append(Match(rule, start, end, text[start:end], 0.9, why))
            i = j
        return hits


def _near_context(rule: Rule, text: str, start: int, end: int) -> str | None:
    w = rule.context_window
    window = text[max(0, start - w) : end + w].lower()
    for word in rule.context:
        if word.lower() in window:
            return word
    return None


def _resolve(found: list[Match]) -> list[Match]:
    if len(found) < 2:
        return found
    ranked = sorted(found, key=lambda m: (-m.score, -(m.end - m.start), m.start))
    kept: list[Match] = []
    for m in ranked:
        if any(
            k.rule.category == m.rule.category and k.start < m.end and m.start < k.end for k in kept
        ):
            continue
        kept.append(m)
    kept.sort(key=lambda m: (m.start, m.end, m.rule.id))
    return kept
