"""Masked turns and flags: what of a chat message the review queue may hold.

:func:`mask_turn` replaces every span a finding of a value category (personal data, secrets,
system-prompt text) matched with that finding's masked evidence, and marks every finding's span
in the result. :func:`make_flag` builds the queue's input from an event, its findings and its
verdict. The matched values themselves are kept apart (``originals``), only for the categories the
policy retains, and only :func:`reveal_turn` puts them back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from schemas.events import ChatEvent
from schemas.outputs import Finding
from schemas.review import Mark, ReviewFlag, Turn
from schemas.verdicts import GroundingReport
from services.review.policy import TriagePolicy
from services.rules.masking import EVIDENCE_MAX_CHARS
from services.screening import VALUE_CATEGORIES

__all__ = ["make_flag", "mask_turn", "reveal_finding", "reveal_turn"]


def _regions(findings: Sequence[Finding], size: int) -> list[tuple[int, int, Finding]]:
    """Non-overlapping value spans, left to right; overlapping spans merge into one region whose
    mask is the evidence of its widest finding."""
    spans = sorted(
        (f for f in findings if f.category in VALUE_CATEGORIES and 0 <= f.start < f.end <= size),
        key=lambda f: (f.start, -f.end),
    )
    out: list[tuple[int, int, Finding]] = []
    for f in spans:
        if out and f.start < out[-1][1]:
            start, end, widest = out[-1]
            if f.end - f.start > widest.end - widest.start:
                widest = f
            out[-1] = (start, max(end, f.end), widest)
        else:
            out.append((f.start, f.end, f))
    return out


def mask_turn(
    event: ChatEvent, findings: Sequence[Finding], *, max_chars: int = 4000
) -> tuple[Turn, dict[str, str]]:
    """The masked turn of ``event`` and ``{finding_id: matched value}`` of its value findings."""
    content = event.content
    own = [f for f in findings if f.event_id == event.event_id]
    regions = _regions(own, len(content))
    pieces: list[str] = []
    shifts: list[tuple[int, int, int, int]] = []  # (old_start, old_end, new_start, new_end)
    cursor = 0
    length = 0
    for start, end, f in regions:
        pieces.append(content[cursor:start])
        length += start - cursor
        pieces.append(f.evidence)
        shifts.append((start, end, length, length + len(f.evidence)))
        length += len(f.evidence)
        cursor = end
    pieces.append(content[cursor:])
    text = "".join(pieces)

    def to_new(offset: int, is_end: bool) -> int:
        delta = 0
        for old_s, old_e, new_s, new_e in shifts:
            if offset <= old_s:
                break
            if offset < old_e or (is_end and offset == old_e):
                return new_e if is_end else new_s
            delta = new_e - old_e
        return offset + delta

    marks: list[Mark] = []
    originals: dict[str, str] = {}
    for f in sorted(own, key=lambda f: (f.start, f.end, f.finding_id)):
        if not 0 <= f.start < f.end <= len(content):
            continue
        start, end = to_new(f.start, False), to_new(f.end, True)
        masked = f.category in VALUE_CATEGORIES
        if masked:
            originals[f.finding_id] = content[f.start : f.end][:EVIDENCE_MAX_CHARS]
        if start < end <= max_chars:
            marks.append(
                Mark(
                    finding_id=f.finding_id,
                    start=start,
                    end=end,
                    rule_id=f.rule_id,
                    category=f.category,
                    entity=f.entity,
                    severity=f.severity,
                    masked=masked,
                )
            )
    truncated = len(text) > max_chars
    turn = Turn(
        event_id=event.event_id,
        turn_index=event.turn_index,
        role=event.role,
        timestamp=event.timestamp,
        text=text[:max_chars],
        truncated=truncated,
        marks=marks,
    )
    return turn, originals


def make_flag(
    event: ChatEvent,
    findings: Sequence[Finding],
    verdict: GroundingReport | None,
    policy: TriagePolicy,
    *,
    at: datetime,
    context: Iterable[Turn] = (),
    observe: bool = False,
    retain_originals: bool = True,
) -> ReviewFlag | None:
    """The queue's input for one event, or ``None`` when the policy gives it no reason.

    Pass *all* findings of the event (screening and claim checks): every value they matched is
    masked in the turn, also the values of findings that give no reason. ``observe=True`` returns
    a reason-less flag too (it adds the turn to an active item of the conversation).
    """
    own = [f for f in findings if f.event_id == event.event_id]
    reasons = policy.reasons(own, verdict)
    if not reasons and not observe:
        return None
    turn, originals = mask_turn(event, own, max_chars=policy.queue.max_turn_chars)
    reasoned = {r.finding_id for r in reasons if r.finding_id}
    keep = set(policy.reveal.retain_categories) if retain_originals else set()
    by_id = {f.finding_id: f for f in own}
    return ReviewFlag(
        conversation_id=event.conversation_id,
        tenant=event.tenant,
        event_id=event.event_id,
        at=at,
        turn=turn,
        context=list(context),
        findings=[f for f in own if f.finding_id in reasoned],
        verdict=verdict if any(r.source == "verdict" for r in reasons) else None,
        reasons=reasons,
        originals={k: v for k, v in originals.items() if by_id[k].category in keep},
    )


def reveal_turn(turn: Turn, originals: dict[str, str]) -> tuple[Turn, list[str]]:
    """``turn`` with the retained values put back; also the finding ids that were revealed."""
    masked = sorted(
        (m for m in turn.marks if m.masked and m.finding_id in originals),
        key=lambda m: (m.start, -len(originals[m.finding_id])),
    )
    pieces: list[str] = []
    marks: list[Mark] = []
    revealed: list[str] = []
    cursor = 0
    shift = 0
    new_pos: dict[str, tuple[int, int]] = {}
    for m in masked:
        if m.start < cursor:  # value marks merged into one region: reveal the widest value
            continue
        value = originals[m.finding_id]
        pieces.append(turn.text[cursor : m.start])
        new_pos[m.finding_id] = (m.start + shift, m.start + shift + len(value))
        pieces.append(value)
        shift += len(value) - (m.end - m.start)
        cursor = m.end
        revealed.append(m.finding_id)
    pieces.append(turn.text[cursor:])
    for m in turn.marks:
        if m.finding_id in new_pos:
            start, end = new_pos[m.finding_id]
        else:
            start = _shifted(m.start, masked, originals, new_pos)
            end = _shifted(m.end, masked, originals, new_pos)
        marks.append(m.model_copy(update={"start": start, "end": end}))
    return turn.model_copy(update={"text": "".join(pieces), "marks": marks}), revealed


def _shifted(
    offset: int, masked: list[Mark], originals: dict[str, str], done: dict[str, tuple[int, int]]
) -> int:
    shift = 0
    for m in masked:
        if m.finding_id not in done or m.end > offset:
            continue
        shift += len(originals[m.finding_id]) - (m.end - m.start)
    return offset + shift


def reveal_finding(finding: Finding, originals: dict[str, str]) -> Finding:
    value = originals.get(finding.finding_id)
    return finding if value is None else finding.model_copy(update={"evidence": value})
