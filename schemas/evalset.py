"""Contracts of the rotating evaluation sets (SPEC §9) and of the CI gates of ``vigil eval run``.

- :class:`EvalCase` — one sampled conversation of one period, reduced to the assistant answer that
  is evaluated: the question before it, the answer, the retrieved contexts, what the checks said
  (claims, fact checks, findings) and, once a reviewer has looked at it, its :class:`EvalLabel`.
  Cases are published to the compacted topic ``vigil.evalset`` keyed by ``case_id`` and exported
  as JSONL; PII in them is masked unless the operator configured otherwise (``masked``).
- :class:`EvalLabel` — the ground truth a reviewer attached: which findings were true or false
  positives, corrected claim statuses and groundedness, the expected answer or abstention,
  whether the given answer was correct, which documents were relevant, and which flag categories
  the rules missed.
- :class:`GateSpec` — one CI gate of a ``gates.yaml`` file (``rules/gates.example.yaml``).
"""

from __future__ import annotations

import re
from typing import Annotated, Final, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from schemas.events import Claim
from schemas.outputs import Category, Finding
from schemas.verdicts import CitationIssue, ClaimCheck, ClaimStatus, ClaimVerdict

__all__ = [
    "FLAG_STRATA",
    "GATE_METRICS",
    "UNFLAGGED",
    "CaseContext",
    "ClaimCorrection",
    "Comparison",
    "EvalCase",
    "EvalLabel",
    "FileSource",
    "FindingVerdict",
    "FlagStratum",
    "GateFile",
    "GateSpec",
    "GroundingCorrection",
    "KafkaSource",
    "PeriodKind",
    "SourceRef",
]

#: How periods are cut: ISO week (``2026-W45``, the default), UTC day (``2026-11-05``), or UTC
#: month (``2026-11``).
PeriodKind = Literal["iso_week", "day", "month"]
UNFLAGGED: Final = "unflagged"
#: The flag part of a stratum: a finding category, or ``unflagged`` (no finding at all).
FlagStratum = Literal[
    "medical", "secret", "pii", "prompt_leak", "grounding", "abstention", "unflagged"
]
FLAG_STRATA: Final[tuple[FlagStratum, ...]] = (
    "medical",
    "secret",
    "pii",
    "prompt_leak",
    "grounding",
    "abstention",
    "unflagged",
)
#: ``unsure`` is recorded but counts in no precision figure.
FindingVerdict = Literal["true_positive", "false_positive", "unsure"]
Comparison = Literal[">=", ">", "<=", "<", "=="]

Ident = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^\S(.*\S)?$")]
#: ``YYYY-Www``, ``YYYY-MM-DD`` or ``YYYY-MM``; the period module checks the calendar.
PeriodId = Annotated[
    str, StringConstraints(pattern=r"^\d{4}-(W\d{2}|\d{2}-\d{2}|\d{2})$", max_length=10)
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KafkaSource(_Model):
    """Where an event of the case was read: a Kafka record."""

    topic: Ident
    partition: int = Field(ge=0)
    offset: int = Field(ge=0)


class FileSource(_Model):
    """Where an event of the case was read in ``vigil scan`` mode: a line of the input file."""

    file: Ident
    line: int = Field(ge=1)


SourceRef = KafkaSource | FileSource


class CaseContext(_Model):
    """A passage retrieved for the evaluated answer (``contexts`` keep the retrieval order)."""

    doc_id: Ident
    text: str
    score: float | None = None
    rank: int | None = Field(default=None, ge=0)


class ClaimCorrection(_Model):
    """A reviewer's status for a fact-checked claim; replaces the checker's status."""

    claim: Claim
    status: ClaimStatus


class GroundingCorrection(_Model):
    """A reviewer's groundedness for an answer claim, matched on the claim text of the case."""

    text: str = Field(min_length=1)
    grounded: bool


class EvalLabel(_Model):
    """Ground truth from review, joined to cases by ``case_id``, else ``event_id``, else
    ``conversation_id`` (see ``services.evalsets.cases.attach_labels``).

    Every field is optional evidence: a metric uses a case only when the label (or the case)
    carries what that metric needs. ``answer_correct`` is the reviewer's judgement of the given
    answer and wins over comparing ``expected_answer``; ``expected_abstention`` says the right
    behaviour was to abstain (then any answer is wrong).
    """

    schema_version: Literal[1] = 1
    conversation_id: Ident
    case_id: Ident | None = None
    event_id: Ident | None = Field(default=None, description="The answer the reviewer judged.")
    label_id: Ident | None = Field(default=None, description="The review label it comes from.")
    supersedes: Ident | None = Field(default=None, description="The label this one corrects.")
    labeled_at: AwareDatetime | None = None
    finding_verdicts: dict[str, FindingVerdict] = Field(
        default_factory=dict, description="finding_id → true_positive / false_positive / unsure."
    )
    claim_statuses: list[ClaimCorrection] = Field(default_factory=list)
    claim_grounding: list[GroundingCorrection] = Field(default_factory=list)
    expected_answer: str | None = Field(default=None, min_length=1, max_length=8000)
    expected_abstention: bool | None = None
    answer_correct: bool | None = None
    relevant_doc_ids: list[Ident] | None = Field(
        default=None, description="Documents that answer the question (binary relevance)."
    )
    relevance: dict[str, Annotated[float, Field(ge=0.0, le=100.0)]] | None = Field(
        default=None, description="Graded relevance for nDCG; defaults to 1 per relevant doc."
    )
    missed_categories: list[Category] = Field(
        default_factory=list, description="Flag categories the rules should have raised."
    )
    harm_severity: str | None = Field(default=None, max_length=64)
    error_categories: list[str] = Field(default_factory=list, max_length=32)
    rubric: dict[str, float | bool | str] = Field(default_factory=dict, max_length=32)
    note: str | None = Field(default=None, max_length=4096)

    @model_validator(mode="after")
    def _consistent(self) -> EvalLabel:
        if self.expected_abstention and self.expected_answer is not None:
            raise ValueError("expected_answer and expected_abstention=true contradict each other")
        if self.relevant_doc_ids is not None and len(set(self.relevant_doc_ids)) != len(
            self.relevant_doc_ids
        ):
            raise ValueError("relevant_doc_ids must not repeat a doc id")
        if len(set(self.missed_categories)) != len(self.missed_categories):
            raise ValueError("missed_categories must not repeat a category")
        return self


class EvalCase(_Model):
    """One evaluation case: a sampled conversation of one period and its evaluated answer.

    ``inclusion_probability`` is ``k / N`` of the case's stratum (``capacity / population``); it
    is final only once the period has closed (``inclusion_final``) — while the period is open
    ``N`` still grows and the value is an upper estimate. Weighting a case by
    ``1 / inclusion_probability`` carries figures back to the population (Hájek estimator).
    """

    schema_version: Literal[1] = 1
    case_id: Ident = Field(
        description="``<period>:<conversation_id>`` (``#<event_id>`` for an answer case); the "
        "compaction key."
    )
    period: PeriodId
    conversation_id: Ident
    event_id: Ident | None = Field(description="The evaluated assistant answer, if any.")
    unit: Literal["conversation", "answer"] = Field(
        default="conversation",
        description="``answer``: one more checked answer with a critical finding of a "
        "conversation that has its own case.",
    )
    stratum: str = Field(min_length=1, description="``<flag>|<language>|<tenant>``.")
    flag_stratum: FlagStratum
    language: str = Field(min_length=1, description="Base language, ``und`` when unknown.")
    tenant: str = Field(min_length=1, description="Tenant, ``-`` when unknown.")
    inclusion_probability: float = Field(gt=0.0, le=1.0)
    inclusion_final: bool = Field(description="False while the period is still open.")
    stratum_population: int | None = Field(default=None, ge=1)
    sources: list[SourceRef] = Field(default_factory=list)
    timestamp: AwareDatetime | None = None
    question: str | None = Field(description="Last user turn before the answer (masked).")
    answer: str | None = Field(description="The evaluated answer (masked); None if none.")
    abstained: bool | None = None
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    contexts: list[CaseContext] = Field(default_factory=list)
    citations: list[str] = Field(default_factory=list)
    checked: bool = Field(default=False, description="The claim checks ran on the answer.")
    faithfulness: float | None = Field(default=None, ge=0.0, le=1.0)
    claims: list[ClaimCheck] = Field(default_factory=list)
    fact_checks: list[ClaimVerdict] = Field(default_factory=list)
    fabricated_citations: list[str] = Field(default_factory=list)
    unsupported_citations: list[CitationIssue] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    critical_answers_unseen: int = Field(
        default=0,
        ge=0,
        description="Checked answers with a critical finding the conversation had beyond what a "
        "case keeps (not evaluated).",
    )
    masked: bool = Field(default=True, description="PII spans replaced by masked evidence.")
    trimmed: bool = Field(
        default=False,
        description="Texts were shortened (``… n characters …`` around the findings) or the "
        "oldest sources left out, to keep the conversation's state under its byte ceiling "
        "(``VIGIL_EVALSET_MAX_CASE_BYTES``).",
    )
    label: EvalLabel | None = None

    @model_validator(mode="after")
    def _consistent(self) -> EvalCase:
        base = f"{self.period}:{self.conversation_id}"
        if self.unit == "conversation" and self.case_id != base:
            raise ValueError("case_id must be '<period>:<conversation_id>'")
        if self.unit == "answer" and self.case_id != f"{base}#{self.event_id}":
            raise ValueError("an answer case's id is '<period>:<conversation_id>#<event_id>'")
        if self.stratum.split("|", 1)[0] != self.flag_stratum:
            raise ValueError("stratum must start with flag_stratum")
        if self.label is not None and self.label.conversation_id != self.conversation_id:
            raise ValueError("label belongs to another conversation")
        return self


#: Metrics a gate can name, and whether they need ``k`` (see ``services.evalrun``).
GATE_METRICS: Final[dict[str, bool]] = {
    "recall": True,
    "ndcg": True,
    "mrr": False,
    "faithfulness": False,
    "faithfulness_pooled": False,
    "coverage": False,
    "overall_accuracy": False,
    "answered_accuracy": False,
    "risk": False,
    "ungrounded_dose_claims": False,
    "fabricated_citations": False,
    "unsupported_citations": False,
    "finding_precision": False,
    "abstained_accuracy": False,
    "miss_rate": False,
    **{f"miss_rate_{c}": False for c in FLAG_STRATA if c != UNFLAGGED},
    "claims_supported": False,
    "claims_contradicted": False,
    "claims_conflict": False,
    "claims_unknown": False,
    "claim_share_supported": False,
    "claim_share_contradicted": False,
    "claim_share_conflict": False,
    "claim_share_unknown": False,
    "cases": False,
}
_AT_K = re.compile(r"^(?P<name>[a-z_]+)@(?P<k>[1-9]\d{0,3})$")


class GateSpec(_Model):
    """One gate: ``metric [@k] comparison threshold``, and/or no worse than a baseline.

    ``metric`` is a name of :data:`GATE_METRICS`, written ``recall`` with ``k: 5`` or as
    ``recall@5``. With ``baseline`` (a report JSON of an earlier run, path relative to the gates
    file) the gate also fails when the value is worse than the baseline's by more than
    ``max_drop`` — "worse" is below for ``>=``/``>``, above for ``<=``/``<``, different for ``==``.
    ``weighted`` gates the population-weighted figure, ``stratum`` one stratum's figure.
    ``on_missing`` decides what a metric without a value (no case carries what it needs) does;
    ``min_cases`` is the least number of cases (or items: checked answers, labelled cases, ...)
    the value must rest on — an empty set never passes a gate vacuously unless it says
    ``min_cases: 0``.
    """

    id: Ident | None = None
    metric: str = Field(min_length=1)
    k: int | None = Field(default=None, ge=1, le=1000)
    threshold: float | None = Field(default=None, allow_inf_nan=False)
    comparison: Comparison = ">="
    baseline: str | None = Field(default=None, min_length=1)
    max_drop: float = Field(default=0.0, ge=0.0, allow_inf_nan=False)
    weighted: bool = False
    stratum: str | None = Field(default=None, min_length=1)
    on_missing: Literal["fail", "skip"] = "fail"
    min_cases: int = Field(
        default=1,
        ge=0,
        description="The least number of cases (items) behind the value; fewer fails the gate.",
    )

    @model_validator(mode="after")
    def _metric_known(self) -> GateSpec:
        name, k = self.metric, self.k
        match = _AT_K.match(self.metric)
        if match:
            name, at_k = match["name"], int(match["k"])
            if k is not None and k != at_k:
                raise ValueError(f"metric {self.metric!r} and k={k} disagree")
            k = at_k
        if name not in GATE_METRICS:
            known = ", ".join(sorted(GATE_METRICS))
            raise ValueError(f"unknown metric {self.metric!r}; known: {known}")
        if GATE_METRICS[name] and k is None:
            raise ValueError(f"metric {name!r} needs k (write {name}@5 or set k)")
        if not GATE_METRICS[name] and k is not None:
            raise ValueError(f"metric {name!r} takes no k")
        if self.threshold is None and self.baseline is None:
            raise ValueError("a gate needs a threshold, a baseline, or both")
        return self

    @property
    def key(self) -> str:
        """The report key of the gated metric: ``recall@5``, ``mrr``, ..."""
        match = _AT_K.match(self.metric)
        if match:
            return self.metric
        return f"{self.metric}@{self.k}" if self.k is not None else self.metric

    @property
    def name(self) -> str:
        """``id`` when given, else a readable rule such as ``recall@5 >= 0.85``."""
        if self.id:
            return self.id
        parts = [("weighted " if self.weighted else "") + self.key]
        if self.stratum:
            parts.append(f"[{self.stratum}]")
        if self.threshold is not None:
            parts.append(f"{self.comparison} {self.threshold:g}")
        if self.baseline is not None:
            parts.append(f"(baseline {self.baseline}, max_drop {self.max_drop:g})")
        return " ".join(parts)


class GateFile(_Model):
    """A ``gates.yaml`` file: a list of gates with unique names."""

    gates: list[GateSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> GateFile:
        seen: set[str] = set()
        for gate in self.gates:
            if gate.name in seen:
                raise ValueError(f"duplicate gate {gate.name!r}")
            seen.add(gate.name)
        return self
