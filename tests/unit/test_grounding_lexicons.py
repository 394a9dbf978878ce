"""The grounding lexicons (rules/grounding/*.yaml): every example they carry, and loud errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from services.grounding.medical import LexiconError, load_lexicon, spelling_key
from services.grounding.medical.examples import run_lexicon_examples
from services.grounding.medical.lexicon import DEFAULT_LEXICON_DIR

EXAMPLES = list(run_lexicon_examples(load_lexicon()))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: f"{e.file}:{e.entry}:{e.text[:40]}")
def test_example(example) -> None:
    assert example.ok, example.detail


def test_every_file_has_examples() -> None:
    assert {e.file for e in EXAMPLES} == {
        "drugs.yaml",
        "populations.yaml",
        "medical_cues.yaml",
        "nonclaims.yaml",
        "synonyms.yaml",
        "unasserted.yaml",
    }
    assert {e.entry for e in EXAMPLES if e.file == "synonyms.yaml"} == {"en", "nl", "vi"}
    assert {e.entry for e in EXAMPLES if e.file == "medical_cues.yaml"} == {"en", "nl", "vi"}


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("amoxicilline", "Amoxicillin"),
        ("amoxicilin", "amoxicillin"),
        ("azitromycine", "azithromycin"),
        ("codeïne", "codeine"),
        ("omeprazol", "omeprazole"),
    ],
)
def test_spelling_variants_share_a_key(a: str, b: str) -> None:
    assert spelling_key(a) == spelling_key(b)


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "grounding"
    shutil.copytree(DEFAULT_LEXICON_DIR, target)
    return target


def test_a_broken_file_names_file_and_entry(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    path = folder / "populations.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("key: adult", "key: Adult!"))
    with pytest.raises(LexiconError, match=r"populations\.yaml: populations\.0\.key"):
        load_lexicon(folder)


def test_one_name_for_two_drugs_fails(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    path = folder / "drugs.yaml"
    text = path.read_text(encoding="utf-8").replace("brands: [Advil,", "brands: [Tylenol, Advil,")
    path.write_text(text)
    with pytest.raises(LexiconError, match="Tylenol"):
        load_lexicon(folder)


def test_a_wrong_expectation_is_reported(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    path = folder / "medical_cues.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace(
            '{amount: "4000 mg", basis: day, qualifier: max}',
            '{amount: "5000 mg", basis: day, qualifier: max}',
            1,
        )
    )
    failed = [e for e in run_lexicon_examples(load_lexicon(folder)) if not e.ok]
    assert len(failed) == 1 and "5000 mg" in failed[0].detail
