"""Knobs of the grounding check, validated by pydantic."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_SUPPORT_THRESHOLD", "GroundingConfig"]

#: Tuned (max-min Youden J) on the dev halves of HaluEval QA and the constructed PubMedQA set
#: (``benchmarks/grounding_quality.py``; results in ``docs/grounding.md``).
DEFAULT_SUPPORT_THRESHOLD = 0.55

ClaimKind = Literal["dose", "contraindication", "other"]


class GroundingConfig(BaseModel):
    """How claims are grounded and which of them go to the judge."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    support_threshold: float = Field(
        default=DEFAULT_SUPPORT_THRESHOLD,
        ge=0.0,
        le=1.0,
        description="Least share of a claim's content units found in one passage.",
    )
    bare_numbers: bool = Field(
        default=True,
        description="Numbers without a unit (years, counts) must also appear in a passage.",
    )
    judge_kinds: frozenset[ClaimKind] = Field(
        default=frozenset({"dose", "contraindication", "other"}),
        description="Kinds of claim sent to the judge by claims_for_judge.",
    )
    judge_max_claims: int = Field(
        default=32, ge=0, le=256, description="Most claims per answer sent to the judge."
    )
    judge_max_premise_chars: int = Field(
        default=4000, ge=200, le=65536, description="The premise (best passage) is cut here."
    )
