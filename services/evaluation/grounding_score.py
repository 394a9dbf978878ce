"""Faithfulness of an answer to its retrieved passages (SPEC §5, §6).

Faithfulness = grounded claims / claims, 1.0 when the answer makes no claims, reported with the
list of ungrounded claims. Deciding *whether* a claim is grounded (numbers and units, content
words, the optional judge) happens upstream; this module only counts. Anything not proven
grounded — including a claim the judge could not verify — must be passed as ``False``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from services.evaluation._checks import check_bool, check_text, fail, type_name

__all__ = ["FaithfulnessResult", "faithfulness"]


class FaithfulnessResult(BaseModel):
    """Counts of grounded claims, the ungrounded ones in answer order, and the derived score.

    ``score`` is computed from the counts, so the result cannot contradict itself.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    grounded: int = Field(ge=0, description="Number of grounded claims.")
    total: int = Field(ge=0, description="Number of claims checked.")
    ungrounded: list[str] = Field(description="Text of each ungrounded claim, in answer order.")

    @model_validator(mode="after")
    def _counts_agree(self) -> FaithfulnessResult:
        if self.grounded > self.total:
            raise ValueError("grounded cannot exceed total")
        if len(self.ungrounded) != self.total - self.grounded:
            raise ValueError("ungrounded must list exactly total - grounded claims")
        return self

    @computed_field(description="grounded / total; 1.0 when there are no claims.")  # type: ignore[prop-decorator]
    @property
    def score(self) -> float:
        """Share of grounded claims in [0, 1]; 1.0 when there are no claims."""
        return self.grounded / self.total if self.total else 1.0


def _claim(i: int, item: object) -> tuple[str, bool]:
    where = f"claims[{i}]"
    if isinstance(item, Mapping):
        if "text" not in item or "grounded" not in item:
            fail(f"{where}: a mapping needs the keys 'text' and 'grounded'")
        text, grounded = item["text"], item["grounded"]
    elif isinstance(item, tuple):
        if len(item) != 2:
            fail(f"{where}: a tuple must be (text, grounded), got {len(item)} elements")
        text, grounded = item
    else:
        fail(f"{where}: must be a (text, grounded) tuple or a mapping, got {type_name(item)}")
    return check_text(f"{where} text", text), check_bool(f"{where} grounded", grounded)


def faithfulness(
    claims: Sequence[tuple[str, bool]] | Sequence[Mapping[str, object]],
) -> FaithfulnessResult:
    """Score the claims of one answer: ``grounded / total`` plus the ungrounded claim texts.

    Each claim is a ``(text, grounded)`` tuple or a mapping with at least ``"text"`` and
    ``"grounded"`` (extra keys are ignored). ``text`` is a non-empty ``str``; ``grounded`` is a
    real boolean. ``claims`` is a list or tuple.

    >>> r = faithfulness([("Take 500 mg.", True), ("Max 4 g a day.", False)])
    >>> r.score, r.grounded, r.total, r.ungrounded
    (0.5, 1, 2, ['Max 4 g a day.'])
    >>> faithfulness([]).score
    1.0
    >>> faithfulness([{"text": "Rest.", "grounded": True}]).model_dump()
    {'grounded': 1, 'total': 1, 'ungrounded': [], 'score': 1.0}
    """
    if not isinstance(claims, list | tuple):
        fail(f"claims: must be a list or tuple, got {type_name(claims)}")
    checked = [_claim(i, item) for i, item in enumerate(claims)]
    ungrounded = [text for text, grounded in checked if not grounded]
    return FaithfulnessResult(
        grounded=len(checked) - len(ungrounded), total=len(checked), ungrounded=ungrounded
    )
