"""Contracts of the sampled claim-support and grounding checks (SPEC §5)."""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from schemas.events import Claim

__all__ = [
    "CitationIssue",
    "ClaimCheck",
    "ClaimStatus",
    "ClaimVerdict",
    "GroundingReport",
    "JudgeLabel",
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
