"""Rule packs: declarative YAML files validated by pydantic at load time (SPEC §4).

A broken pack fails loudly: :class:`PackError` names the file and the rule id.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

import re2
import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from schemas.events import Role
from schemas.outputs import Category, Severity
from services.rules.validators import VALIDATORS
from services.yamlload import safe_load as load_yaml

__all__ = [
    "Example",
    "MaskStrategy",
    "PackError",
    "Pattern",
    "Rule",
    "RulePack",
    "load_pack",
    "load_packs",
]

MaskStrategy = Literal["partial", "full", "hash", "none"]
RuleId = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")]
ALL_ROLES: tuple[Role, ...] = ("user", "assistant", "system", "tool")


class PackError(ValueError):
    """A rule pack is invalid. The message names the file and, where known, the rule."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Pattern(_Strict):
    """One RE2 pattern of a rule. ``group`` selects the value inside the match (0 = all)."""

    name: str = Field(min_length=1)
    regex: str = Field(min_length=1)
    score: float = Field(default=0.6, ge=0.0, le=1.0)
    group: int | str = 0

    @model_validator(mode="after")
    def _compiles(self) -> Pattern:
        try:
            compiled = re2.compile(self.regex)
        except re2.error as exc:
            raise ValueError(f"pattern {self.name!r} is not valid RE2: {exc}") from None
        if isinstance(self.group, str) and self.group not in compiled.groupindex:
            raise ValueError(f"pattern {self.name!r} has no group named {self.group!r}")
        if isinstance(self.group, int) and not 0 <= self.group <= compiled.groups:
            raise ValueError(f"pattern {self.name!r} has no group {self.group}")
        return self


class MatchExample(_Strict):
    """A text that must produce a finding; ``value`` pins the matched value when given."""

    text: str = Field(min_length=1)
    value: str | None = None
    role: Role | None = None
    language: str | None = None


class NoMatchExample(_Strict):
    text: str = Field(min_length=1)
    role: Role | None = None
    language: str | None = None


def _coerce_example(item: Any) -> Any:
    return {"text": item} if isinstance(item, str) else item


class Example(_Strict):
    match: list[MatchExample] = Field(min_length=1)
    no_match: list[NoMatchExample] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _strings(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {
                k: [_coerce_example(i) for i in v] if isinstance(v, list) else v
                for k, v in data.items()
            }
        return data


class Rule(_Strict):
    """A declarative rule: patterns, an optional named validator, context words and examples."""

    id: RuleId
    category: Category
    entity: Annotated[str, StringConstraints(pattern=r"^[A-Z][A-Z0-9_]*$")]
    severity: Severity
    description: str = Field(min_length=1)
    roles: list[Role] = Field(default_factory=lambda: list(ALL_ROLES), min_length=1)
    #: Base language subtags this rule applies to; ``["*"]`` = every message, whatever its language.
    languages: list[str] = Field(default_factory=lambda: ["*"], min_length=1)
    #: Where the rule's matchers come from: its own ``patterns``, the configured canary strings,
    #: or word-shingle overlap with the registered system prompts (see ``PromptRegistry``).
    source: Literal["patterns", "canaries", "system_prompts"] = "patterns"
    patterns: list[Pattern] = Field(default_factory=list)
    validator: str | None = None
    validator_args: dict[str, Any] = Field(default_factory=dict)
    context: list[str] = Field(default_factory=list)
    context_window: int = Field(default=60, ge=0, le=1000)
    context_boost: float = Field(default=0.25, ge=0.0, le=1.0)
    #: When true a match counts only if a context word is near it.
    context_required: bool = False
    mask: MaskStrategy = "partial"
    #: Treat the value as case-insensitive when comparing user and assistant turns.
    compare: Literal["compact", "exact"] = "compact"
    examples: Example

    @model_validator(mode="after")
    def _check(self) -> Rule:
        if self.validator is not None and self.validator not in VALIDATORS:
            known = ", ".join(sorted(VALIDATORS))
            raise ValueError(f"unknown validator {self.validator!r} (known: {known})")
        if self.context_required and not self.context:
            raise ValueError("context_required is set but no context words are given")
        if self.source == "patterns" and not self.patterns:
            raise ValueError("a rule with source 'patterns' needs at least one pattern")
        if self.source != "patterns" and self.patterns:
            raise ValueError(f"a rule with source {self.source!r} takes no patterns")
        names = [p.name for p in self.patterns]
        if len(set(names)) != len(names):
            raise ValueError("pattern names must be unique within a rule")
        return self


class RulePack(_Strict):
    pack: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$")]
    version: int = Field(ge=1)
    description: str = Field(min_length=1)
    rules: list[Rule] = Field(min_length=1)


def _rule_label(raw: Any, loc: tuple[Any, ...]) -> str:
    if len(loc) >= 2 and loc[0] == "rules" and isinstance(loc[1], int):
        try:
            rule_id = raw["rules"][loc[1]].get("id", f"#{loc[1]}")
        except (KeyError, IndexError, TypeError, AttributeError):
            rule_id = f"#{loc[1]}"
        return f"rule {rule_id}"
    return "pack"


def load_pack(path: Path | str) -> RulePack:
    """Load and validate one YAML pack; raise :class:`PackError` naming file and rule."""
    path = Path(path)
    try:
        raw = load_yaml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PackError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise PackError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise PackError(
            f"{path}: a rule pack is a mapping with keys pack, version, description, rules"
        )
    try:
        pack = RulePack.model_validate(raw)
    except ValidationError as exc:
        lines = []
        for err in exc.errors(include_input=False, include_url=False):
            loc = tuple(err["loc"])
            where = ".".join(str(p) for p in loc)
            lines.append(f"{path}: {_rule_label(raw, loc)}: {where}: {err['msg']}")
        raise PackError("\n".join(lines)) from None
    seen: set[str] = set()
    for rule in pack.rules:
        if rule.id in seen:
            raise PackError(f"{path}: rule {rule.id}: duplicate rule id in pack")
        seen.add(rule.id)
    return pack


def load_packs(paths: Iterable[Path | str]) -> list[RulePack]:
    """Load packs from files and folders (``*.yaml``/``*.yml``, sorted); ids unique across all."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted([*p.glob("*.yaml"), *p.glob("*.yml")]))
        elif p.exists():
            files.append(p)
        else:
            raise PackError(f"{p}: no such rule pack file or directory")
    packs: list[RulePack] = []
    owner: dict[str, Path] = {}
    for f in files:
        pack = load_pack(f)
        for rule in pack.rules:
            if rule.id in owner:
                raise PackError(
                    f"{f}: rule {rule.id}: duplicate rule id (also in {owner[rule.id]})"
                )
            owner[rule.id] = f
        packs.append(pack)
    if not packs:
        raise PackError(f"no rule packs found in {', '.join(map(str, paths))}")
    return packs
