"""What one asks the judge and what it answers — pydantic models, never tuples."""

from __future__ import annotations

from typing import Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from schemas.verdicts import JudgeLabel

__all__ = ["OUTCOMES", "JudgeOutcome", "JudgeRequest", "JudgeResult"]

#: How a call ended. ``ok``: the judge gave a valid verdict; ``cached``: a verdict from the cache,
#: no request; ``circuit_open``: the breaker refused, no request; the rest are failures of the last
#: attempt (``http_error``: a non-2xx status; ``malformed``: a 2xx reply that did not validate).
JudgeOutcome = Literal[
    "ok", "timeout", "http_error", "connect_error", "malformed", "circuit_open", "cached"
]
OUTCOMES: Final[tuple[str, ...]] = get_args(JudgeOutcome)


class JudgeRequest(BaseModel):
    """One premise/hypothesis pair, as ``judge_many`` takes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    premise: str
    hypothesis: str
    language: str | None = None


class JudgeResult(BaseModel):
    """The judge's verdict on one pair.

    ``label`` is ``unverified`` whenever ``outcome`` is not ``ok`` or ``cached``: a judge that is
    down, slow, refusing or talking nonsense never yields ``entailment``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: JudgeLabel
    score: float | None = Field(ge=0.0, le=1.0, description="The judge's score; None if none.")
    outcome: JudgeOutcome
    cached: bool = False
    attempts: int = Field(ge=0, description="HTTP requests made for this call (0: none).")
    seconds: float = Field(ge=0.0, description="Wall time of the call, retries included.")
