"""Plain-language explanations of findings for reviewers (``rules/explanations.yaml``).

The rules' own ``explanation`` says what matched in the engine's terms ("pattern address,
validator phone"); a reviewer needs a sentence: *an e-mail address (a***@***.nl) in the
assistant's answer, although the user never gave it in this conversation*. The sentences are
templates in a data file, chosen by the first ``when`` that matches the finding, filled with the
entity's name, the masked evidence and the direction. Highlights without a finding row (values
masked in context turns) are explained the same way from their mark.
"""

from __future__ import annotations

import fnmatch
import string
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from schemas.events import Role
from schemas.outputs import Category, Direction, Finding
from schemas.review import Mark, Turn
from services.review.config import ReviewFileError, load_yaml_model

__all__ = [
    "DEFAULT_EXPLANATIONS_PATH",
    "ExplanationError",
    "Explanations",
    "default_explanations",
    "load_explanations",
]

DEFAULT_EXPLANATIONS_PATH = Path(__file__).resolve().parents[2] / "rules" / "explanations.yaml"
_FIELDS = frozenset({"entity", "Entity", "evidence", "direction", "rule_id"})


class ExplanationError(ReviewFileError):
    """The explanations file is invalid (the message names the file and the template)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _listify(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


class When(_Strict):
    rule_id: list[str] | None = None
    entity: list[str] | None = None
    category: list[Category] | None = None
    direction: list[Direction] | None = None
    role: list[Role] | None = None

    @field_validator("rule_id", "entity", "category", "direction", "role", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return _listify(value)

    def matches(self, f: _Subject) -> bool:
        def glob(patterns: list[str] | None, value: str) -> bool:
            return patterns is None or any(fnmatch.fnmatchcase(value, p) for p in patterns)

        return (
            glob(self.rule_id, f.rule_id)
            and glob(self.entity, f.entity)
            and (self.category is None or f.category in self.category)
            and (self.direction is None or f.direction in self.direction)
            and (self.role is None or f.role in self.role)
        )


class Template(_Strict):
    when: When
    text: str = Field(min_length=1)

    @field_validator("text")
    @classmethod
    def _placeholders(cls, text: str) -> str:
        names = {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
        if unknown := names - _FIELDS:
            raise ValueError(f"unknown placeholder {{{sorted(unknown)[0]}}}")
        return text


class _Subject(_Strict):
    """What a template reads: a finding, or a highlight reconstructed from its mark."""

    rule_id: str
    category: Category
    entity: str
    direction: Direction
    role: Role = "assistant"
    evidence: str = ""


class Example(_Strict):
    finding: _Subject
    text: str


class Explanations(_Strict):
    version: Literal[1]
    directions: dict[Direction, str]
    entities: dict[str, str] = Field(default_factory=dict)
    templates: list[Template] = Field(min_length=1)
    examples: list[Example] = Field(default_factory=list)

    @model_validator(mode="after")
    def _complete(self) -> Explanations:
        if missing := {"input", "leak", "echo", "output"} - set(self.directions):
            raise ValueError(f"directions: {sorted(missing)[0]!r} is missing")
        if any(v is not None for v in self.templates[-1].when.model_dump().values()):
            raise ValueError("the last template must match everything (when: {})")
        for i, ex in enumerate(self.examples):
            got = self._render(ex.finding)
            if " ".join(got.split()) != " ".join(ex.text.split()):
                raise ValueError(f"examples[{i}] renders {got!r}, not {ex.text!r}")
        return self

    def _render(self, f: _Subject) -> str:
        template = next(t for t in self.templates if t.when.matches(f))
        name = self.entities.get(f.entity, f.entity)
        text = template.text.format(
            entity=name,
            Entity=name[:1].upper() + name[1:],
            evidence=f.evidence,
            direction=self.directions[f.direction],
            rule_id=f.rule_id,
        )
        return " ".join(text.split())

    def finding(self, f: Finding) -> str:
        """The plain sentence for a finding."""
        return self._render(
            _Subject(
                rule_id=f.rule_id,
                category=f.category,
                entity=f.entity,
                direction=f.direction,
                role=f.role,
                evidence=f.evidence,
            )
        )

    def mark(self, m: Mark, turn: Turn) -> str:
        """The plain sentence for a highlight that has no finding row: its evidence is the masked
        text it covers; in an assistant turn whether it was a leak or an echo is not known."""
        return self._render(
            _Subject(
                rule_id=m.rule_id,
                category=m.category,
                entity=m.entity,
                direction="input" if turn.role != "assistant" else "output",
                role=turn.role,
                evidence=turn.text[m.start : m.end][:200],
            )
        )


def load_explanations(path: Path | str = DEFAULT_EXPLANATIONS_PATH) -> Explanations:
    """Load and validate an explanations file (its examples are rendered and compared)."""
    return load_yaml_model(path, Explanations, ExplanationError, "explanations file")


@cache
def default_explanations() -> Explanations:
    return load_explanations()
