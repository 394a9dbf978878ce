"""The review queue as a pure reducer: ``apply(item_or_None, input) -> Transition``.

State is one :class:`~schemas.review.ReviewItem` per conversation (``None``: no item). Inputs are
a :class:`~schemas.review.ReviewFlag` (flagged or observed turn), a reviewer's
:class:`~schemas.review.ReviewAction` (claim, release, label, reveal) or a :class:`Tick` (time
passes). Time is always passed in; the same inputs give the same outputs, so the worker, tests
and ``vigil scan`` share this code, and a changelog replay after a crash converges.

Lifecycle of one round (``item_id`` = ``<conversation_id>:<round>``)::

    open ──claim──▶ claimed ──label (by the claimer)──▶ labeled ──correction──▶ labeled
      ▲                │  │                                       (a new label event)
      └─release/lease──┘  └─first label of an item that needs two reviewers──▶ open again
                                          open past expires_at ──▶ expired

Labels are events: every label (and every correction, which names the label it supersedes)
is a :class:`~schemas.review.ReviewLabel` and an entry of the item's bounded history
(``labels``); nothing is overwritten. An item at or above the policy's
``second_review_min_priority`` needs a second reviewer, who must be someone else; where the
current labels of two reviewers differ, the item lists the fields (``disagreement``). An item
can be assigned to a reviewer (for ``assignment_hours``): then only they may claim it. A reveal
needs the reviewer's own claim and a stated purpose; it is logged as a
:class:`~schemas.review.RevealEvent`.

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
from functools import cache
from typing import Literal

from schemas.review import (
    RevealEvent,
    ReviewAction,
    ReviewFlag,
    ReviewItem,
    ReviewLabel,
    ReviewReason,
    Turn,
)
from services.review.caps import AdmissionDecision
from services.review.label_events import history_update, label_record
from services.review.labels import LabelSchema, load_label_schema
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
    "next_due",
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
    "not_found",
    "stale",
    "claimed",
    "closed",
    "not_claimed",
    "not_claimer",
    "invalid_label",
    "assigned",
    "second_reviewer",
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


@cache
def default_schema() -> LabelSchema:
    """``rules/label-schema.yaml``, loaded once (callers with a configured schema pass it)."""
    return load_label_schema()


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
    until = item.assignment_expires_at
    if until is not None and at >= until:
        item = _bump(item, at, assigned_to=None, assigned_by=None, assignment_expires_at=None)
    return item, lapsed, expired


def next_due(item: ReviewItem, settings: QueueSettings = DEFAULT_SETTINGS) -> datetime | None:
    """The first moment at which a :class:`Tick` changes ``item`` (``None``: never): its lease
    lapses, it expires open, its assignment ends, or, finished, it is purged. Before it, a tick
    leaves the item as it is (:func:`_normalize` and the purge in :func:`apply`)."""
    dues = []
    if item.status == "claimed" and item.lease_expires_at is not None:
        dues.append(item.lease_expires_at)
    if item.status in ACTIVE:
        dues.append(item.expires_at)  # a lapsed lease reopens it: then it can expire
    if item.assignment_expires_at is not None:
        dues.append(item.assignment_expires_at)
    if item.status in TERMINAL:
        dues.append(item.updated_at + timedelta(hours=settings.retention_hours))
    return min(dues) if dues else None


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
    schema: LabelSchema | None = None,
) -> Transition:
    """Apply one input. ``admission`` is the cap's decision for a flag that opens a round
    (``None``: admitted with probability 1); ``schema`` checks labels (default: the shipped
    ``rules/label-schema.yaml``)."""
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
        t = _action(base, inp, settings, schema or default_schema())
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
        priority = max(item.priority, *(r.priority for r in fresh))
        update |= {
            "reasons": kept,
            "priority": priority,
            "reviews_required": max(item.reviews_required, s.reviews_for(priority)),
            "findings": findings,
            "dropped_reasons": item.dropped_reasons + len(ranked) - len(kept),
            "dropped_findings": item.dropped_findings + len(candidates) - len(findings),
            "seen": [*item.seen, *(r.key for r in fresh)][-s.max_seen :],
        }
        if flag.verdict is not None and all(
            v.event_id != flag.verdict.event_id for v in item.verdicts
        ):
            update["verdicts"] = [*item.verdicts, flag.verdict][-s.max_turns :]
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


def _action(
    base: ReviewItem | None, action: ReviewAction, s: QueueSettings, schema: LabelSchema
) -> Transition:
    if base is None:
        return _reject(base, action, "not_found", "no review item for this conversation")
    if action.item_id is not None and action.item_id != base.item_id:
        return _reject(base, action, "stale", f"the current item is {base.item_id}")
    who, at = action.reviewer, action.at
    applied = action.model_copy(update={"outcome": "applied"})
    if action.kind == "label" and action.label is not None and action.label.corrects is not None:
        return _correct(base, action, applied, s, schema)
    if base.status in TERMINAL:
        hint = "; to correct its label send corrects=" + base.label_id if base.label_id else ""
        return _reject(base, action, "closed", f"the item is {base.status}{hint}")
    mine = base.status == "claimed" and base.claimed_by == who
    if action.kind == "assign":
        return _assign(base, action, applied, s)
    if action.kind == "claim":
        if base.status == "claimed" and not mine:
            until = base.lease_expires_at.isoformat() if base.lease_expires_at else "?"
            return _reject(base, action, "claimed", f"claimed by {base.claimed_by} until {until}")
        if base.assigned_to is not None and base.assigned_to != who:
            return _reject(base, action, "assigned", f"assigned to {base.assigned_to}")
        if base.reviews_required > 1 and any(r.reviewer == who for r in base.labels):
            return _reject(
                base, action, "second_reviewer", "the second review needs another reviewer"
            )
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
    if action.kind == "reveal":
        return _reveal(base, action)
    if action.kind == "release":
        item = _bump(base, at, status="open", claimed_by=None, claimed_at=None)
        item = item.model_copy(update={"lease_expires_at": None})
        return Transition(item, "applied", True, (applied,))
    return _label(base, action, applied, s, schema)


def _assign(
    base: ReviewItem, action: ReviewAction, applied: ReviewAction, s: QueueSettings
) -> Transition:
    """Assign the item (``assignee``) or take the assignment back (``None``). Who may assign
    whom is the API's to decide (roles); the queue records who did it and until when."""
    if action.assignee is None:
        if base.assigned_to is None:
            return Transition(base, "applied", False, (applied,))
        item = _bump(
            base, action.at, assigned_to=None, assigned_by=None, assignment_expires_at=None
        )
        return Transition(item, "applied", True, (applied,))
    if base.status == "claimed" and base.claimed_by not in (None, action.assignee):
        return _reject(base, action, "claimed", f"claimed by {base.claimed_by}; release it first")
    if base.reviews_required > 1 and any(r.reviewer == action.assignee for r in base.labels):
        return _reject(base, action, "second_reviewer", "the second review needs another reviewer")
    hours = min(action.assignment_hours or s.assignment_hours, s.max_assignment_hours)
    item = _bump(
        base,
        action.at,
        assigned_to=action.assignee,
        assigned_by=action.reviewer,
        assignment_expires_at=action.at + timedelta(hours=hours),
    )
    return Transition(item, "applied", True, (applied,))


def _label(
    base: ReviewItem,
    action: ReviewAction,
    applied: ReviewAction,
    s: QueueSettings,
    schema: LabelSchema,
) -> Transition:
    stage = 1 + any(r.stage == 1 for r in base.labels) if base.reviews_required > 1 else 1
    made = label_record(base, action, schema, stage=stage, supersedes=None)
    if isinstance(made, str):
        return _reject(base, action, "invalid_label", made)
    record, label = made
    done = stage >= base.reviews_required
    update: dict[str, object] = {
        **history_update(base, record, s),
        "status": "labeled" if done else "open",
        "lease_expires_at": None,
    }
    if not done:  # back to the queue for the second reviewer
        update |= {
            "claimed_by": None,
            "claimed_at": None,
            "assigned_to": None,
            "assigned_by": None,
            "assignment_expires_at": None,
            "expires_at": max(base.expires_at, action.at + timedelta(hours=s.open_ttl_hours)),
        }
    item = _bump(base, action.at, **update)
    return Transition(item, "applied", True, (applied, label))


def _correct(
    base: ReviewItem,
    action: ReviewAction,
    applied: ReviewAction,
    s: QueueSettings,
    schema: LabelSchema,
) -> Transition:
    """A correction: a new label event superseding the item's latest label. Allowed on a
    labeled item, or between the two reviews, unless someone else holds the claim."""
    assert action.label is not None and action.label.corrects is not None
    if base.label_id is None or not base.labels:
        return _reject(base, action, "not_found", "the item has no label to correct")
    if action.label.corrects != base.label_id:
        return _reject(base, action, "stale", f"the latest label is {base.label_id}")
    if base.status == "expired":
        return _reject(base, action, "closed", "the item is expired")
    if base.status == "claimed" and base.claimed_by != action.reviewer:
        return _reject(base, action, "not_claimer", f"claimed by {base.claimed_by}")
    previous = next(r for r in reversed(base.labels) if r.label_id == base.label_id)
    made = label_record(base, action, schema, stage=previous.stage, supersedes=base.label_id)
    if isinstance(made, str):
        return _reject(base, action, "invalid_label", made)
    record, label = made
    item = _bump(base, action.at, **history_update(base, record, s))
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
        purpose=action.purpose,
    )
    return Transition(base, "applied", False, (event,))
