"""Masked turns and flags: what of a chat message the review queue may hold.

:func:`mask_turn` replaces every span a finding of a value category (personal data, secrets,
system-prompt text) matched with that finding's masked evidence, and marks every finding's span
in the result. A message longer than the policy's ``max_turn_chars`` keeps its beginning and a
window of ``context_chars`` around every finding, the parts in between replaced by
``… 23,456 characters …`` (listed in ``Turn.gaps``), so a finding deep in a long answer is still
seen in its context. An answer keeps its retrieved passages (masked with the answer's values,
bounded). :func:`make_flag` builds the queue's input from an event, its findings and its
verdict (bounded too). The matched values themselves are kept apart (``originals``), only for the
categories the policy retains, and only :func:`reveal_turn` puts them back.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from schemas.events import ChatEvent
from schemas.outputs import Finding
from schemas.review import Gap, Mark, ReviewFlag, ReviewPassage, Turn
from schemas.verdicts import GroundingReport
from services.evalsets.masking import mask_values
from services.review.policy import QueueSettings, Reasons, TriagePolicy
from services.rules.masking import EVIDENCE_MAX_CHARS
from services.screening import VALUE_CATEGORIES

__all__ = [
    "ShrinkRounds",
    "bounded_verdict",
    "elision",
    "make_flag",
    "mask_turn",
    "reveal_finding",
    "reveal_turn",
    "shrink_turn",
    "window",
]

_SEVERITY_RANK = {"critical": 0, "high": 1, "medium": 2, "low": 3}
#: How far a window edge moves to reach a space (so words are not cut).
_SNAP = 24


def elision(omitted: int) -> str:
    """The text standing for ``omitted`` characters left out of a long message."""
    return f"\n… {omitted:,} characters …\n"


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _snap(text: str, a: int, b: int, keep: list[tuple[int, int]]) -> tuple[int, int]:
    """Move window edges out to the nearest space (at most ``_SNAP`` characters)."""
    if a > 0:
        space = text.rfind(" ", max(0, a - _SNAP), a)
        a = space + 1 if space >= 0 else a
    if b < len(text):
        space = text.find(" ", b, min(len(text), b + _SNAP))
        b = space if space >= 0 else b
    return a, b


def _kept_spans(text: str, marks: list[Mark], budget: int, context: int) -> list[tuple[int, int]]:
    """The parts of ``text`` to keep: the beginning and a window around every mark, as wide as
    ``budget`` allows (at least ``context`` on each side when that fits, narrower when not);
    when even the marks do not fit, the most severe first."""
    n = len(text)

    def spans(ctx: int) -> list[tuple[int, int]]:
        raw = [(0, min(n, 2 * ctx))]
        raw += [(max(0, m.start - ctx), min(n, m.end + ctx)) for m in marks]
        return _merge([_snap(text, a, b, raw) for a, b in raw])

    def size(kept: list[tuple[int, int]]) -> int:
        return sum(b - a for a, b in kept)

    if size(spans(context)) <= budget:  # widen the windows while they fit
        lo, hi = context, budget
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if size(spans(mid)) <= budget else (lo, mid - 1)
        return spans(lo)
    ctx = context
    while ctx > 0:
        ctx //= 2
        if size(spans(ctx)) <= budget:
            return spans(ctx)
    chosen: list[tuple[int, int]] = []
    used = 0
    for m in sorted(marks, key=lambda m: (_SEVERITY_RANK.get(m.severity, 9), m.start)):
        if used + (m.end - m.start) <= budget:
            chosen.append((m.start, m.end))
            used += m.end - m.start
    return _merge(chosen) or [(0, min(n, budget))]


def window(
    text: str,
    marks: list[Mark],
    *,
    budget: int,
    context: int,
    gaps: Sequence[Gap] = (),
) -> tuple[str, list[Mark], list[Gap], bool]:
    """``text`` shortened to about ``budget`` characters around its marks (see the module
    docstring): the new text, the marks that are kept (offsets moved), the gaps, and whether
    anything was left out.

    ``gaps``: elisions ``text`` already has (a turn shortened again, to fit the state's byte
    ceiling): a marker is kept whole or left out whole, and a new marker counts the characters
    of the original message it stands for (the old markers' counts included)."""
    if len(text) <= budget:
        return text, marks, list(gaps), False
    old = sorted((g.start, g.end, g.omitted) for g in gaps)
    kept: list[tuple[int, int]] = []
    for a, b in _kept_spans(text, marks, budget, context):
        for gs, ge, _ in old:  # never cut an old marker
            a = ge if gs < a < ge else a
            b = gs if gs < b < ge else b
        if a < b:
            kept.append((a, b))

    def omitted(a: int, b: int) -> int:
        inside = [(gs, ge, n) for gs, ge, n in old if a <= gs and ge <= b]
        return b - a - sum(ge - gs for gs, ge, _ in inside) + sum(n for _, _, n in inside)

    pieces: list[str] = []
    out_gaps: list[Gap] = []
    moved: list[tuple[int, int, int]] = []  # (old start, old end, new start)
    length = 0
    cursor = 0
    for a, b in [*kept, (len(text), len(text))]:
        if a > cursor:
            n = omitted(cursor, a)
            marker = elision(n)
            out_gaps.append(Gap(start=length, end=length + len(marker), omitted=n))
            pieces.append(marker)
            length += len(marker)
        if b > a:
            moved.append((a, b, length))
            pieces.append(text[a:b])
            length += b - a
        cursor = max(cursor, b)

    def shifted(start: int, end: int) -> tuple[int, int] | None:
        for a, b, new in moved:
            if a <= start and end <= b:
                return start + new - a, end + new - a
        return None

    out: list[Mark] = []
    for m in marks:
        if (span := shifted(m.start, m.end)) is not None:
            out.append(m.model_copy(update={"start": span[0], "end": span[1]}))
    for gs, ge, n in old:
        if (span := shifted(gs, ge)) is not None:
            out_gaps.append(Gap(start=span[0], end=span[1], omitted=n))
    out_gaps.sort(key=lambda g: g.start)
    return "".join(pieces), out, out_gaps, True


_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class ShrinkRounds:
    """The schedule of the byte ceilings (review items and context in
    :mod:`services.review.bounds`, eval-set cases in :mod:`services.evalsets.bounds`): round
    ``level`` keeps ``STEP ** level`` of every text budget, and the last round, once the
    ``largest`` budget would be under one character, sets them all to zero."""

    largest: int
    #: Each round keeps this share of the previous round's budgets.
    STEP = 0.75

    @property
    def count(self) -> int:
        """Rounds until every budget is zero."""
        return math.ceil(math.log(max(self.largest, 1)) / -math.log(self.STEP)) + 1

    def scaled(self, budget: int, level: int) -> int:
        """``budget`` in round ``level``."""
        return 0 if level >= self.count else int(budget * self.STEP**level)

    def fit(
        self,
        value: _T,
        raw: bytes,
        limit: int,
        shrink: Callable[[_T, int], _T],
        encode: Callable[[_T], bytes],
    ) -> tuple[_T, bytes]:
        """``shrink(value, level)`` round after round while the encoding ``raw`` is over
        ``limit``; the last value and its encoding (over ``limit`` only when the rounds ran
        out)."""
        level = 1
        while len(raw) > limit and level <= self.count:
            value = shrink(value, level)
            raw = encode(value)
            level += 1
        return value, raw


def shrink_turn(turn: Turn, *, budget: int, context: int, passage_chars: int) -> Turn:
    """``turn`` shortened again, to fit the state's byte ceiling: its text to about ``budget``
    characters around its marks (never fewer than the marks themselves: every finding stays in
    view), each passage's text to ``passage_chars`` (its document id stays: a reviewer can still
    name it relevant)."""
    need = sum(m.end - m.start for m in turn.marks)
    text, marks, gaps, cut = window(
        turn.text, list(turn.marks), budget=max(budget, need), context=context, gaps=turn.gaps
    )
    passages = [
        p
        if len(p.text) <= passage_chars
        else p.model_copy(update={"text": p.text[:passage_chars], "truncated": True})
        for p in turn.passages
    ]
    if not cut and passages == turn.passages:
        return turn
    update: dict[str, object] = {"passages": passages}
    if cut:
        update |= {"text": text, "marks": marks, "gaps": gaps, "truncated": True}
    return turn.model_copy(update=update)


def _passages(event: ChatEvent, own: Sequence[Finding], q: QueueSettings) -> list[ReviewPassage]:
    """The answer's retrieved passages, masked with the answer's matched values, bounded."""
    if event.role != "assistant" or not event.retrieval:
        return []
    out = []
    for p in event.retrieval[: q.max_passages]:
        text = mask_values(p.text, event.content, own, VALUE_CATEGORIES)
        out.append(
            ReviewPassage(
                doc_id=p.doc_id,
                text=text[: q.max_passage_chars],
                rank=p.rank,
                score=p.score,
                truncated=len(text) > q.max_passage_chars,
            )
        )
    return out


def bounded_verdict(report: GroundingReport, q: QueueSettings) -> GroundingReport:
    """The verdict as the queue keeps it: at most ``max_verdict_claims`` sentence claims
    (critical, then ungrounded, then the others, each group in answer order), texts cut at
    ``max_claim_chars``; the texts of ``ungrounded`` likewise."""
    cut = q.max_claim_chars

    def short(text: str) -> str:
        return text if len(text) <= cut else text[: cut - 1] + "…"

    order = sorted(
        range(len(report.claims)),
        key=lambda i: (
            report.claims[i].grounded,
            report.claims[i].kind == "other",
            i,
        ),
    )
    keep = sorted(order[: q.max_verdict_claims])
    claims = [report.claims[i] for i in keep]
    if len(claims) == len(report.claims) and all(len(c.text) <= cut for c in claims):
        return report
    return report.model_copy(
        update={
            "claims": [c.model_copy(update={"text": short(c.text)}) for c in claims],
            "ungrounded": [short(t) for t in report.ungrounded[: q.max_verdict_claims]],
        }
    )


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
    event: ChatEvent,
    findings: Sequence[Finding],
    settings: QueueSettings | None = None,
) -> tuple[Turn, dict[str, str]]:
    """The masked turn of ``event`` and ``{finding_id: matched value}`` of its value findings.

    ``settings`` (the policy's ``queue``) bounds the text (``max_turn_chars``, windows of
    ``context_chars``) and the passages."""
    q = settings or QueueSettings()
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
        if start < end:
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
    shown, kept, gaps, truncated = window(
        text, marks, budget=q.max_turn_chars, context=q.context_chars
    )
    turn = Turn(
        event_id=event.event_id,
        turn_index=event.turn_index,
        role=event.role,
        timestamp=event.timestamp,
        text=shown,
        truncated=truncated,
        marks=kept,
        gaps=gaps,
        passages=_passages(event, own, q),
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
    masked: Callable[[], tuple[Turn, dict[str, str]]] | None = None,
    reasons_of: Reasons | None = None,
) -> ReviewFlag | None:
    """The queue's input for one event, or ``None`` when the policy gives it no reason.

    Pass *all* findings of the event (screening and claim checks): every value they matched is
    masked in the turn, also the values of findings that give no reason. ``observe=True`` returns
    a reason-less flag too (it adds the turn to an active item of the conversation).
    ``masked``: gives ``mask_turn`` of this event and findings when a caller needs it too (it is
    called only for a flag); ``reasons_of``: ``policy.reasons`` or a memo of it
    (:class:`~services.review.policy.ReasonIndex`).
    """
    own = [f for f in findings if f.event_id == event.event_id]
    reasons = (reasons_of or policy.reasons)(own, verdict)
    if not reasons and not observe:
        return None
    turn, originals = masked() if masked is not None else mask_turn(event, own, policy.queue)
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
        verdict=bounded_verdict(verdict, policy.queue)
        if verdict is not None and any(r.source == "verdict" for r in reasons)
        else None,
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
    gaps = [
        g.model_copy(
            update={
                "start": _shifted(g.start, masked, originals, new_pos),
                "end": _shifted(g.end, masked, originals, new_pos),
            }
        )
        for g in turn.gaps
    ]
    return turn.model_copy(update={"text": "".join(pieces), "marks": marks, "gaps": gaps}), revealed


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
