"""The triage policy (``rules/triage.yaml``): what goes to review, at which priority, how much.

A policy is data, validated by pydantic at load time; a broken file fails with
:class:`PolicyError` naming the file and the field. Each finding is matched against every finding
rule and gets the reason of the highest-priority match (the first in the file on a tie); each
verdict likewise against the verdict rules. No match, no reason: the finding does not send its
conversation to review.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from schemas.events import Role
from schemas.outputs import Category, Direction, Finding, Severity
from schemas.review import ReasonCode, ReviewReason
from schemas.verdicts import ClaimStatus, GroundingReport, JudgeLabel
from services.review.config import ReviewFileError, load_yaml_model

__all__ = [
    "BANDS",
    "DEFAULT_POLICY_PATH",
    "AuditSettings",
    "Band",
    "Caps",
    "FindingMatch",
    "FindingRule",
    "PolicyError",
    "QueueSettings",
    "ReasonIndex",
    "Reasons",
    "RevealSettings",
    "TriagePolicy",
    "VerdictMatch",
    "VerdictRule",
    "band",
    "load_policy",
]

DEFAULT_POLICY_PATH = Path(__file__).resolve().parents[2] / "rules" / "triage.yaml"

Band = Literal["critical", "high", "medium", "low"]
ValueCategory = Literal["pii", "secret", "prompt_leak"]
#: Priority bands (a fixed metric label set): critical ≥ 90, high ≥ 70, medium ≥ 40, low below.
BANDS: tuple[Band, ...] = ("critical", "high", "medium", "low")


def band(priority: int) -> Band:
    if priority >= 90:
        return "critical"
    if priority >= 70:
        return "high"
    if priority >= 40:
        return "medium"
    return "low"


class PolicyError(ReviewFileError):
    """The triage policy is invalid. The message names the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _listify(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


class _FindingLike(Protocol):
    @property
    def rule_id(self) -> str: ...
    @property
    def category(self) -> str: ...
    @property
    def entity(self) -> str: ...
    @property
    def severity(self) -> str: ...
    @property
    def direction(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def score(self) -> float: ...


class FindingMatch(_Strict):
    """Conditions on a finding; all given ones must hold. Lists mean "any of"; ``rule_id`` and
    ``entity`` are shell-style globs (``grounding.ungrounded_*``)."""

    rule_id: list[str] | None = None
    entity: list[str] | None = None
    category: list[Category] | None = None
    severity: list[Severity] | None = None
    direction: list[Direction] | None = None
    role: list[Role] | None = None
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)

    @field_validator(
        "rule_id", "entity", "category", "severity", "direction", "role", mode="before"
    )
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return _listify(value)

    @model_validator(mode="after")
    def _not_empty(self) -> FindingMatch:
        if all(v is None for v in self.model_dump().values()):
            raise ValueError("a match needs at least one condition")
        return self

    def matches(self, f: _FindingLike) -> bool:
        def glob(patterns: list[str] | None, value: str) -> bool:
            return patterns is None or any(fnmatch.fnmatchcase(value, p) for p in patterns)

        def one_of(allowed: Sequence[str] | None, value: str) -> bool:
            return allowed is None or value in allowed

        return (
            glob(self.rule_id, f.rule_id)
            and glob(self.entity, f.entity)
            and one_of(self.category, f.category)
            and one_of(self.severity, f.severity)
            and one_of(self.direction, f.direction)
            and one_of(self.role, f.role)
            and (self.min_score is None or f.score >= self.min_score)
        )


class FindingSketch(_Strict):
    """A finding as written in a rule's examples: only the fields triage reads."""

    rule_id: str = "example.rule"
    category: Category = "pii"
    entity: str = "EXAMPLE"
    severity: Severity = "medium"
    direction: Direction = "input"
    role: Role = "assistant"
    score: float = Field(default=1.0, ge=0.0, le=1.0)


class FindingExamples(_Strict):
    match: list[FindingSketch] = Field(min_length=1)
    no_match: list[FindingSketch] = Field(default_factory=list)


class FindingRule(_Strict):
    code: ReasonCode
    priority: int = Field(ge=0, le=100)
    description: str = Field(min_length=1)
    when: FindingMatch
    examples: FindingExamples | None = None

    @model_validator(mode="after")
    def _examples_hold(self) -> FindingRule:
        if self.examples is not None:
            for i, ex in enumerate(self.examples.match):
                if not self.when.matches(ex):
                    raise ValueError(f"examples.match[{i}] does not match the rule")
            for i, ex in enumerate(self.examples.no_match):
                if self.when.matches(ex):
                    raise ValueError(f"examples.no_match[{i}] matches the rule")
        return self


class VerdictMatch(_Strict):
    """Conditions on a grounding verdict; all given ones must hold."""

    faithfulness_below: float | None = Field(default=None, gt=0.0, le=1.0)
    #: Any fact check with one of these statuses.
    fact_status: list[ClaimStatus] | None = None
    #: Any claim the judge labelled so.
    judge: list[JudgeLabel] | None = None
    min_ungrounded: int | None = Field(default=None, ge=1)

    @field_validator("fact_status", "judge", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return _listify(value)

    @model_validator(mode="after")
    def _not_empty(self) -> VerdictMatch:
        if all(v is None for v in self.model_dump().values()):
            raise ValueError("a match needs at least one condition")
        return self

    def matches(self, v: GroundingReport) -> bool:
        return (
            (self.faithfulness_below is None or v.faithfulness < self.faithfulness_below)
            and (
                self.fact_status is None or any(c.status in self.fact_status for c in v.fact_checks)
            )
            and (self.judge is None or any(c.judge in self.judge for c in v.claims))
            and (self.min_ungrounded is None or len(v.ungrounded) >= self.min_ungrounded)
        )


class VerdictRule(_Strict):
    code: ReasonCode
    priority: int = Field(ge=0, le=100)
    description: str = Field(min_length=1)
    when: VerdictMatch


class Caps(_Strict):
    """Per-tenant hourly caps on new review items, with keyed-hash sampling of the overflow.

    A cap counts new items (conversations), not findings; reasons merged into an open item are
    free. Items at or above ``exempt_priority`` always enter but use up the cap. Over the cap, a
    conversation enters when its keyed hash falls under ``overflow_sample_rate`` (inclusion
    probability = the rate); every other one is counted as overflowed, never silently dropped.
    """

    per_tenant_per_hour: int | None = Field(default=200, ge=0)
    #: Per-tenant overrides; ``null`` = no cap; the key ``""`` is for events without a tenant.
    tenants: dict[str, int | None] = Field(default_factory=dict)
    overflow_sample_rate: float = Field(default=0.1, ge=0.0, le=1.0)
    exempt_priority: int | None = Field(default=90, ge=0, le=100)
    #: Overflowed conversations remembered per counter, so a repeat is not counted twice.
    max_tracked_overflow: int = Field(default=10_000, ge=0)

    def limit(self, tenant: str | None, partitions: int = 1) -> int | None:
        """The cap for ``tenant`` in one of ``partitions`` equal shares (rounded up)."""
        name = tenant or ""
        cap = self.tenants.get(name, self.per_tenant_per_hour)
        if cap is None:
            return None
        return -(-cap // max(1, partitions))


class QueueSettings(_Strict):
    """Leases, lifetimes and bounds of queue items."""

    lease_seconds: int = Field(default=900, ge=1)
    max_lease_seconds: int = Field(default=4 * 3600, ge=1)
    open_ttl_hours: float = Field(default=7 * 24, gt=0)
    #: Labeled and expired items are deleted (a tombstone) this long after their last change.
    retention_hours: float = Field(default=30 * 24, gt=0)
    max_turns: int = Field(default=20, ge=1)
    context_turns: int = Field(default=2, ge=0)
    max_turn_chars: int = Field(default=4000, ge=100)
    max_findings: int = Field(default=200, ge=1)
    max_reasons: int = Field(default=200, ge=1)
    max_seen: int = Field(default=4096, ge=1)
    #: A message longer than ``max_turn_chars`` keeps its beginning and this many characters on
    #: each side of every finding (less when the windows would not fit ``max_turn_chars``).
    context_chars: int = Field(default=300, ge=0)
    #: Retrieved passages kept per answer, and characters per passage.
    max_passages: int = Field(default=8, ge=0)
    max_passage_chars: int = Field(default=3000, ge=100)
    #: Sentence claims kept per grounding verdict (ungrounded and critical ones first), and
    #: characters per claim text.
    max_verdict_claims: int = Field(default=64, ge=1)
    max_claim_chars: int = Field(default=1000, ge=100)
    #: Items at or above this priority need a second reviewer (``null``: never).
    second_review_min_priority: int | None = Field(default=None, ge=0, le=100)
    #: An assignment lapses after this long unless renewed.
    assignment_hours: float = Field(default=72, gt=0)
    max_assignment_hours: float = Field(default=30 * 24, gt=0)
    #: Label events kept on an item (its history; older ones leave, counted). They live as long
    #: as the item (``retention_hours`` after its last change); every one is also an event.
    max_label_history: int = Field(default=10, ge=1)

    @model_validator(mode="after")
    def _lease(self) -> QueueSettings:
        if self.lease_seconds > self.max_lease_seconds:
            raise ValueError("lease_seconds is above max_lease_seconds")
        if self.assignment_hours > self.max_assignment_hours:
            raise ValueError("assignment_hours is above max_assignment_hours")
        return self

    def reviews_for(self, priority: int) -> int:
        """How many reviewers an item of this priority needs (1 or 2)."""
        second = self.second_review_min_priority
        return 2 if second is not None and priority >= second else 1


def _default_retained() -> list[ValueCategory]:
    return ["pii", "prompt_leak"]


class RevealSettings(_Strict):
    #: Categories whose matched values are kept for the ``reveal`` role. Secrets are left out by
    #: default: their keyed fingerprint is enough to correlate, nobody needs to see a key.
    retain_categories: list[ValueCategory] = Field(default_factory=_default_retained)


class AuditSettings(_Strict):
    """Random unflagged evaluation cases offered for review (``vigil review serve --from``), so
    reviewers can say what the rules missed: the labels give the miss rate."""

    enabled: bool = True
    code: ReasonCode = "evalset_unflagged"
    priority: int = Field(default=20, ge=0, le=100)
    description: str = "A random conversation no rule flagged: did the rules miss something?"


class TriagePolicy(_Strict):
    version: Literal[1]
    description: str = ""
    findings: list[FindingRule] = Field(default_factory=list)
    verdicts: list[VerdictRule] = Field(default_factory=list)
    caps: Caps = Field(default_factory=Caps)
    queue: QueueSettings = Field(default_factory=QueueSettings)
    reveal: RevealSettings = Field(default_factory=RevealSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)

    def describe(self, code: str) -> str | None:
        """The description of the rule that gives reason ``code`` (for the reviewer)."""
        rules: list[FindingRule | VerdictRule] = [*self.findings, *self.verdicts]
        for rule in rules:
            if rule.code == code:
                return rule.description
        return self.audit.description if code == self.audit.code else None

    @model_validator(mode="after")
    def _unique_codes(self) -> TriagePolicy:
        seen: set[str] = set()
        rules: list[FindingRule | VerdictRule] = [*self.findings, *self.verdicts]
        for rule in rules:
            if rule.code in seen:
                raise ValueError(f"duplicate reason code {rule.code!r}")
            seen.add(rule.code)
        if self.audit.code in seen:
            raise ValueError(f"audit.code {self.audit.code!r} is also a rule's code")
        return self

    def finding_rule(self, f: _FindingLike) -> FindingRule | None:
        """The finding rule that gives ``f`` its reason: the highest priority that matches, the
        first in the file on a tie."""
        best: FindingRule | None = None
        for rule in self.findings:
            if (best is None or rule.priority > best.priority) and rule.when.matches(f):
                best = rule
        return best

    def finding_reason(self, f: Finding) -> ReviewReason | None:
        return _finding_reason(self.finding_rule(f), f)

    def verdict_reason(self, v: GroundingReport) -> ReviewReason | None:
        best: VerdictRule | None = None
        for rule in self.verdicts:
            if (best is None or rule.priority > best.priority) and rule.when.matches(v):
                best = rule
        if best is None:
            return None
        return ReviewReason(
            code=best.code, priority=best.priority, source="verdict", event_id=v.event_id
        )

    def reasons(
        self, findings: Iterable[Finding], verdict: GroundingReport | None = None
    ) -> list[ReviewReason]:
        """The reasons these findings and this verdict give, highest priority first."""
        return self.reasons_by(self.finding_rule, findings, verdict)

    def reasons_by(
        self,
        rule_of: Callable[[Finding], FindingRule | None],
        findings: Iterable[Finding],
        verdict: GroundingReport | None = None,
    ) -> list[ReviewReason]:
        """:meth:`reasons` with ``rule_of`` finding each finding's rule."""
        out = [r for f in findings if (r := _finding_reason(rule_of(f), f)) is not None]
        if verdict is not None and (vr := self.verdict_reason(verdict)) is not None:
            out.append(vr)
        return sorted(out, key=lambda r: -r.priority)


def _finding_reason(best: FindingRule | None, f: Finding) -> ReviewReason | None:
    if best is None:
        return None
    return ReviewReason(
        code=best.code,
        priority=best.priority,
        source="finding",
        event_id=f.event_id,
        finding_id=f.finding_id,
        rule_id=f.rule_id,
    )


#: ``reasons(findings, verdict)``: :meth:`TriagePolicy.reasons` or :meth:`ReasonIndex.reasons`.
Reasons = Callable[[Iterable[Finding], GroundingReport | None], list[ReviewReason]]


class ReasonIndex:
    """:meth:`TriagePolicy.reasons` with the rule of each kind of finding remembered.

    Which finding rule matches depends only on what :class:`FindingMatch` reads (rule id,
    entity, category, severity, direction, role, score): a handful of combinations, met again
    and again, where the policy tries every rule's globs on every finding. The memo holds those
    names and scores (no message content), at most ``size`` of them (cleared when full).
    """

    def __init__(self, policy: TriagePolicy, size: int = 4096) -> None:
        self.policy = policy
        self.size = size
        self._rules: dict[tuple[str, str, str, str, str, str, float], FindingRule | None] = {}

    def rule(self, f: Finding) -> FindingRule | None:
        key = (f.rule_id, f.entity, f.category, f.severity, f.direction, f.role, f.score)
        try:
            return self._rules[key]
        except KeyError:
            pass
        if len(self._rules) >= self.size:
            self._rules.clear()
        found = self._rules[key] = self.policy.finding_rule(f)
        return found

    def reasons(
        self, findings: Iterable[Finding], verdict: GroundingReport | None = None
    ) -> list[ReviewReason]:
        return self.policy.reasons_by(self.rule, findings, verdict)


def load_policy(path: Path | str = DEFAULT_POLICY_PATH) -> TriagePolicy:
    """Load and validate a triage policy; raise :class:`PolicyError` naming file and field."""
    return load_yaml_model(
        path, TriagePolicy, PolicyError, "triage policy (version, findings, ...)"
    )
