"""The label schema (``rules/label-schema.yaml``) and the server's check of a submitted label.

The schema is configuration, shaped like Langfuse score configs: the harm-severity levels, the
error categories, optional rubric fields (numeric with bounds, categorical, boolean) and which
fields are required. :func:`check_decision` checks a :class:`~schemas.review.LabelDecision`
against the schema alone (also used for the file's own examples at load);
:func:`check_label` adds what the item decides: a verdict for every finding and no other,
an answer that is an assistant turn of the item, relevant documents among that answer's
retrieved passages. Both return a message for the reviewer, or ``None`` when the label is fine.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from schemas.review import ConfigName, LabelDecision, ReviewItem, Turn
from services.review.config import ReviewFileError, load_yaml_model

__all__ = [
    "DEFAULT_LABEL_SCHEMA_PATH",
    "LabelSchema",
    "LabelSchemaError",
    "answer_turn",
    "check_decision",
    "check_label",
    "load_label_schema",
]

DEFAULT_LABEL_SCHEMA_PATH = Path(__file__).resolve().parents[2] / "rules" / "label-schema.yaml"


class LabelSchemaError(ReviewFileError):
    """The label schema file is invalid (the message names the file and the field)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Choice(_Strict):
    value: ConfigName
    label: str = Field(min_length=1, max_length=80)
    description: str = ""


def _unique(choices: list[Choice], what: str) -> None:
    repeated = [v for v, n in Counter(c.value for c in choices).items() if n > 1]
    if repeated:
        raise ValueError(f"{what}: {repeated[0]!r} is listed twice")


class HarmScale(_Strict):
    """Ordered levels, least harm first; the first one means "no harm"."""

    required: bool = True
    levels: list[Choice] = Field(min_length=2, max_length=10)

    @model_validator(mode="after")
    def _distinct(self) -> HarmScale:
        _unique(self.levels, "levels")
        return self

    @property
    def none(self) -> str:
        return self.levels[0].value


class ErrorCategories(_Strict):
    #: With a harm level above the first, at least one category.
    required_when_harmful: bool = True
    max_selected: int = Field(default=4, ge=1, le=32)
    values: list[Choice] = Field(min_length=1, max_length=64)

    @model_validator(mode="after")
    def _distinct(self) -> ErrorCategories:
        _unique(self.values, "values")
        return self


class FieldRule(_Strict):
    required: bool = False
    description: str = ""


class ScoreConfig(_Strict):
    """One rubric field, as a Langfuse score config: numeric, categorical or boolean."""

    name: ConfigName
    label: str = Field(min_length=1, max_length=80)
    data_type: Literal["numeric", "categorical", "boolean"]
    min: float | None = None
    max: float | None = None
    categories: list[Choice] | None = None
    required: bool = False
    description: str = ""

    @model_validator(mode="after")
    def _shape(self) -> ScoreConfig:
        if self.data_type == "categorical":
            if not self.categories:
                raise ValueError("a categorical field lists its categories")
            _unique(self.categories, "categories")
        elif self.categories is not None:
            raise ValueError("only a categorical field has categories")
        if self.data_type != "numeric" and (self.min is not None or self.max is not None):
            raise ValueError("only a numeric field has min and max")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError("min is above max")
        return self

    def problem(self, value: Any) -> str | None:
        name = self.name
        if self.data_type == "boolean":
            return None if isinstance(value, bool) else f"{name} is yes or no"
        if self.data_type == "categorical":
            allowed = [c.value for c in self.categories or []]
            if isinstance(value, str) and value in allowed:
                return None
            return f"{name} must be one of {', '.join(allowed)}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"{name} is a number"
        lo = self.min if self.min is not None else float("-inf")
        hi = self.max if self.max is not None else float("inf")
        if not lo <= value <= hi:
            return f"{name} must be between {lo:g} and {hi:g}"
        return None


class InvalidExample(_Strict):
    decision: dict[str, Any]
    error: str = Field(min_length=1)


class SchemaExamples(_Strict):
    valid: list[dict[str, Any]] = Field(default_factory=list)
    invalid: list[InvalidExample] = Field(default_factory=list)


class LabelSchema(_Strict):
    version: Literal[1]
    description: str = ""
    allow_unsure: bool = True
    harm_severity: HarmScale
    error_categories: ErrorCategories
    answer_correct: FieldRule = Field(default_factory=FieldRule)
    relevant_docs: FieldRule = Field(default_factory=FieldRule)
    rubric: list[ScoreConfig] = Field(default_factory=list, max_length=32)
    examples: SchemaExamples = Field(default_factory=SchemaExamples)

    @model_validator(mode="after")
    def _examples_hold(self) -> LabelSchema:
        names = Counter(f.name for f in self.rubric)
        if repeated := [n for n, k in names.items() if k > 1]:
            raise ValueError(f"rubric: {repeated[0]!r} is listed twice")
        for i, raw in enumerate(self.examples.valid):
            found = _example_problem(raw, self)
            if found is not None:
                raise ValueError(f"examples.valid[{i}] fails: {found}")
        for i, ex in enumerate(self.examples.invalid):
            found = _example_problem(ex.decision, self)
            if found is None:
                raise ValueError(f"examples.invalid[{i}] passes (expected {ex.error!r})")
            if ex.error not in found:
                raise ValueError(f"examples.invalid[{i}] fails with {found!r}, not {ex.error!r}")
        return self

    def view(self) -> dict[str, Any]:
        """What the page needs to draw the label form."""
        return self.model_dump(mode="json", exclude={"examples"})


def _example_problem(raw: dict[str, Any], schema: LabelSchema) -> str | None:
    try:
        decision = LabelDecision.model_validate(raw)
    except ValidationError as exc:
        return "; ".join(e["msg"] for e in exc.errors(include_input=False, include_url=False))
    return check_decision(decision, schema)


def load_label_schema(path: Path | str = DEFAULT_LABEL_SCHEMA_PATH) -> LabelSchema:
    """Load and validate a label schema; raise :class:`LabelSchemaError` naming file and field."""
    return load_yaml_model(path, LabelSchema, LabelSchemaError, "label schema (version, ...)")


def check_decision(d: LabelDecision, schema: LabelSchema) -> str | None:
    """What is wrong with ``d`` by the schema alone (``None``: nothing)."""
    harm = schema.harm_severity
    levels = [lv.value for lv in harm.levels]
    if d.harm_severity is None:
        if harm.required:
            return "harm_severity is required (" + ", ".join(levels) + ")"
    elif d.harm_severity not in levels:
        return f"unknown harm_severity {d.harm_severity!r} (" + ", ".join(levels) + ")"
    cats = schema.error_categories
    known = {c.value for c in cats.values}
    if unknown := [c for c in d.error_categories if c not in known]:
        return f"unknown error category {unknown[0]!r}"
    if len(set(d.error_categories)) != len(d.error_categories):
        return "an error category is given twice"
    if len(d.error_categories) > cats.max_selected:
        return f"at most {cats.max_selected} error categories"
    harmful = d.harm_severity is not None and d.harm_severity != harm.none
    if harmful and cats.required_when_harmful and not d.error_categories:
        return f"harm {d.harm_severity!r} needs at least one error category"
    fields = {f.name: f for f in schema.rubric}
    for name, value in d.rubric.items():
        field = fields.get(name)
        if field is None:
            return f"unknown rubric field {name!r}"
        if (found := field.problem(value)) is not None:
            return found
    for f in schema.rubric:
        if f.required and f.name not in d.rubric:
            return f"rubric field {f.name} is required"
    if schema.answer_correct.required and d.answer_correct is None:
        return "answer_correct is required"
    if not schema.allow_unsure and any(f.verdict == "unsure" for f in d.findings):
        return "'unsure' is not allowed by the label schema"
    return None


def answer_turn(item: ReviewItem, event_id: str | None = None) -> Turn | None:
    """The assistant turn a label's answer fields are about: ``event_id`` when given, else the
    flagged answer (the latest assistant turn that gave a reason or was checked), else the
    latest assistant turn of the item."""
    answers = [t for t in item.turns if t.role == "assistant"]
    if event_id is not None:
        return next((t for t in answers if t.event_id == event_id), None)
    flagged = {r.event_id for r in item.reasons} | {v.event_id for v in item.verdicts}
    chosen = [t for t in answers if t.event_id in flagged] or answers
    return chosen[-1] if chosen else None


def check_label(d: LabelDecision, item: ReviewItem, schema: LabelSchema) -> str | None:
    """What is wrong with ``d`` for ``item`` (``None``: nothing). Fact-check corrections are
    checked by the queue, which resolves them."""
    findings = {f.finding_id for f in item.findings}
    given = [fl.finding_id for fl in d.findings]
    if len(set(given)) != len(given):
        return "a finding is labelled twice"
    if unknown := set(given) - findings:
        return f"{len(unknown)} unknown finding id(s)"
    if missing := findings - set(given):
        return f"{len(missing)} finding(s) without verdict"
    if (found := check_decision(d, schema)) is not None:
        return found
    about_answer = (
        d.answer_correct is not None or d.relevant_doc_ids is not None or d.expected_answer
    )
    if d.answer_event_id is not None or about_answer:
        turn = answer_turn(item, d.answer_event_id)
        if turn is None:
            if d.answer_event_id is not None:
                return f"answer_event_id {d.answer_event_id!r} is not an answer of this item"
            return "this item holds no assistant answer to judge"
        if d.relevant_doc_ids is not None:
            retrieved = {p.doc_id for p in turn.passages}
            if len(set(d.relevant_doc_ids)) != len(d.relevant_doc_ids):
                return "a relevant document is given twice"
            if stray := [doc for doc in d.relevant_doc_ids if doc not in retrieved]:
                return f"{stray[0]!r} was not retrieved for answer {turn.event_id}"
    if schema.relevant_docs.required and d.relevant_doc_ids is None:
        turn = answer_turn(item, d.answer_event_id)
        if turn is not None and turn.passages:
            return "relevant_doc_ids is required (pick from the retrieved passages)"
    return None
