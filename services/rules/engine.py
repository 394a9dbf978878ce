"""The rule engine: linear-time matching of every rule pack against one message.

Matching uses RE2 (google-re2), whose automata run in time linear in the input, so no message can
make a rule backtrack. One ``re2.Set`` holds every pattern and canary; a single pass over the text
tells which patterns match at all, and only those are run again to find their spans. Callers
enforce the size limit before they get here (``ChatEvent`` rejects over-size content).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import re2

from schemas.events import Role
from services.rules.pack import Pattern, Rule, RulePack
from services.rules.prompts import PromptRegistry, word_list, words
from services.rules.re2search import Search, searcher
from services.rules.validators import DEFAULT_PHONE_REGIONS, VALIDATORS

__all__ = ["CONFIGURED_REGIONS", "Match", "RuleEngine", "with_phone_regions"]

#: ``validator_args: {regions: configured}``: the configured phone regions that no rule of its
#: own covers (``pii.phone_national``).
CONFIGURED_REGIONS = "configured"


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
    search: Search
    group: int  # index of the value group (a group name is resolved once, here)
    #: The rule's context words, each with its lower-case form (the needle searched for).
    context: tuple[tuple[str, str], ...]
    #: The candidate's score without and with a context word (rounded once, here).
    score: float
    boosted: float

    @classmethod
    def of(cls, rule: Rule, pattern: Pattern) -> _Matcher:
        regex = re2.compile(pattern.regex)
        group = regex.groupindex[pattern.group] if isinstance(pattern.group, str) else pattern.group
        return cls(
            rule,
            pattern,
            searcher(regex),
            group,
            tuple((word, word.lower()) for word in rule.context),
            round(pattern.score, 4),
            round(min(1.0, pattern.score + rule.context_boost), 4),
        )


def _applies(rule: Rule, role: str, language: str | None) -> bool:
    if role not in rule.roles:
        return False
    return language is None or "*" in rule.languages or language in rule.languages


def with_phone_regions(rules: Sequence[Rule], regions: Iterable[str]) -> list[Rule]:
    """The rules that apply with national phone numbers of ``regions`` (``VIGIL_PHONE_REGIONS``).

    A ``phone`` rule that names its regions (``pii.phone_nl``: ``[NL]``) stays when one of them
    is configured and is dropped otherwise; a rule with ``regions: configured`` gets the
    configured regions that no such rule covers, and is dropped when none is left. Other rules
    (international numbers, every other entity) are unaffected.
    """
    wanted = set(regions)
    own: set[str] = set()
    kept = []
    for rule in rules:
        named = rule.validator_args.get("regions") if rule.validator == "phone" else None
        if isinstance(named, list):
            if not wanted & set(named):
                continue
            own |= set(named)
        kept.append(rule)
    out = []
    for rule in kept:
        if rule.validator == "phone" and rule.validator_args.get("regions") == CONFIGURED_REGIONS:
            rest = sorted(wanted - own)
            if not rest:
                continue
            args = {**rule.validator_args, "regions": rest}
            rule = rule.model_copy(update={"validator_args": args})
        out.append(rule)
    return out


class RuleEngine:
    """Compiled rule packs plus the prompt registry; :meth:`scan` is a pure function.

    ``phone_regions``: the regions whose national-form phone numbers are found (default NL, VN,
    GB, US; see :func:`with_phone_regions`).
    """

    def __init__(
        self,
        packs: Sequence[RulePack],
        prompts: PromptRegistry | None = None,
        *,
        phone_regions: Iterable[str] = DEFAULT_PHONE_REGIONS,
    ) -> None:
        self.packs = list(packs)
        self.prompts = prompts or PromptRegistry()
        self.phone_regions = tuple(phone_regions)
        self.rules: dict[str, Rule] = {}
        every = [rule for pack in self.packs for rule in pack.rules]
        for rule in with_phone_regions(every, self.phone_regions):
            if rule.id in self.rules:
                raise ValueError(f"duplicate rule id {rule.id!r}")
            self.rules[rule.id] = rule
        self._matchers: list[_Matcher] = []
        # The Set's DFA holds the states of every pattern at once. With RE2's default budget
        # (8 MiB) 64 KiB of random digits and separators makes it reset its state cache again
        # and again: ~4 ms per KiB with the default packs, ~15 µs per KiB with 32 MiB
        # (benchmarks/engine_choice.py). Memory is taken only as states are needed; 64 MiB is
        # faster still on long hostile streams but costs ~20 MiB more RSS (BENCHMARKS.md).
        set_options = re2.Options()
        set_options.max_mem = 32 << 20
        self._set = re2.Set.SearchSet(set_options)
        for rule in self.rules.values():
            pats = rule.patterns
            if rule.source == "canaries":
                pats = [
                    Pattern(name=f"canary{i}", regex=re2.escape(c), score=1.0)
                    for i, c in enumerate(self.prompts.canaries)
                ]
            for pat in pats:
                self._matchers.append(_Matcher.of(rule, pat))
                self._set.Add(pat.regex)
        self._empty = not self._matchers
        if not self._empty:
            self._set.Compile()
        self._overlap_rules = [r for r in self.rules.values() if r.source == "system_prompts"]
        self._shingles = self.prompts.shingles() if self._overlap_rules else {}
        self._vocabulary = frozenset(w for shingle in self._shingles for w in shingle)
        self._run = b"\x01" * self.prompts.min_overlap_words

    @property
    def rule_ids(self) -> list[str]:
        return list(self.rules)

    def scan(self, text: str, role: Role, language: str | None = None) -> list[Match]:
        """Every confirmed match in ``text`` for a message of ``role`` in ``language``.

        Overlapping matches of the same category are resolved to the best one (highest score, then
        longest, then first rule), so one digit run is not reported as both a phone number and a
        card number. Validators run lazily, in that order: a candidate that a better match of its
        category already covers is never validated (the result is the same as validating every
        candidate first; checksum and phone-number validators are the costly part of a scan).
        """
        found: list[_Candidate] = []
        if not self._empty and text:
            # Encoded once for the prefilter and every pattern; lone surrogates pass through
            # (RE2 sees invalid bytes) instead of raising.
            encoded = text.encode("utf-8", "surrogatepass")
            ascii = len(encoded) == len(text)  # then byte offsets are code-point offsets
            for idx in self._set.Match(encoded) or ():
                m = self._matchers[idx]
                if _applies(m.rule, role, language):
                    found.extend(_candidates(m, text, encoded, ascii))
        for rule in self._overlap_rules:
            if _applies(rule, role, language):
                found.extend(
                    _Candidate(h.score, h.start, h.end, rule, None, None, h)
                    for h in self._overlap(rule, text)
                )
        return _resolve(found, text)

    def _overlap(self, rule: Rule, text: str) -> Iterable[Match]:
        n = self.prompts.min_overlap_words
        # A leak is n consecutive words of a registered prompt, so it lies inside a run of at
        # least n words that all occur in some prompt. Finding those runs is one C-level findall
        # and a set lookup per word; the shingle walk (a tuple per position) and the word spans
        # are computed only inside such runs, which ordinary messages rarely contain.
        ws = word_list(text)
        # One byte per word, 1 where the word occurs in some prompt (``map`` and ``bytes`` run
        # in C): most messages have no n such words in a row and are done here.
        if self._run not in bytes(map(self._vocabulary.__contains__, ws)):
            return []
        runs, lo = [], 0
        for i, w in enumerate(ws):
            if w not in self._vocabulary:
                if i - lo >= n:
                    runs.append((lo, i))
                lo = i + 1
        if len(ws) - lo >= n:
            runs.append((lo, len(ws)))
        toks: list[tuple[str, int, int]] | None = None
        hits = []
        for lo, hi in runs:
            i = lo
            while i + n <= hi:
                prompt_id = self._shingles.get(tuple(ws[i : i + n]))
                if prompt_id is None:
                    i += 1
                    continue
                j = i + n
                while j < hi and tuple(ws[j - n + 1 : j + 1]) in self._shingles:
                    j += 1
                if toks is None:
                    toks = words(text)
                start, end = toks[i][1], toks[j - 1][2]
                why = f"{j - i} consecutive words of system prompt {prompt_id!r}"
                hits.append(Match(rule, start, end, text[start:end], 0.9, why))
                i = j
        return hits


_CONTINUATION = bytes(range(0x80, 0xC0))


def _chars(utf8: bytes) -> int:
    """Code points in a UTF-8 slice: the bytes that are not continuation bytes."""
    return len(utf8.translate(None, _CONTINUATION))


def _value_spans(
    search: Search, group: int, encoded: bytes, ascii: bool
) -> Iterator[tuple[int, int]]:
    """Code-point spans of the value group of every match, left to right.

    The next search starts where the previous *value* ended, not where the whole match ended: a
    pattern may consume a boundary character after its value (RE2 has no lookaround), and that
    character must stay available as the leading boundary of the next value (``1.1.1.1,8.8.8.8``).
    The text is searched as UTF-8 bytes encoded once, so each search costs only what it scans;
    byte offsets become code-point offsets incrementally (they are the same in ``ascii`` text).
    """
    pos, size = 0, len(encoded)
    last_byte, last_char = 0, 0
    while pos <= size:
        spans = search(encoded, pos)
        if spans is None:
            return
        b_start, b_end = spans[group]
        if b_start < 0 or b_end <= b_start:
            # The value group took no part: step past this match, by at least one character.
            nxt = max(spans[0][1], pos + 1)
            while nxt < size and (encoded[nxt] & 0xC0) == 0x80:
                nxt += 1
            pos = nxt
            continue
        if ascii:
            yield b_start, b_end
        else:
            start = last_char + _chars(encoded[last_byte:b_start])
            end = start + _chars(encoded[b_start:b_end])
            last_byte, last_char = b_end, end
            yield start, end
        pos = b_end


def _near_context(
    words: tuple[tuple[str, str], ...], w: int, text: str, start: int, end: int
) -> str | None:
    """The first context word found as a whole word within ``w`` (the rule's
    ``context_window``) characters of the value (so ``ip`` does not fire on "zip", nor ``bsn``
    inside a longer token)."""
    window = text[max(0, start - w) : end + w].lower()
    for word, needle in words:
        at = window.find(needle)
        while at >= 0:
            after = at + len(needle)
            head_ok = at == 0 or not (needle[0].isalnum() and window[at - 1].isalnum())
            tail_ok = after == len(window) or not (needle[-1].isalnum() and window[after].isalnum())
            if head_ok and tail_ok:
                return word
            at = window.find(needle, at + 1)
    return None


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A span found by a pattern (or a finished prompt-overlap match), not yet validated."""

    score: float
    start: int
    end: int
    rule: Rule
    matcher: _Matcher | None
    near: str | None
    done: Match | None = None

    def confirm(self, text: str) -> Match | None:
        """Run the rule's validator: the confirmed match, or ``None``."""
        if self.done is not None:
            return self.done
        assert self.matcher is not None
        rule, value = self.rule, text[self.start : self.end]
        why = f"pattern {self.matcher.pattern.name}"
        if rule.validator:
            if not VALIDATORS[rule.validator](value, rule.validator_args):
                return None
            why += f", validator {rule.validator}"
        if self.near:
            why += f", context word {self.near!r}"
        return Match(rule, self.start, self.end, value, self.score, why)


def _candidates(m: _Matcher, text: str, encoded: bytes, ascii: bool) -> Iterator[_Candidate]:
    """The matcher's value spans that pass the context test, scored. The context test (a few
    substring searches) runs before any validator, so a ``context_required`` rule never pays
    for validating a number that has no context word near it."""
    rule, words = m.rule, m.context
    window, required = rule.context_window, rule.context_required
    for start, end in _value_spans(m.search, m.group, encoded, ascii):
        near = _near_context(words, window, text, start, end) if words else None
        if near:
            yield _Candidate(m.boosted, start, end, rule, m, near)
        elif not required:
            yield _Candidate(m.score, start, end, rule, m, None)


def _resolve(found: list[_Candidate], text: str) -> list[Match]:
    """Keep the best of overlapping matches of one category (score, then length, then first),
    validating candidates in that order, and only those no kept match of the category covers.

    The kept spans of a category never overlap one another, so a candidate is checked against its
    two neighbours in a sorted list rather than against every kept match: a hostile message with
    thousands of matches stays cheap.
    """
    ranked = sorted(found, key=lambda c: (-c.score, -(c.end - c.start), c.start, c.rule.id))
    starts: dict[str, list[int]] = {}
    spans: dict[str, list[Match]] = {}
    for c in ranked:
        cat_starts = starts.setdefault(c.rule.category, [])
        cat_spans = spans.setdefault(c.rule.category, [])
        i = bisect_right(cat_starts, c.start)
        if i > 0 and cat_spans[i - 1].end > c.start:
            continue
        if i < len(cat_spans) and cat_spans[i].start < c.end:
            continue
        match = c.confirm(text)
        if match is None:
            continue
        cat_starts.insert(i, c.start)
        cat_spans.insert(i, match)
    kept = [m for cat in spans.values() for m in cat]
    kept.sort(key=lambda m: (m.start, m.end, m.rule.id))
    return kept
