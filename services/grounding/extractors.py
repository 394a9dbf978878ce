"""Claim extractors: YAML packs of RE2 patterns that turn answer text into structured claims.

A pack (``rules/extractors/*.yaml``) holds extractors; each has an ``id``, ``languages``, RE2
``patterns`` with the named groups ``entity`` and ``value`` (and ``attribute``, unless the
extractor fixes ``attribute:``), and its own ``examples`` (``match`` with the expected claim,
``no_match`` with near misses) that :func:`run_examples` checks. ``{quantity}`` in a pattern
stands for a number with a unit (:data:`~services.grounding.quantities.QUANTITY_PATTERN`).

Normalisation, so that exact matching against the registry means something:

- ``entity``: lower case, then the pack's ``aliases`` (``acetaminophen`` → ``paracetamol``); a
  word in the pack's ``not_entities`` (``this``, ``het``, ``thuốc``) drops the match;
- ``value`` (``value: quantity``): parsed as one number with a unit; when the registry holds a
  value for the pair that is the same amount (``4000 mg`` vs ``4 g``), that string is used,
  otherwise the number as written with the unit's symbol (``4 gram`` → ``4 g``, ``2,5 mg`` →
  ``2.5 mg``, ``6 uur`` → ``6 hours``). ``value: text`` keeps the text, lower-cased.

A broken pack raises :class:`ExtractorError` naming the file and the extractor id.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import re2
import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StringConstraints,
    ValidationError,
    model_validator,
)

from schemas.events import Claim
from services.grounding.facts import FactRegistry
from services.grounding.quantities import QUANTITY_PATTERN, parse_value
from services.yamlload import safe_load as load_yaml

__all__ = [
    "DEFAULT_EXTRACTORS_DIR",
    "ExampleResult",
    "Extractor",
    "ExtractorError",
    "ExtractorPack",
    "ExtractorSet",
    "load_extractors",
    "run_examples",
]

DEFAULT_EXTRACTORS_DIR: Final = Path(__file__).resolve().parents[2] / "rules" / "extractors"
ExtractorId = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")]
Name = Annotated[str, StringConstraints(min_length=1, max_length=200)]


class ExtractorError(ValueError):
    """An extractor pack is invalid. The message names the file and, where known, the extractor."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def expand(regex: str) -> str:
    """Replace the ``{quantity}`` placeholder by the quantity pattern."""
    return regex.replace("{quantity}", f"(?:{QUANTITY_PATTERN})")


class ExtractorPattern(_Strict):
    name: str = Field(min_length=1)
    regex: str = Field(min_length=1)


class ExpectedClaim(_Strict):
    entity: Name
    attribute: Name
    value: Name


class MatchExample(_Strict):
    text: str = Field(min_length=1)
    claim: ExpectedClaim
    language: str | None = None


class NoMatchExample(_Strict):
    text: str = Field(min_length=1)
    language: str | None = None


class Examples(_Strict):
    match: list[MatchExample] = Field(min_length=1)
    no_match: list[NoMatchExample] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _strings(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("no_match"), list):
            items = [{"text": i} if isinstance(i, str) else i for i in data["no_match"]]
            return {**data, "no_match": items}
        return data


class Extractor(_Strict):
    """Patterns that yield ``{entity, attribute, value}`` claims, with their own examples."""

    id: ExtractorId
    description: str = Field(min_length=1)
    #: Base language subtags; ``["*"]`` = any language.
    languages: list[str] = Field(min_length=1)
    #: The attribute of every claim, unless the patterns capture an ``attribute`` group.
    attribute: Name | None = None
    value: Literal["quantity", "text"] = "quantity"
    patterns: list[ExtractorPattern] = Field(min_length=1)
    examples: Examples
    _compiled: list[Any] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> Extractor:
        names = [p.name for p in self.patterns]
        if len(set(names)) != len(names):
            raise ValueError("pattern names must be unique within an extractor")
        compiled = []
        for pat in self.patterns:
            try:
                regex = re2.compile(expand(pat.regex))
            except re2.error as exc:
                raise ValueError(f"pattern {pat.name!r} is not valid RE2: {exc}") from None
            groups = set(regex.groupindex)
            needed = {"entity", "value"} | ({"attribute"} if self.attribute is None else set())
            if not needed <= groups:
                missing = ", ".join(sorted(needed - groups))
                raise ValueError(f"pattern {pat.name!r} lacks the named group(s) {missing}")
            if self.attribute is not None and "attribute" in groups:
                raise ValueError(f"pattern {pat.name!r} captures attribute, but it is fixed")
            compiled.append(regex)
        self._compiled = compiled
        return self

    def applies(self, language: str | None) -> bool:
        return language is None or "*" in self.languages or language in self.languages


class ExtractorPack(_Strict):
    pack: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$")]
    version: int = Field(ge=1)
    description: str = Field(min_length=1)
    #: Lower-case entity spellings → the registry's entity.
    aliases: dict[str, str] = Field(default_factory=dict)
    #: Captured "entities" that are not one (``this``, ``het``, ``thuốc``): the match is dropped.
    not_entities: list[str] = Field(default_factory=list)
    extractors: list[Extractor] = Field(min_length=1)


@dataclass(frozen=True, slots=True)
class _Hit:
    start: int
    claim: Claim


class ExtractorSet:
    """Loaded packs; :meth:`extract` is a pure function of text, language and registry."""

    def __init__(self, packs: Sequence[ExtractorPack] = ()) -> None:
        self.packs = list(packs)
        seen: set[str] = set()
        for pack in self.packs:
            for ex in pack.extractors:
                if ex.id in seen:
                    raise ExtractorError(f"duplicate extractor id {ex.id!r}")
                seen.add(ex.id)
        #: Every extractor with its pack and compiled patterns, read once (a model's private
        #: attribute is a slow lookup, per answer and extractor).
        self._runs = [
            (pack, ex, list(ex._compiled)) for pack in self.packs for ex in pack.extractors
        ]

    @property
    def ids(self) -> list[str]:
        return [ex.id for pack in self.packs for ex in pack.extractors]

    def extract(
        self, text: str, language: str | None, registry: FactRegistry | None = None
    ) -> list[Claim]:
        """Every claim the applicable extractors find, in text order, without duplicates."""
        text = unicodedata.normalize("NFC", text)
        hits: list[_Hit] = []
        for pack, ex, compiled in self._runs:
            if ex.applies(language):
                hits.extend(_run(pack, ex, compiled, text, language, registry))
        hits.sort(key=lambda h: h.start)
        unique: dict[Claim, None] = {}
        for hit in hits:
            unique.setdefault(hit.claim, None)
        return list(unique)


def _group(match: Any, regex: Any, name: str) -> str:
    return str(match.group(regex.groupindex[name]) or "")


def _run(
    pack: ExtractorPack,
    ex: Extractor,
    compiled: list[Any],
    text: str,
    language: str | None,
    registry: FactRegistry | None,
) -> Iterator[_Hit]:
    for regex in compiled:
        for m in regex.finditer(text):
            entity = " ".join(_group(m, regex, "entity").lower().split())
            if not entity or entity in pack.not_entities:
                continue
            entity = pack.aliases.get(entity, entity)
            attribute = ex.attribute or " ".join(_group(m, regex, "attribute").split())
            raw_value = _group(m, regex, "value")
            value = _normalise_value(ex, entity, attribute, raw_value, language, registry)
            if value is None or not attribute or len(entity) > 200 or len(attribute) > 200:
                continue
            yield _Hit(m.start(), Claim(entity=entity, attribute=attribute, value=value))


def _normalise_value(
    ex: Extractor,
    entity: str,
    attribute: str,
    raw: str,
    language: str | None,
    registry: FactRegistry | None,
) -> str | None:
    if ex.value == "text":
        value = " ".join(raw.lower().split())
        return value if value and len(value) <= 200 else None
    quantity = parse_value(raw, language)
    if quantity is None:
        return None
    if registry is not None:
        for registered in sorted(registry.values(entity, attribute)):
            other = parse_value(registered)
            if other is not None and other.key == quantity.key:
                return registered
    return quantity.display


def _label(raw: Any, loc: tuple[Any, ...]) -> str:
    if len(loc) >= 2 and loc[0] == "extractors" and isinstance(loc[1], int):
        try:
            return f"extractor {raw['extractors'][loc[1]].get('id', f'#{loc[1]}')}"
        except (KeyError, IndexError, TypeError, AttributeError):
            return f"extractor #{loc[1]}"
    return "pack"


def load_pack(path: Path | str) -> ExtractorPack:
    """Load and validate one YAML pack; raise :class:`ExtractorError` naming file and id."""
    path = Path(path)
    try:
        raw = load_yaml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ExtractorError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ExtractorError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ExtractorError(f"{path}: an extractor pack is a mapping (pack, version, ...)")
    try:
        pack = ExtractorPack.model_validate(raw)
    except ValidationError as exc:
        lines = [
            f"{path}: {_label(raw, tuple(e['loc']))}: "
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors(include_input=False, include_url=False)
        ]
        raise ExtractorError("\n".join(lines)) from None
    seen: set[str] = set()
    for ex in pack.extractors:
        if ex.id in seen:
            raise ExtractorError(f"{path}: extractor {ex.id}: duplicate id in pack")
        seen.add(ex.id)
    return pack


def load_extractors(paths: Iterable[Path | str] | None = None) -> ExtractorSet:
    """Load packs from files and folders (default ``rules/extractors/``); ids unique across all."""
    files: list[Path] = []
    for p in map(Path, [DEFAULT_EXTRACTORS_DIR] if paths is None else paths):
        if p.is_dir():
            files.extend(sorted([*p.glob("*.yaml"), *p.glob("*.yml")]))
        elif p.is_file():
            files.append(p)
        else:
            raise ExtractorError(f"{p}: no such extractor pack file or directory")
    owner: dict[str, Path] = {}
    packs: list[ExtractorPack] = []
    for f in files:
        pack = load_pack(f)
        for ex in pack.extractors:
            if ex.id in owner:
                raise ExtractorError(
                    f"{f}: extractor {ex.id}: duplicate id (also in {owner[ex.id]})"
                )
            owner[ex.id] = f
        packs.append(pack)
    return ExtractorSet(packs)


@dataclass(frozen=True, slots=True)
class ExampleResult:
    pack: str
    extractor_id: str
    kind: Literal["match", "no_match"]
    text: str
    ok: bool
    detail: str


def run_examples(extractors: ExtractorSet) -> Iterator[ExampleResult]:
    """Run every extractor's own examples, each extractor alone and without a registry."""
    for pack in extractors.packs:
        for ex in pack.extractors:
            alone = ExtractorSet([pack.model_copy(update={"extractors": [ex]})])
            default_language = None if "*" in ex.languages else ex.languages[0]
            for good in ex.examples.match:
                want = Claim(**good.claim.model_dump())
                got = alone.extract(good.text, good.language or default_language)
                ok = want in got
                found = [c.model_dump() for c in got]
                detail = "found" if ok else f"expected {want.model_dump()}, got {found}"
                yield ExampleResult(pack.pack, ex.id, "match", good.text, ok, detail)
            for bad in ex.examples.no_match:
                got = alone.extract(bad.text, bad.language or default_language)
                detail = "no claim" if not got else f"unexpected {[c.model_dump() for c in got]}"
                yield ExampleResult(pack.pack, ex.id, "no_match", bad.text, not got, detail)
