"""The screening stage: ``ChatEvent`` (+ conversation memory) → ``Finding``s. A pure function.

The same function serves ``vigil scan`` and the Faust worker; neither adds logic of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import re2

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
#: alphanumeric tokens with a digit. RE2: linear in the text, like the rules.
_DIGIT_GROUPS = re2.compile(r"\d+(?:[ .\-/]\d+)*")
_TOKEN = re2.compile(r"[A-Za-z0-9][A-Za-z0-9_\-]{7,}")
_GROUP = re2.compile(r"\d+")
#: A repeated value has 6 to 34 digits (phone, BSN, SSN, card, CCCD, IBAN digits) and spans at
#: most this many of the groups a run is made of.
_MIN_DIGITS, _MAX_DIGITS, _MAX_GROUPS = 6, 34, 6


def repeat_candidates(text: str) -> Iterator[tuple[int, int]]:
    """Spans that may repeat a value bare: every window of up to six consecutive digit groups
    of a run (``Genoteerd: 123456782``, ``bel 06 1234 5678 morgen``) with 6 to 34 digits, and
    every token of 8 or more letters, digits, ``_`` and ``-`` with at least one digit."""
    for run in _DIGIT_GROUPS.finditer(text):
        groups = [
            (run.start() + g.start(), run.start() + g.end()) for g in _GROUP.finditer(run.group())
        ]
        for i in range(len(groups)):
            digits = 0
            for j in range(i, min(i + _MAX_GROUPS, len(groups))):
                digits += groups[j][1] - groups[j][0]
                if digits > _MAX_DIGITS:
                    break
                if digits >= _MIN_DIGITS:
                    yield groups[i][0], groups[j][1]
    for tok in _TOKEN.finditer(text):
        value = tok.group()
        if any(ch.isdigit() for ch in value) and not value.isdigit():
            yield tok.start(), tok.end()


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
        if any(a < end and start < b for a, b in taken):
            continue
        value = event.content[start:end]
        hit = memory.lookup(value_hash(value, key), now, limits, event.turn_index)
        if hit is None or hit.rule is None:
            continue
        rule = engine.rules.get(hit.rule)
        if rule is None:  # the rule is no longer loaded
            continue
        taken.append((start, end))
        why = (
            f"repeats a value the user gave at turn {hit.turn} (keyed hash in conversation "
            f"memory), where no pattern of {rule.id} matched"
        )
        out.append(
            _finding(
                event, rule, start, end, mask(value, rule.mask, rule.entity, key), "echo", 1.0, why
            )
        )
    return out


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
