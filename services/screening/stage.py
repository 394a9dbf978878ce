"""The screening stage: ``ChatEvent`` (+ conversation memory) → ``Finding``s. A pure function.

The same function serves ``vigil scan`` and the Faust worker; neither adds logic of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from schemas.events import ChatEvent
from schemas.outputs import Direction, Finding
from services.rules.engine import Match, RuleEngine
from services.rules.masking import mask
from services.rules.pack import Rule
from services.screening.memory import ConversationMemory, MemoryLimits, value_hash

__all__ = ["VALUE_CATEGORIES", "Screened", "Screener", "repeat_candidates", "screen"]

#: Categories whose findings carry a personal or secret value, for which leak/echo is decided.
VALUE_CATEGORIES = frozenset({"pii", "secret", "prompt_leak"})


@dataclass(frozen=True, slots=True)
class Screened:
    """What screening one event yields: its findings, the updated memory, and for assistant
    turns whether the answer was an abstention (``None`` for other roles)."""

    findings: list[Finding]
    memory: ConversationMemory | None
    abstained: bool | None


def _direction(event: ChatEvent, match: Match, known: bool) -> Direction:
    if event.role != "assistant":
        return "input"
    if match.rule.category not in VALUE_CATEGORIES:
        return "output"
    return "echo" if known else "leak"


#: Candidate values for a bare repeat: runs of digit groups joined by single separators, and
#: alphanumeric tokens with a digit. Each pattern is one ASCII character class repeated, which the
#: standard library's engine matches without backtracking (each character is examined at most a
#: bounded number of times: linear in the text, as RE2 would be), and whose C-level iteration is
#: several times cheaper than google-re2's Python wrapper, which decodes every match's offsets
#: (it made finding candidates a third of screening a 1 KiB answer). The runs and tokens are
#: put together from these plain matches (:func:`_digit_runs`, :func:`_tokens`); the unit tests
#: check the result against the RE2 patterns that define them, ``\d+(?:[ .\-/]\d+)*`` and
#: ``[A-Za-z0-9][A-Za-z0-9_\-]{7,}``.
_DIGITS = re.compile(r"[0-9]+")
_WORDISH = re.compile(r"[A-Za-z0-9_\-]{8,}")
_RUN_SEPARATORS = frozenset(" .-/")
_DIGIT_CHARS = frozenset("0123456789")
#: A repeated value has 6 to 34 digits (phone, BSN, SSN, card, CCCD, IBAN digits) and spans at
#: most this many of the groups a run is made of.
_MIN_DIGITS, _MAX_DIGITS, _MAX_GROUPS = 6, 34, 6


def _digit_runs(text: str) -> Iterator[list[tuple[int, int]]]:
    r"""The spans of the digit groups of every run, a run being groups of ASCII digits that
    single separators (space, ``.``, ``-``, ``/``) join: what ``\d+(?:[ .\-/]\d+)*`` matches
    (RE2's ``\d`` is ASCII), split into its ``\d+`` groups."""
    run: list[tuple[int, int]] = []
    for m in _DIGITS.finditer(text):
        start, end = m.span()
        if run and start - run[-1][1] == 1 and text[start - 1] in _RUN_SEPARATORS:
            run.append((start, end))
            continue
        if run:
            yield run
        run = [(start, end)]
    if run:
        yield run


def _tokens(text: str) -> Iterator[tuple[int, int]]:
    r"""What ``[A-Za-z0-9][A-Za-z0-9_\-]{7,}`` matches: in every run of those characters, from
    its first letter or digit to its end, when that is 8 characters or more."""
    for m in _WORDISH.finditer(text):
        start, end = m.span()
        value = m.group()
        start += len(value) - len(value.lstrip("_-"))
        if end - start >= 8:
            yield start, end


def repeat_candidates(text: str) -> Iterator[tuple[int, int]]:
    """Spans that may repeat a value bare: every window of up to six consecutive digit groups
    of a run (``Genoteerd: 123456782``, ``bel 06 1234 5678 morgen``) with 6 to 34 digits, and
    every token of 8 or more letters, digits, ``_`` and ``-`` with at least one digit."""
    for groups in _digit_runs(text):
        n = len(groups)
        for i in range(n):
            digits = 0
            first = groups[i][0]
            for j in range(i, min(i + _MAX_GROUPS, n)):
                digits += groups[j][1] - groups[j][0]
                if digits > _MAX_DIGITS:
                    break
                if digits >= _MIN_DIGITS:
                    yield first, groups[j][1]
    for start, end in _tokens(text):
        value = text[start:end]
        if not _DIGIT_CHARS.isdisjoint(value) and not value.isdigit():
            yield start, end


def _bare_repeats(
    event: ChatEvent,
    engine: RuleEngine,
    memory: ConversationMemory,
    found: list[Finding],
    key: bytes,
    limits: MemoryLimits,
    now: float,
) -> list[Finding]:
    """Findings for values of the user's that the assistant repeats where no rule fires: each
    candidate span is hashed and looked up in the memory (keyed hashes only)."""
    taken = sorted((f.start, f.end) for f in found if f.category in VALUE_CATEGORIES)
    out: list[Finding] = []
    for start, end in repeat_candidates(event.content):
        for a, b in taken:  # a loop, not any(): most candidates overlap a finding
            if a < end and start < b:
                break
        else:
            hit = _repeat(event, engine, memory, key, limits, now, start, end)
            if hit is not None:
                taken.append((start, end))
                out.append(hit)
    return out


def _repeat(
    event: ChatEvent,
    engine: RuleEngine,
    memory: ConversationMemory,
    key: bytes,
    limits: MemoryLimits,
    now: float,
    start: int,
    end: int,
) -> Finding | None:
    """The echo finding of the span ``start:end`` when the user gave its value (else ``None``)."""
    value = event.content[start:end]
    hit = memory.lookup(value_hash(value, key), now, limits, event.turn_index)
    if hit is None or hit.rule is None:
        return None
    rule = engine.rules.get(hit.rule)
    if rule is None:  # the rule is no longer loaded
        return None
    why = (
        f"repeats a value the user gave at turn {hit.turn} (keyed hash in conversation "
        f"memory), where no pattern of {rule.id} matched"
    )
    evidence = mask(value, rule.mask, rule.entity, key)
    return _finding(event, rule, start, end, evidence, "echo", 1.0, why)


def _finding(
    event: ChatEvent,
    rule: Rule,
    start: int,
    end: int,
    evidence: str,
    direction: Direction,
    score: float,
    explanation: str,
) -> Finding:
    return Finding.in_event(
        event,
        rule_id=rule.id,
        category=rule.category,
        entity=rule.entity,
        severity=rule.severity,
        start=start,
        end=end,
        evidence=evidence,
        direction=direction,
        score=score,
        explanation=explanation,
    )


def screen(
    event: ChatEvent,
    engine: RuleEngine,
    memory: ConversationMemory | None,
    *,
    key: bytes,
    limits: MemoryLimits | None = None,
) -> Screened:
    """Apply every rule to one event.

    User turns add keyed hashes of their values to the conversation memory, with their turn
    index; assistant turns look their values up to decide ``echo`` (the user gave it at this
    turn index or before) or ``leak`` (they did not), and look up the numbers and tokens no rule
    matched as well: a value of the user's repeated bare is an ``echo`` of the rule that found
    it. Evidence is masked with the rule's strategy. ``memory`` is not mutated; the new one is
    returned.
    """
    limits = limits or MemoryLimits()
    now = event.timestamp.timestamp()
    turn = event.turn_index
    matches = engine.scan(event.content, event.role, event.base_language)
    findings: list[Finding] = []
    new_values: list[tuple[str, str | None]] = []
    for m in matches:
        rule = m.rule
        digest = value_hash(m.value, key, compact=rule.compare == "compact")
        known = memory is not None and memory.knows(digest, now, limits, turn)
        if event.role == "user" and rule.category in VALUE_CATEGORIES:
            new_values.append((digest, rule.id))
        evidence = mask(m.value, rule.mask, rule.entity, key)
        direction = _direction(event, m, known)
        findings.append(
            _finding(event, rule, m.start, m.end, evidence, direction, m.score, m.explanation)
        )
    if event.role == "assistant" and memory is not None and memory.seen:
        repeats = _bare_repeats(event, engine, memory, findings, key, limits, now)
        if repeats:
            findings = sorted([*findings, *repeats], key=lambda f: (f.start, f.end, f.rule_id))
    if new_values:
        memory = (memory or ConversationMemory()).remember(new_values, now, limits, turn)
    abstained: bool | None = None
    if event.role == "assistant":
        if event.abstained is not None:
            abstained = event.abstained
        else:
            abstained = any(f.category == "abstention" for f in findings)
    return Screened(findings, memory, abstained)


class Screener:
    """``screen`` bound to an engine, a key and limits, for callers that screen many events."""

    def __init__(self, engine: RuleEngine, key: bytes, limits: MemoryLimits | None = None) -> None:
        self.engine = engine
        self.key = key
        self.limits = limits or MemoryLimits()

    def __call__(self, event: ChatEvent, memory: ConversationMemory | None) -> Screened:
        return screen(event, self.engine, memory, key=self.key, limits=self.limits)
