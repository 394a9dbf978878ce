"""The screening stage: ``ChatEvent`` (+ conversation memory) → ``Finding``s. A pure function.

The same function serves ``vigil scan`` and the Faust worker; neither adds logic of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas.events import ChatEvent
from schemas.outputs import Direction, Finding
from services.rules.engine import Match, RuleEngine
from services.rules.masking import mask
from services.rules.pack import Rule
from services.screening.memory import ConversationMemory, MemoryLimits, value_hash

__all__ = ["VALUE_CATEGORIES", "Screened", "Screener", "screen"]

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
    return Finding(
        finding_id=f"{event.event_id}:{rule.id}:{start}-{end}",
        event_id=event.event_id,
        conversation_id=event.conversation_id,
        turn_index=event.turn_index,
        timestamp=event.timestamp,
        role=event.role,
        tenant=event.tenant,
        language=event.language,
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
    turn index or before) or ``leak`` (they did not). Evidence is masked with the rule's
    strategy. ``memory`` is not mutated; the new one is returned.
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
