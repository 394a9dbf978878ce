"""Builders shared by the review-queue tests (events, findings, verdicts, flags, actions).

Kept in a ``test_review*`` module so the review tests stay self-contained; the few tests at the
bottom check the builders themselves.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from schemas.events import ChatEvent, Claim
from schemas.outputs import Finding
from schemas.review import LabelInput, ReviewAction, ReviewFlag
from schemas.verdicts import ClaimVerdict, GroundingReport
from services.review.evidence import make_flag
from services.review.policy import TriagePolicy, load_policy

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
POLICY: TriagePolicy = load_policy()

# rule id → (category, entity, severity)
RULES: dict[str, tuple[str, str, str]] = {
    "pii.email": ("pii", "EMAIL_ADDRESS", "medium"),
    "pii.phone_nl": ("pii", "PHONE_NUMBER", "medium"),
    "pii.iban": ("pii", "IBAN_CODE", "high"),
    "pii.ipv4": ("pii", "IP_ADDRESS", "low"),
    "secret.openai_key": ("secret", "OPENAI_API_KEY", "critical"),
    "prompt_leak.canary": ("prompt_leak", "PROMPT_CANARY", "critical"),
    "medical.dose_en": ("medical", "DOSE_STATEMENT", "medium"),
    "grounding.ungrounded_dose": ("medical", "UNGROUNDED_DOSE", "critical"),
    "grounding.fabricated_citation": ("grounding", "FABRICATED_CITATION", "high"),
    "abstention.en": ("abstention", "ABSTENTION", "low"),
}


def at(minutes: float = 0) -> datetime:
    return T0 + timedelta(minutes=minutes)


def event(
    content: str,
    *,
    cid: str = "c1",
    eid: str = "e1",
    turn: int = 0,
    role: str = "assistant",
    tenant: str | None = "t1",
    when: datetime = T0,
) -> ChatEvent:
    return ChatEvent.model_validate_json(
        json.dumps(
            {
                "schema_version": 1,
                "event_id": eid,
                "conversation_id": cid,
                "turn_index": turn,
                "timestamp": when.isoformat(),
                "role": role,
                "content": content,
                "tenant": tenant,
            }
        )
    )


def finding(
    ev: ChatEvent,
    value: str,
    rule_id: str = "pii.email",
    *,
    direction: str | None = None,
    evidence: str | None = None,
    occurrence: int = 0,
) -> Finding:
    """A finding of ``rule_id`` over the ``occurrence``-th ``value`` in the event's content."""
    category, entity, severity = RULES[rule_id]
    start = -1
    for _ in range(occurrence + 1):
        start = ev.content.index(value, start + 1)
    end = start + len(value)
    if direction is None:
        value_category = category in {"pii", "secret", "prompt_leak"}
        direction = "input" if ev.role != "assistant" else ("leak" if value_category else "output")
    if evidence is None:
        evidence = f"[{entity}]" if category in {"pii", "secret", "prompt_leak"} else value
    return Finding(
        finding_id=f"{ev.event_id}:{rule_id}:{start}-{end}",
        event_id=ev.event_id,
        conversation_id=ev.conversation_id,
        turn_index=ev.turn_index,
        timestamp=ev.timestamp,
        role=ev.role,
        tenant=ev.tenant,
        rule_id=rule_id,
        category=category,  # type: ignore[arg-type]
        entity=entity,
        severity=severity,  # type: ignore[arg-type]
        start=start,
        end=end,
        evidence=evidence,
        direction=direction,  # type: ignore[arg-type]
        score=0.9,
        explanation="test",
    )


def verdict(
    ev: ChatEvent, *, status: str = "contradicted", faithfulness: float = 1.0
) -> GroundingReport:
    return GroundingReport(
        event_id=ev.event_id,
        conversation_id=ev.conversation_id,
        turn_index=ev.turn_index,
        timestamp=ev.timestamp,
        tenant=ev.tenant,
        stratum="always",
        inclusion_probability=1.0,
        faithfulness=faithfulness,
        claims=[],
        ungrounded=[],
        fabricated_citations=[],
        unsupported_citations=[],
        fact_checks=[
            ClaimVerdict(
                claim=Claim(entity="amoxicillin", attribute="max_daily_dose", value="9 g"),
                status=status,  # type: ignore[arg-type]
                sources=["pil-amoxicillin-en-01"],
                origin="event",
            )
        ],
    )


def leak_flag(
    cid: str = "c1",
    eid: str = "e1",
    *,
    minutes: float = 0,
    tenant: str | None = "t1",
    email: str = "bob@example.com",
    policy: TriagePolicy = POLICY,
) -> ReviewFlag:
    """An assistant turn leaking an e-mail address: reason ``pii_leak`` (priority 90)."""
    ev = event(f"Write to {email} today.", cid=cid, eid=eid, tenant=tenant, when=at(minutes))
    flag = make_flag(ev, [finding(ev, email)], None, policy, at=at(minutes))
    assert flag is not None
    return flag


def action(
    kind: str,
    reviewer: str = "ann",
    *,
    cid: str = "c1",
    minutes: float = 0,
    item_id: str | None = None,
    action_id: str = "a1",
    **extra: Any,
) -> ReviewAction:
    if kind == "label" and "label" not in extra:
        extra["label"] = LabelInput(harm_severity="none")
    if kind == "reveal" and "purpose" not in extra:
        extra["purpose"] = "checking whether the leak is real"
    return ReviewAction(
        action_id=action_id,
        kind=kind,  # type: ignore[arg-type]
        conversation_id=cid,
        item_id=item_id,
        reviewer=reviewer,
        at=at(minutes),
        **extra,
    )


def test_finding_builder_points_at_the_value() -> None:
    ev = event("mail a@b.nl or a@b.nl")
    f = finding(ev, "a@b.nl", occurrence=1)
    assert ev.content[f.start : f.end] == "a@b.nl" and f.start == 15


def test_leak_flag_has_the_pii_leak_reason() -> None:
    flag = leak_flag()
    assert [r.code for r in flag.reasons] == ["pii_leak"] and flag.priority == 90
