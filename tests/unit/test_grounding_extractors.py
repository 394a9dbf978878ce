"""Extractor packs: every example of every bundled extractor, and packs that must not load."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.events import Claim
from services.grounding.extractors import (
    ExtractorError,
    load_extractors,
    load_pack,
    run_examples,
)
from services.grounding.facts import FactRegistry

BUNDLED = list(run_examples(load_extractors()))


def test_bundled_packs_have_examples_for_every_language() -> None:
    extractors = load_extractors()
    languages = {lang for p in extractors.packs for e in p.extractors for lang in e.languages}
    assert {"en", "nl", "vi"} <= languages
    assert {r.kind for r in BUNDLED} == {"match", "no_match"}


@pytest.mark.parametrize(
    "result", BUNDLED, ids=[f"{r.extractor_id}:{r.kind}:{r.text[:40]}" for r in BUNDLED]
)
def test_bundled_example(result: object) -> None:
    assert result.ok, result.detail  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "language", "value"),
    [
        ("the maximum daily dose of paracetamol is 4 g", "en", "4 g"),
        ("maximaal 4 gram paracetamol per dag", "nl", "4 g"),
        ("liều tối đa của paracetamol là 4 g mỗi ngày", "vi", "4 g"),
        ("the maximum daily dose of paracetamol is 4000 mg", "en", "4 g"),
        ("the maximum daily dose of paracetamol is 4,0 g", "en", "4 g"),
        ("the maximum daily dose of paracetamol is 3 g", "en", "3 g"),
    ],
)
def test_values_take_the_registry_form(text: str, language: str, value: str) -> None:
    registry = FactRegistry.load()
    claims = load_extractors().extract(text, language, registry)
    assert claims == [Claim(entity="paracetamol", attribute="max_daily_dose_adult", value=value)]
    status = registry.check(claims[0]).status
    assert status == ("supported" if value == "4 g" else "contradicted")


def test_language_selects_extractors() -> None:
    extractors = load_extractors()
    text = "maximaal 4 gram paracetamol per dag"
    assert extractors.extract(text, "en") == []
    assert len(extractors.extract(text, "nl")) == 1
    assert len(extractors.extract(text, None)) == 1


GOOD = """
pack: t
version: 1
description: test
extractors:
  - id: dose.t
    description: d
    languages: [en]
    attribute: a
    patterns:
      - name: p
        regex: '(?P<entity>\\pL+) (?P<value>{quantity})'
    examples:
      match:
        - text: paracetamol 4 g
          claim: {entity: paracetamol, attribute: a, value: 4 g}
      no_match: [paracetamol]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pack.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_minimal_pack_loads(tmp_path: Path) -> None:
    pack = load_pack(write(tmp_path, GOOD))
    assert [e.id for e in pack.extractors] == ["dose.t"]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "(?P<entity>\\\\pL+)",
            "(?P<entity>\\\\pL+",
            "extractor dose.t: extractors.0: Value error, pattern 'p' is not valid RE2",
        ),
        ("(?P<entity>\\\\pL+)", "(\\\\pL+)", "lacks the named group(s) entity"),
        ("    attribute: a\n", "", "lacks the named group(s) attribute"),
        ("id: dose.t", "id: Dose", "extractor Dose: extractors.0.id"),
        ("      no_match: [paracetamol]\n", "", "examples.no_match"),
        ("languages: [en]", "languages: []", "languages"),
        ("version: 1", "version: 0", "pack: version"),
        ("    attribute: a\n", "    attribute: a\n    colour: red\n", "colour: Extra inputs"),
    ],
)
def test_broken_packs_name_file_and_extractor(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    text = GOOD.replace(old.replace("\\\\", "\\"), new.replace("\\\\", "\\"))
    assert text != GOOD
    path = write(tmp_path, text)
    with pytest.raises(ExtractorError) as err:
        load_pack(path)
    assert str(path) in str(err.value)
    assert message in str(err.value)


def test_duplicate_ids_and_missing_paths(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD, encoding="utf-8")
    (tmp_path / "b.yaml").write_text(GOOD.replace("pack: t", "pack: u"), encoding="utf-8")
    with pytest.raises(ExtractorError, match="duplicate id"):
        load_extractors([tmp_path])
    with pytest.raises(ExtractorError, match="no such extractor pack"):
        load_extractors([tmp_path / "nope"])
    (tmp_path / "b.yaml").write_text("pack: [", encoding="utf-8")
    with pytest.raises(ExtractorError, match="not valid YAML"):
        load_pack(tmp_path / "b.yaml")


def test_failing_example_is_reported(tmp_path: Path) -> None:
    text = GOOD.replace("value: 4 g}", "value: 5 g}")
    extractors = load_extractors([write(tmp_path, text)])
    results = list(run_examples(extractors))
    assert [r.ok for r in results] == [False, True]
    assert "expected" in results[0].detail


def test_not_entities_and_aliases() -> None:
    extractors = load_extractors()
    assert extractors.extract("the maximum daily dose of this is 4 g", "en") == []
    (claim,) = extractors.extract("the maximum daily dose of Acetaminophen is 4 g", "en")
    assert claim.entity == "paracetamol"
