"""The review queue as a pure reducer: ``apply(item_or_None, input) -> Transition``.

State is one :class:`~schemas.review.ReviewItem` per conversation (``None``: no item). Inputs are
a :class:`~schemas.review.ReviewFlag` (flagged or observed turn), a reviewer's
:class:`~schemas.review.ReviewAction` (claim, release, label, reveal) or a :class:`Tick` (time
passes). Time is always passed in; the same inputs give the same outputs, so the worker, tests
and ``vigil scan`` share this code, and a changelog replay after a crash converges.

Lifecycle of one round (``item_id`` = ``<conversation_id>:<round>``)::

    open ──claim──▶ claimed ──label (by the claimer)──▶ labeled
      ▲                │
      └─release/lease──┘            open past expires_at ──▶ expired

Re-delivered and repeated flags never open a second item: every reason has a key (reason code +
finding id, or verdict event id) and the item remembers the keys it has applied (``seen``, kept
across rounds). New reasons merge into an open or claimed item. A flag with *new* reasons for a
labeled or expired item opens the next round: a new ``item_id``, whose ``previous_item_id``
points at the finished one (the finished round lives on in ``vigil.review.labels`` and the
actions log; the table holds the current round only). Opening a round needs admission under
the tenant's cap (see :mod:`services.review.caps`); an overflowed flag leaves the state alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from schemas.review import (
    CorrectedClaim,
    LabeledFinding,
    RevealEvent,
    ReviewAction,
    ReviewFlag,
    ReviewItem,
    ReviewLabel,
    ReviewReason,
    Turn,
)
from services.review.caps import AdmissionDecision
from services.review.policy import QueueSettings, band

__all__ = [
    "ACTIVE",
    "TERMINAL",
    "Outcome",
    "Rejection",
    "RejectionCode",
    "ReviewInput",
    "ReviewRecord",
    "Tick",
    "Transition",
    "apply",
    "opens_round",
]

ACTIVE = frozenset({"open", "claimed"})
TERMINAL = frozenset({"labeled", "expired"})
WITHHELD = "[turn withheld: it was masked with two different sets of findings]"

Outcome = Literal[
    "created",
    "merged",
    "duplicate",
    "ignored",
    "overflowed",
    "applied",
    "rejected",
    "unchanged",
    "purged",
]
RejectionCode = Literal[
    "not_found", "stale", "claimed", "closed", "not_claimed", "not_claimer", "invalid_label"
]


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passes: leases lapse, open items expire, finished items are purged."""

    at: datetime


ReviewInput = ReviewFlag | ReviewAction | Tick
ReviewRecord = ReviewAction | ReviewLabel | RevealEvent


@dataclass(frozen=True, slots=True)
class Rejection:
    code: RejectionCode
    message: str


@dataclass(frozen=True, slots=True)
class Transition:
    """The new state, whether it differs from the old one, and the records to publish.

    ``expired`` is the item as it expired when this transition moved an open item to
    ``expired`` (also lazily, on the way to handling an input); ``lease_lapsed`` is set when it
    took a lapsed lease back.
    """

    item: ReviewItem | None
    outcome: Outcome
    changed: bool = False
    events: tuple[ReviewRecord, ...] = ()
    rejection: Rejection | None = None
    expired: ReviewItem | None = None
    lease_lapsed: bool = False


DEFAULT_SETTINGS = QueueSettings()


def _bump(item: ReviewItem, at: datetime, **update: object) -> ReviewItem:
    updated = max(item.updated_at, at)  # inputs may arrive a little out of order
    return item.model_copy(update={**update, "updated_at": updated, "version": item.version + 1})


def _normalize(
    item: ReviewItem | None, at: datetime
) -> tuple[ReviewItem | None, bool, ReviewItem | None]:
    """Apply the passage of time: a lapsed lease reopens the item, an open item past its
    ``expires_at`` expires. Returns the item, whether a lease lapsed, the expired item if any."""
    if item is None:
        return None, False, None
    lapsed = False
    expired = None
    lease = item.lease_expires_at
    if item.status == "claimed" and lease is not None and at >= lease:
        item = _bump(item, at, status="open", claimed_by=None, claimed_at=None)
        item = item.model_copy(update={"lease_expires_at": None})
        lapsed = True
    if item.status == "open" and at >= item.expires_at:
        item = _bump(item, at, status="expired")
        expired = item
    return item, lapsed, expired


def opens_round(item: ReviewItem | None, flag: ReviewFlag, at: datetime | None = None) -> bool:
    """Whether ``flag`` would open a new item (and so needs admission under the cap)."""
    base, _, _ = _normalize(item, at or flag.at)
    if base is not None and base.status in ACTIVE:
        return False
    seen = set(base.seen) if base else set()
    return any(r.key not in seen for r in flag.reasons)


def apply(
    item: ReviewItem | None,
    inp: ReviewInput,
    settings: QueueSettings = DEFAULT_SETTINGS,
    *,
    admission: AdmissionDecision | None = None,
) -> Transition:
    """Apply one input. ``admission`` is the cap's decision for a flag that opens a round
    (``None``: admitted with probability 1)."""
    at = inp.at
    base, lapsed, expired = _normalize(item, at)
    moved = base is not item
    if isinstance(inp, Tick):
        retained = timedelta(hours=settings.retention_hours)
        if base is not None and base.status in TERMINAL and at >= base.updated_at + retained:
            return Transition(None, "purged", True, expired=expired, lease_lapsed=lapsed)
        return Transition(base, "unchanged", moved, expired=expired, lease_lapsed=lapsed)
    if isinstance(inp, ReviewFlag):
        t = _flag(base, inp, settings, admission)
    else:
        t = _action(base, inp, settings)
    return Transition(
        t.item,
        t.outcome,
        t.changed or moved,
        t.events,
        t.rejection,
        expired=expired,
        lease_lapsed=lapsed,
    )


# --- flags -------------------------------------------------------------------------------------


def _flag(
    base: ReviewItem | None,
    flag: ReviewFlag,
    s: QueueSettings,
    admission: AdmissionDecision | None,
) -> Transition:
    seen = set(base.seen) if base else set()
    fresh: dict[str, ReviewReason] = {}
    for r in flag.reasons:
        if r.key not in seen:
            fresh.setdefault(r.key, r)
    if base is not None and base.status in ACTIVE:
        merged = _merge(base, flag, list(fresh.values()), s)
        if merged is base:
            return Transition(base, "duplicate" if flag.reasons else "ignored")
        return Transition(_bump(merged, flag.at), "merged", True)
    if not fresh:
        return Transition(base, "duplicate" if flag.reasons else "ignored")
    decision = admission or AdmissionDecision("admitted", 1.0, band(flag.priority))
    if decision.outcome == "overflowed":
        return Transition(base, "overflowed")
    round_ = base.round + 1 if base else 1
    empty = ReviewItem(
        item_id=f"{flag.conversation_id}:{round_}",
        conversation_id=flag.conversation_id,
        tenant=flag.tenant,
        round=round_,
        previous_item_id=base.item_id if base else None,
        status="open",
        priority=0,
        admission=decision.outcome,
        inclusion_probability=decision.inclusion_probability,
        reasons=[],
        findings=[],
        seen=list(base.seen) if base else [],
        created_at=flag.at,
        updated_at=flag.at,
        expires_at=flag.at + timedelta(hours=s.open_ttl_hours),
        version=base.version + 1 if base else 1,
    )
    return Transition(_merge(empty, flag, list(fresh.values()), s), "created", True)


def _merge(
    item: ReviewItem, flag: ReviewFlag, fresh: list[ReviewReason], s: QueueSettings
) -> ReviewItem:
    """Merge a flag into an item; returns ``item`` itself when nothing changes."""
    update: dict[str, object] = {}
    if fresh:
        ranked = sorted([*item.reasons, *fresh], key=lambda r: -r.priority)  # stable
        kept = ranked[: s.max_reasons]
        keep_ids = {r.finding_id for r in kept if r.finding_id}
        known = {f.finding_id: f for f in item.findings}
        for f in flag.findings:
            known.setdefault(f.finding_id, f)
        candidates = [f for f in known.values() if f.finding_id in keep_ids]
        findings = candidates[: s.max_findings]
        update |= {
            "reasons": kept,
            "priority": max(item.priority, *(r.priority for r in fresh)),
            "findings": findings,
            "dropped_reasons": item.dropped_reasons + len(ranked) - len(kept),
            "dropped_findings": item.dropped_findings + len(candidates) - len(findings),
            "seen": [*item.seen, *(r.key for r in fresh)][-s.max_seen :],
        }
        if flag.verdict is not None and all(
            v.event_id != flag.verdict.event_id for v in item.verdicts
        ):
            update["verdicts"] = [*item.verdicts, flag.verdict]
    turns, dropped_t = _merge_turns(item.turns, [*flag.context, *filter(None, [flag.turn])], s)
    if turns != item.turns:
        update |= {"turns": turns, "dropped_turns": item.dropped_turns + dropped_t}
    originals = {**flag.originals, **item.originals}
    if originals != item.originals:
        update["originals"] = originals
    return item.model_copy(update=update) if update else item


def _merge_turn(old: Turn, new: Turn) -> Turn:
    if old == new:
        return old
    old_ids = {m.finding_id for m in old.marks}
    new_ids = {m.finding_id for m in new.marks}
    if old_ids >= new_ids:
        return old
    if new_ids > old_ids:
        return new
    # Neither set of findings covers the other: either text may show a value the other masks.
    return old.model_copy(update={"text": WITHHELD, "marks": [], "truncated": False})


def _merge_turns(
    turns: list[Turn], incoming: list[Turn], s: QueueSettings
) -> tuple[list[Turn], int]:
    by_event = {t.event_id: t for t in turns}
    for t in incoming:
        by_event[t.event_id] = _merge_turn(by_event[t.event_id], t) if t.event_id in by_event else t
    ordered = sorted(by_event.values(), key=lambda t: (t.turn_index, t.timestamp, t.event_id))
    dropped = 0
    while len(ordered) > s.max_turns:
        # Drop the oldest turn without highlights first, then the oldest.
        victim = next((t for t in ordered if not t.marks), ordered[0])
        ordered.remove(victim)
        dropped += 1
    return ordered, dropped


# --- reviewer actions --------------------------------------------------------------------------


def _reject(
    base: ReviewItem | None, action: ReviewAction, code: RejectionCode, msg: str
) -> Transition:
    record = action.model_copy(update={"outcome": "rejected", "reason": code})
    return Transition(base, "rejected", False, (record,), Rejection(code, msg))


def _action(base: ReviewItem | None, action: ReviewAction, s: QueueSettings) -> Transition:
    if base is None:
        return _reject(base, action, "not_found", "no review item for this conversation")
    if action.item_id is not None and action.item_id != base.item_id:
        return _reject(base, action, "stale", f"the current item is {base.item_id}")
    if action.kind == "reveal":
        return _reveal(base, action)
    who, at = action.reviewer, action.at
    if base.status in TERMINAL:
        return _reject(base, action, "closed", f"the item is {base.status}")
    mine = base.status == "claimed" and base.claimed_by == who
    applied = action.model_copy(update={"outcome": "applied"})
    if action.kind == "claim":
        if base.status == "claimed" and not mine:
            until = base.lease_expires_at.isoformat() if base.lease_expires_at else "?"
            return _reject(base, action, "claimed", f"claimed by {base.claimed_by} until {until}")
        seconds = min(action.lease_seconds or s.lease_seconds, s.max_lease_seconds)
        item = _bump(
            base,
            at,
            status="claimed",
            claimed_by=who,
            claimed_at=base.claimed_at if mine else at,
            lease_expires_at=at + timedelta(seconds=seconds),
        )
        return Transition(item, "applied", True, (applied,))
    if not mine:
        if base.status == "claimed":
            return _reject(base, action, "not_claimer", f"claimed by {base.claimed_by}")
        return _reject(base, action, "not_claimed", "claim the item first")
    if action.kind == "release":
        item = _bump(base, at, status="open", claimed_by=None, claimed_at=None)
        item = item.model_copy(update={"lease_expires_at": None})
        return Transition(item, "applied", True, (applied,))
    return _label(base, action, applied)


def _label(base: ReviewItem, action: ReviewAction, applied: ReviewAction) -> Transition:
    assert action.label is not None  # guaranteed by ReviewAction's validator
    body = action.label
    findings = {f.finding_id: f for f in base.findings}
    given = [fl.finding_id for fl in body.findings]
    if len(set(given)) != len(given):
        return _reject(base, action, "invalid_label", "a finding is labelled twice")
    if unknown := set(given) - findings.keys():
        return _reject(base, action, "invalid_label", f"{len(unknown)} unknown finding id(s)")
    if missing := findings.keys() - set(given):
        return _reject(base, action, "invalid_label", f"{len(missing)} finding(s) without verdict")
    checks = {v.event_id: v.fact_checks for v in base.verdicts}
    claims: list[CorrectedClaim] = []
    pairs = [(c.event_id, c.index) for c in body.claims]
    if len(set(pairs)) != len(pairs):
        return _reject(base, action, "invalid_label", "a claim is corrected twice")
    for c in body.claims:
        facts = checks.get(c.event_id, [])
        if c.index >= len(facts):
            return _reject(base, action, "invalid_label", "a claim correction names no claim")
        fc = facts[c.index]
        claims.append(
            CorrectedClaim(
                event_id=c.event_id,
                index=c.index,
                entity=fc.claim.entity,
                attribute=fc.claim.attribute,
                value=fc.claim.value,
                sources=fc.sources,
                original=fc.status,
                corrected=c.status,
            )
        )
    label_id = f"{base.item_id}:label"
    verdicts = {fl.finding_id: fl.verdict for fl in body.findings}
    label = ReviewLabel(
        label_id=label_id,
        item_id=base.item_id,
        conversation_id=base.conversation_id,
        tenant=base.tenant,
        round=base.round,
        reviewer=action.reviewer,
        labeled_at=action.at,
        priority=base.priority,
        admission=base.admission,
        inclusion_probability=base.inclusion_probability,
        reasons=base.reasons,
        findings=[
            LabeledFinding(
                finding_id=f.finding_id,
                event_id=f.event_id,
                rule_id=f.rule_id,
                category=f.category,
                entity=f.entity,
                severity=f.severity,
                verdict=verdicts[f.finding_id],
            )
            for f in base.findings
        ],
        claims=claims,
        note=body.note,
        expected_answer=body.expected_answer,
        turns=base.turns,
    )
    item = _bump(
        base,
        action.at,
        status="labeled",
        labeled_by=action.reviewer,
        labeled_at=action.at,
        label_id=label_id,
        lease_expires_at=None,
    )
    return Transition(item, "applied", True, (applied, label))


def _reveal(base: ReviewItem, action: ReviewAction) -> Transition:
    entities = {f.finding_id: f.entity for f in base.findings}
    for turn in base.turns:
        for m in turn.marks:
            entities.setdefault(m.finding_id, m.entity)
    ids = sorted(k for k in base.originals if k in entities)
    event = RevealEvent(
        event_id=action.action_id,
        conversation_id=base.conversation_id,
        item_id=base.item_id,
        reviewer=action.reviewer,
        at=action.at,
        finding_ids=ids,
        entities=sorted({entities[i] for i in ids}),
    )
    return Transition(base, "applied", False, (event,))
