"""Review-queue contracts (SPEC §8): queue items, reviewer actions, labels and reveal events.

A :class:`ReviewItem` is the state of one conversation in the queue (value of the compacted topic
``vigil.review``, keyed by conversation id); a :class:`ReviewFlag` is what the screening and
claim-check stages hand to the queue; reviewers' :class:`ReviewAction` records go to
``vigil.review.actions``, :class:`ReviewLabel` records to ``vigil.review.labels``, and every look
at unmasked values is a :class:`RevealEvent`. Text in all of them is masked: matched personal and
secret values are replaced by their masked evidence. Only ``ReviewItem.originals`` holds matched
values, and it is never served without the ``reveal`` role.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints, model_validator

from schemas.events import Role
from schemas.outputs import Category, Finding, Severity
from schemas.verdicts import ClaimStatus, GroundingReport

__all__ = [
    "ActionKind",
    "Admission",
    "ClaimCorrection",
    "CorrectedClaim",
    "FindingLabel",
    "LabelInput",
    "LabelVerdict",
    "LabeledFinding",
    "Mark",
    "ReasonCode",
    "RevealEvent",
    "ReviewAction",
    "ReviewFlag",
    "ReviewItem",
    "ReviewLabel",
    "ReviewReason",
    "ReviewStatus",
    "Turn",
]

ReviewStatus = Literal["open", "claimed", "labeled", "expired"]
LabelVerdict = Literal["true_positive", "false_positive"]
#: How an item got into the queue: under the tenant's cap, exempt from it (priority at or above
#: the policy's ``exempt_priority``), or sampled from the overflow at the policy's rate.
Admission = Literal["admitted", "exempt", "sampled"]
ActionKind = Literal["claim", "release", "label", "reveal"]
ReasonCode = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)]
ReviewerName = Annotated[str, StringConstraints(pattern=r"^[\w.@+-]{1,64}$")]
ShortText = Annotated[str, StringConstraints(max_length=4000)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Mark(_Model):
    """A highlighted span of a turn's (masked) text: where a finding matched."""

    finding_id: str
    start: int = Field(ge=0, description="Offset in the masked text (code points).")
    end: int = Field(ge=0)
    rule_id: str
    category: Category
    entity: str
    severity: Severity
    masked: bool = Field(description="The span is a masked value; a reveal may restore it.")


class Turn(_Model):
    """One message of the conversation as a reviewer sees it: masked and bounded."""

    event_id: str
    turn_index: int = Field(ge=0)
    role: Role
    timestamp: AwareDatetime
    text: str = Field(description="The message with every matched value replaced by its mask.")
    truncated: bool = False
    marks: list[Mark] = Field(default_factory=list)


class ReviewReason(_Model):
    """Why a conversation is in the queue: one triage rule matched one finding or verdict."""

    code: ReasonCode
    priority: int = Field(ge=0, le=100)
    source: Literal["finding", "verdict"]
    event_id: str
    finding_id: str | None = None
    rule_id: str | None = None

    @property
    def key(self) -> str:
        """The de-duplication key: reason code and finding (or verdict) it is about."""
        return f"{self.code}|{self.finding_id or 'verdict:' + self.event_id}"


class ReviewFlag(_Model):
    """One screened or checked turn handed to the queue (masked; the reducer's main input).

    ``reasons`` empty means the turn only adds context to an active item of its conversation.
    ``at`` is the processing time (the worker's clock; the event time in ``vigil scan``).
    """

    schema_version: Literal[1] = 1
    conversation_id: str
    tenant: str | None = None
    event_id: str
    at: AwareDatetime
    turn: Turn | None = None
    context: list[Turn] = Field(default_factory=list, description="Turns before this one.")
    findings: list[Finding] = Field(default_factory=list, description="The findings with reasons.")
    verdict: GroundingReport | None = None
    reasons: list[ReviewReason] = Field(default_factory=list)
    originals: dict[str, str] = Field(
        default_factory=dict, description="finding_id → matched value, for the reveal role only."
    )

    @property
    def priority(self) -> int:
        return max((r.priority for r in self.reasons), default=0)


class ReviewItem(_Model):
    """The queue state of one conversation: one review round (``item_id``) at a time."""

    schema_version: Literal[1] = 1
    item_id: str = Field(description="``<conversation_id>:<round>``.")
    conversation_id: str
    tenant: str | None = None
    round: int = Field(ge=1, description="1 for the first item of the conversation, then 2, ...")
    previous_item_id: str | None = None
    status: ReviewStatus
    priority: int = Field(ge=0, le=100, description="The highest priority of its reasons.")
    admission: Admission
    inclusion_probability: float = Field(gt=0.0, le=1.0)
    reasons: list[ReviewReason]
    findings: list[Finding] = Field(description="Findings that gave reasons; evidence is masked.")
    verdicts: list[GroundingReport] = Field(default_factory=list)
    turns: list[Turn] = Field(default_factory=list, description="Masked, ordered, bounded.")
    originals: dict[str, str] = Field(
        default_factory=dict,
        description="finding_id → matched value (reveal role only; never written by vigil scan).",
    )
    seen: list[str] = Field(
        default_factory=list, description="Reason keys already applied (re-delivery guard)."
    )
    created_at: AwareDatetime
    updated_at: AwareDatetime
    expires_at: AwareDatetime = Field(description="An open item expires unclaimed at this time.")
    claimed_by: str | None = None
    claimed_at: AwareDatetime | None = None
    lease_expires_at: AwareDatetime | None = None
    labeled_by: str | None = None
    labeled_at: AwareDatetime | None = None
    label_id: str | None = None
    dropped_turns: int = Field(default=0, ge=0)
    dropped_findings: int = Field(default=0, ge=0)
    dropped_reasons: int = Field(default=0, ge=0)
    version: int = Field(ge=1, description="Incremented on every change, across rounds.")


class FindingLabel(_Model):
    finding_id: str
    verdict: LabelVerdict


class ClaimCorrection(_Model):
    """The reviewer's status for fact check ``index`` of the verdict on answer ``event_id``."""

    event_id: str
    index: int = Field(ge=0)
    status: ClaimStatus


class LabelInput(_Model):
    """What a reviewer submits: a verdict for every finding of the item, optional claim
    corrections, a note and the answer the assistant should have given."""

    findings: list[FindingLabel] = Field(default_factory=list, max_length=1000)
    claims: list[ClaimCorrection] = Field(default_factory=list, max_length=1000)
    note: ShortText | None = None
    expected_answer: Annotated[str, StringConstraints(max_length=8000)] | None = None


class ReviewAction(_Model):
    """A reviewer's request and, once applied, its outcome (the ``vigil.review.actions`` log)."""

    schema_version: Literal[1] = 1
    action_id: str
    kind: ActionKind
    conversation_id: str
    item_id: str | None = Field(default=None, description="The round acted on; None = current.")
    reviewer: ReviewerName
    at: AwareDatetime
    lease_seconds: int | None = Field(default=None, ge=1)
    label: LabelInput | None = None
    outcome: Literal["applied", "rejected"] | None = None
    reason: str | None = Field(default=None, description="Rejection code, when rejected.")

    @model_validator(mode="after")
    def _shape(self) -> ReviewAction:
        if (self.kind == "label") != (self.label is not None):
            raise ValueError("a label action carries a label, and only a label action does")
        if self.lease_seconds is not None and self.kind != "claim":
            raise ValueError("lease_seconds is for claim actions only")
        return self


class LabeledFinding(_Model):
    finding_id: str
    event_id: str
    rule_id: str
    category: Category
    entity: str
    severity: Severity
    verdict: LabelVerdict


class CorrectedClaim(_Model):
    event_id: str
    index: int = Field(ge=0)
    entity: str
    attribute: str
    value: str
    sources: list[str]
    original: ClaimStatus
    corrected: ClaimStatus


class ReviewLabel(_Model):
    """A finished review (``vigil.review.labels``): drives per-rule precision metrics and
    becomes an evaluation case (masked turns included)."""

    schema_version: Literal[1] = 1
    label_id: str
    item_id: str
    conversation_id: str
    tenant: str | None = None
    round: int = Field(ge=1)
    reviewer: str
    labeled_at: AwareDatetime
    priority: int = Field(ge=0, le=100)
    admission: Admission
    inclusion_probability: float = Field(gt=0.0, le=1.0)
    reasons: list[ReviewReason]
    findings: list[LabeledFinding]
    claims: list[CorrectedClaim] = Field(default_factory=list)
    note: str | None = None
    expected_answer: str | None = None
    turns: list[Turn] = Field(default_factory=list)


class RevealEvent(_Model):
    """Someone looked at unmasked values: who, which item, which findings, when. No values."""

    schema_version: Literal[1] = 1
    event_id: str
    conversation_id: str
    item_id: str
    reviewer: str
    at: AwareDatetime
    finding_ids: list[str] = Field(description="Findings whose values were shown.")
    entities: list[str] = Field(description="Their entity types, sorted, unique.")
