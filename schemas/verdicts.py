"""Contracts of the sampled claim-support and grounding checks (SPEC §5)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from schemas.events import Claim

__all__ = [
    "CitationIssue",
    "ClaimCheck",
    "ClaimStatus",
    "ClaimVerdict",
    "GroundingReport",
    "JudgeLabel",
    "MedicalCheck",
    "MedicalContext",
    "MedicalReading",
    "NumberRange",
    "PassageClaim",
]

ClaimStatus = Literal["supported", "contradicted", "unknown", "conflict"]
#: What the HTTP judge said of one claim; ``unverified`` when it could not answer (down, timeout,
#: malformed reply, circuit open). ``unverified`` never counts as support.
JudgeLabel = Literal["entailment", "neutral", "contradiction", "unverified"]
ClaimKind = Literal["dose", "contraindication", "other"]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClaimVerdict(_Out):
    """A structured claim checked against the fact registry."""

    claim: Claim
    status: ClaimStatus
    sources: list[str] = Field(description="Every source registered for the pair, sorted, unique.")
    registered: list[str] = Field(
        default_factory=list,
        description="Every value registered for the pair, sorted, unique (what the claim is "
        "compared with; empty when unknown).",
    )
    origin: Literal["event", "extracted"] = Field(
        description="From the event's `claims` field, or extracted from the answer by a rule."
    )


Polarity = Literal[
    "contraindicated", "avoid", "not_recommended", "caution", "allowed", "recommended"
]


class NumberRange(_Out):
    """``low``..``high`` (equal for one value); ``kind`` ``max``: up to ``high``; ``min``: from
    ``low``."""

    low: float
    high: float
    kind: Literal["exact", "max", "min"] = "exact"


class MedicalReading(_Out):
    """A dose or contraindication statement read into its parts (answer or passage sentence).

    Amounts are normalised: mass in ``mg``, volume in ``ml``, ``IU``, ``tablet``, ``drop``, per
    body weight ``mg/kg``; ``frequency`` is doses per day (an interval of 8 h is 3 a day)."""

    kind: Literal["dose", "contraindication"]
    drugs: list[str] = Field(description="INNs (lower case); empty when no drug was named.")
    drug_source: Literal["stated", "context", "passage"] | None = Field(
        description="Named in the sentence, in an earlier sentence, or taken from the cited "
        "passages (the answer did not name it)."
    )
    populations: list[str] = Field(
        description="adult, child, elderly, adolescent, pregnancy, breastfeeding, renal, hepatic"
    )
    age_years: NumberRange | None = Field(default=None, description="Age range, in years.")
    amount: NumberRange | None = None
    unit: str | None = Field(default=None, description="mg, ml, IU, tablet, drop, mg/kg, ...")
    basis: Literal["dose", "day", "week"] | None = Field(
        default=None, description="Per dose, per day (24 h) or per week; None when not stated."
    )
    qualifier: Literal["max", "min", "start", "usual"] | None = None
    frequency_per_day: NumberRange | None = None
    polarity: Polarity = Field(description="What the statement says about using the drug.")
    conditions: list[str] = Field(
        default_factory=list, description="Conditions and risk groups the statement is about."
    )
    summary: str = Field(description="One line for a clinician: `max 4000 mg per 24 h`.")


#: Characters of one amount a :class:`MedicalContext` keeps ("1000 mg", "2.5 microgram").
AMOUNT_CHARS = 32


class MedicalContext(_Out):
    """What the user's preceding turn says about who and what the answer is about: the drugs it
    names and the population it describes ("my 6-year-old", "I am 79", "my eGFR is 25", "I am
    pregnant"). Derived data only — no chat text — so a runner can keep it per conversation."""

    drugs: list[str] = Field(default_factory=list, max_length=16)
    populations: list[str] = Field(default_factory=list, max_length=16)
    age_min_years: float | None = None
    age_max_years: float | None = None
    #: The body weight the turn states ("she weighs 14 kg", "weegt 14 kilo", "nặng 14 kg").
    weight_kg: float | None = Field(default=None, gt=0, le=500)
    #: A kidney clearance or eGFR value the turn states ("klaring 25", "my eGFR is 40").
    clearance_ml_min: float | None = Field(default=None, ge=0, le=1000)
    #: The amounts with a unit the turn states, as the check compares them ("500 mg", "10
    #: tablet"): the user's own dose or tablet, which an answer that declines may say back.
    #: Each at most :data:`AMOUNT_CHARS` characters (a longer one is not kept).
    amounts: list[Annotated[str, Field(max_length=AMOUNT_CHARS)]] = Field(
        default_factory=list, max_length=16
    )


class PassageClaim(_Out):
    """A passage's reading that supports or contradicts an answer's."""

    doc_id: str
    sentence: str = Field(description="The passage sentence it was read from.")
    reading: MedicalReading


class MedicalCheck(_Out):
    """One structured reading of an answer sentence compared with the passages' readings about
    the same drug (and population): the claim-support semantics of §5."""

    status: ClaimStatus
    reading: MedicalReading
    supporting: list[PassageClaim] = Field(default_factory=list)
    contradicting: list[PassageClaim] = Field(
        default_factory=list, description="Passage readings that say otherwise (first = closest)."
    )
    explanation: str = Field(
        description="For the reviewer: `answer: 4000 mg per dose; passage pil-x: max 4000 mg per "
        "24 h`."
    )


class ClaimCheck(_Out):
    """One atomic claim (sentence) of an answer checked against the retrieved passages."""

    text: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    kind: ClaimKind
    grounded: bool
    method: Literal["deterministic", "judge"] = Field(
        description="What decided `grounded`: the deterministic check, or the judge's verdict."
    )
    support: float = Field(ge=0.0, le=1.0, description="Content-word support in the best passage.")
    best_doc: str | None = Field(description="The passage that supports the claim best.")
    numbers_missing: list[str] = Field(
        default_factory=list, description="Normalised numbers with units not found in any passage."
    )
    cited_docs: list[str] = Field(default_factory=list)
    judge: JudgeLabel | None = Field(default=None, description="None when the judge was not asked.")
    medical: list[MedicalCheck] = Field(
        default_factory=list,
        description="Structured dose / contraindication readings and their comparison; when "
        "present they decide `grounded` (with any numbers they did not use).",
    )


class CitationIssue(_Out):
    doc_id: str
    claim: str = Field(description="The sentence that cites the document.")


class GroundingReport(_Out):
    """The verdict on one sampled assistant answer (one line of ``verdicts.jsonl``)."""

    schema_version: Literal[1] = 1
    event_id: str
    conversation_id: str
    turn_index: int = Field(ge=0)
    timestamp: AwareDatetime
    tenant: str | None = None
    language: str | None = None
    stratum: Literal["always", "sampled"] = Field(
        description="`always`: medical or high/critical findings; `sampled`: the random share."
    )
    inclusion_probability: float = Field(gt=0.0, le=1.0)
    faithfulness: float = Field(ge=0.0, le=1.0, description="Grounded claims / claims; 1 if none.")
    claims: list[ClaimCheck]
    ungrounded: list[str] = Field(description="Texts of the claims that are not grounded.")
    fabricated_citations: list[str] = Field(description="Cited doc ids that were not retrieved.")
    unsupported_citations: list[CitationIssue] = Field(
        description="Retrieved and cited, but the cited passage does not support the sentence."
    )
    fact_checks: list[ClaimVerdict]
    judge_used: bool = False
