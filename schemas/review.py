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
    "ConfigName",
    "CorrectedClaim",
    "FindingLabel",
    "Gap",
    "LabelDecision",
    "LabelInput",
    "LabelRecord",
    "LabelVerdict",
    "LabeledFinding",
    "Mark",
    "ReasonCode",
    "RevealEvent",
    "ReviewAction",
    "ReviewFlag",
    "ReviewItem",
    "ReviewLabel",
    "ReviewPassage",
    "ReviewReason",
    "ReviewStatus",
    "RubricValue",
    "Turn",
]

ReviewStatus = Literal["open", "claimed", "labeled", "expired"]
#: A reviewer's verdict on one finding; ``unsure`` counts in no precision figure.
LabelVerdict = Literal["true_positive", "false_positive", "unsure"]
#: How an item got into the queue: under the tenant's cap, exempt from it (priority at or above
#: the policy's ``exempt_priority``), or sampled from the overflow at the policy's rate.
Admission = Literal["admitted", "exempt", "sampled"]
ActionKind = Literal["claim", "release", "label", "reveal", "assign"]
ReasonCode = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)]
ReviewerName = Annotated[str, StringConstraints(pattern=r"^[\w.@+-]{1,64}$")]
ShortText = Annotated[str, StringConstraints(max_length=4000)]
#: Names of configured values (severity levels, error categories, rubric fields).
ConfigName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)]
#: A rubric answer: a number, a yes/no or a category name (checked against the label schema).
RubricValue = Annotated[float, Field(allow_inf_nan=False)] | bool | ConfigName


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


class Gap(_Model):
    """Where a long message was shortened: ``text[start:end]`` is the elision marker
    (``… 23,456 characters …``) standing for ``omitted`` characters of the message."""

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    omitted: int = Field(ge=1)


class ReviewPassage(_Model):
    """A passage retrieved for an answer, as the reviewer sees it: masked and bounded."""

    doc_id: str
    text: str = Field(description="The passage with the answer's matched values masked.")
    rank: int | None = None
    score: float | None = None
    truncated: bool = False


class Turn(_Model):
    """One message of the conversation as a reviewer sees it: masked and bounded.

    A message longer than the policy's ``max_turn_chars`` keeps its beginning and a window around
    every finding; the parts left out are marked in the text and listed in ``gaps``.
    """

    event_id: str
    turn_index: int = Field(ge=0)
    role: Role
    timestamp: AwareDatetime
    text: str = Field(description="The message with every matched value replaced by its mask.")
    truncated: bool = False
    marks: list[Mark] = Field(default_factory=list)
    gaps: list[Gap] = Field(default_factory=list)
    passages: list[ReviewPassage] = Field(
        default_factory=list, description="The passages retrieved for this answer (bounded)."
    )


class ReviewReason(_Model):
    """Why a conversation is in the queue: one triage rule matched one finding or verdict, or
    (``sample``) it is a random unflagged evaluation case offered for review."""

    code: ReasonCode
    priority: int = Field(ge=0, le=100)
    source: Literal["finding", "verdict", "sample"]
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
    label_id: str | None = Field(default=None, description="The latest label of this round.")
    assigned_to: str | None = None
    assigned_by: str | None = None
    assignment_expires_at: AwareDatetime | None = None
    reviews_required: int = Field(
        default=1, ge=1, le=2, description="2: a second reviewer labels too (critical items)."
    )
    labels: list[LabelRecord] = Field(
        default_factory=list, description="Label events of this round, oldest first (bounded)."
    )
    label_count: int = Field(default=0, ge=0, description="Labels of this round, ever.")
    disagreement: list[str] = Field(
        default_factory=list,
        description="Where the current labels of two reviewers differ (field names).",
    )
    dropped_turns: int = Field(default=0, ge=0)
    dropped_findings: int = Field(default=0, ge=0)
    dropped_reasons: int = Field(default=0, ge=0)
    dropped_labels: int = Field(default=0, ge=0)
    trimmed: bool = Field(
        default=False,
        description="Shortened to fit the byte ceiling of one state value (context turns, "
        "text around the findings, passages, claim texts, old keys or labels left out).",
    )
    version: int = Field(ge=1, description="Incremented on every change, across rounds.")


class FindingLabel(_Model):
    finding_id: str
    verdict: LabelVerdict


class ClaimCorrection(_Model):
    """The reviewer's status for fact check ``index`` of the verdict on answer ``event_id``."""

    event_id: str
    index: int = Field(ge=0)
    status: ClaimStatus


class LabelDecision(_Model):
    """What a reviewer decided about one item. Which fields are required, and the allowed
    severity levels, error categories and rubric fields, come from the label schema
    (``rules/label-schema.yaml``, :mod:`services.review.labels`), checked on the server.

    - ``findings``: a verdict for every finding of the item;
    - ``claims``: corrected statuses of fact checks;
    - ``harm_severity``: how much harm the conversation could do (a configured level);
    - ``error_categories``: what went wrong (configured names);
    - ``rubric``: optional configured fields (numbers, yes/no, categories);
    - ``answer_event_id``: the assistant answer that ``answer_correct``,
      ``relevant_doc_ids`` and ``expected_answer`` are about (default: the flagged answer);
    - ``relevant_doc_ids``: which of that answer's retrieved passages answer the question;
    - ``missed_categories``: finding categories the rules should have raised and did not.
    """

    findings: list[FindingLabel] = Field(default_factory=list, max_length=1000)
    claims: list[ClaimCorrection] = Field(default_factory=list, max_length=1000)
    harm_severity: ConfigName | None = None
    error_categories: list[ConfigName] = Field(default_factory=list, max_length=32)
    rubric: dict[ConfigName, RubricValue] = Field(default_factory=dict, max_length=32)
    answer_event_id: str | None = None
    answer_correct: bool | None = None
    relevant_doc_ids: list[str] | None = Field(default=None, max_length=64)
    missed_categories: list[Category] = Field(default_factory=list, max_length=8)
    note: ShortText | None = None
    expected_answer: Annotated[str, StringConstraints(max_length=8000)] | None = None


class LabelInput(LabelDecision):
    """What a reviewer submits: a :class:`LabelDecision`, and for a correction the id of the
    label it corrects (which must be the item's latest)."""

    corrects: str | None = None

    def decision(self) -> LabelDecision:
        return LabelDecision.model_validate(self.model_dump(exclude={"corrects"}))


class LabelRecord(_Model):
    """One label event as the item keeps it (its history): who decided what, and when."""

    label_id: str
    reviewer: ReviewerName
    at: AwareDatetime
    stage: int = Field(ge=1, le=2, description="1: the first review; 2: the second review.")
    supersedes: str | None = Field(default=None, description="The label this one corrects.")
    decision: LabelDecision


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
    assignee: ReviewerName | None = Field(
        default=None, description="Assign actions: who gets the item (None: unassign)."
    )
    assignment_hours: float | None = Field(default=None, gt=0)
    purpose: Annotated[str, StringConstraints(min_length=8, max_length=500)] | None = Field(
        default=None, description="Reveal actions: why the reviewer needs the values (logged)."
    )
    outcome: Literal["applied", "rejected"] | None = None
    reason: str | None = Field(default=None, description="Rejection code, when rejected.")

    @model_validator(mode="after")
    def _shape(self) -> ReviewAction:
        if (self.kind == "label") != (self.label is not None):
            raise ValueError("a label action carries a label, and only a label action does")
        if self.lease_seconds is not None and self.kind != "claim":
            raise ValueError("lease_seconds is for claim actions only")
        if self.kind != "assign" and (
            self.assignee is not None or self.assignment_hours is not None
        ):
            raise ValueError("assignee and assignment_hours are for assign actions only")
        if (self.kind == "reveal") != (self.purpose is not None):
            raise ValueError("a reveal action states its purpose, and only a reveal action does")
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
    """A label event (``vigil.review.labels``): drives per-rule precision metrics and becomes
    evaluation ground truth (masked turns included). A correction is a new event whose
    ``supersedes`` names the label it replaces; nothing is overwritten."""

    schema_version: Literal[1] = 1
    label_id: str
    item_id: str
    conversation_id: str
    tenant: str | None = None
    round: int = Field(ge=1)
    stage: int = Field(default=1, ge=1, le=2, description="2: the second review of the item.")
    supersedes: str | None = Field(default=None, description="The label this one corrects.")
    reviewer: str
    labeled_at: AwareDatetime
    priority: int = Field(ge=0, le=100)
    admission: Admission
    inclusion_probability: float = Field(gt=0.0, le=1.0)
    reasons: list[ReviewReason]
    findings: list[LabeledFinding]
    claims: list[CorrectedClaim] = Field(default_factory=list)
    harm_severity: str | None = None
    error_categories: list[str] = Field(default_factory=list)
    rubric: dict[str, RubricValue] = Field(default_factory=dict)
    answer_event_id: str | None = Field(
        default=None, description="The answer answer_correct and relevant_doc_ids are about."
    )
    answer_correct: bool | None = None
    relevant_doc_ids: list[str] | None = None
    missed_categories: list[Category] = Field(default_factory=list)
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
    purpose: str | None = Field(default=None, description="The reason the reviewer stated.")


ReviewItem.model_rebuild()
