"""The detection-quality gate: every claimed entity keeps precision and recall ≥ 0.95 on the
public labelled corpora, and docs/detection-quality.md shows the current numbers.

Regenerate the document after changing a pack or the engine:
``python benchmarks/detection_quality.py --write docs/detection-quality.md``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.detection_quality import (
    CLAIMED,
    THRESHOLD,
    Report,
    default_corpora,
    default_engine,
    measure,
)

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "detection-quality.md"
CORPORA = default_corpora(REPO)

pytestmark = pytest.mark.skipif(
    not (CORPORA / "presidio_synth_pii").is_dir(), reason=f"corpora not found at {CORPORA}"
)


@pytest.fixture(scope="module")
def report() -> Report:
    return measure(CORPORA, default_engine(REPO))


@pytest.mark.parametrize("entity", list(CLAIMED))
def test_claimed_entity_meets_the_bar(report: Report, entity: str) -> None:
    t = report.claimed[entity]
    assert t.tp + t.fn > 0, f"{entity}: no labelled positives left to measure"
    assert t.precision >= THRESHOLD, f"{entity}: precision {t.precision:.3f} (FP {t.fp})"
    assert t.recall >= THRESHOLD, f"{entity}: recall {t.recall:.3f} (FN {t.fn})"


def test_no_failures_reported(report: Report) -> None:
    assert report.failures() == []


def test_every_exclusion_has_a_reason(report: Report) -> None:
    excluded = [d for d in report.disagreements if d.kind == "excluded"]
    assert excluded, "the corpora hold labels outside our claims; none were found"
    assert all(d.why for d in excluded)


def test_the_document_shows_the_current_numbers(report: Report) -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "python benchmarks/detection_quality.py --write docs/detection-quality.md" in text
    for entity in CLAIMED:
        t, r = report.claimed[entity], report.raw[entity]
        row = re.search(rf"^\| {re.escape(entity)} \|.*$", text, re.MULTILINE)
        assert row, f"{entity} missing from {DOC.name}"
        cells = [c.strip() for c in row.group(0).strip("|").split("|")]
        expected = [str(t.cases), str(t.tp), str(t.fp), str(t.fn)]
        expected += [
            f"{t.precision:.3f}",
            f"{t.recall:.3f}",
            f"{r.precision:.3f}",
            f"{r.recall:.3f}",
        ]
        assert cells[2:10] == expected, f"{DOC.name} is stale for {entity}: regenerate it"


def test_the_echo_measurement_runs_and_memory_finds_every_echo() -> None:
    """The document's echo section: with the conversation memory every echoed value is found and
    no other number is taken for an echo (a small run; the document uses 400 pairs)."""
    from benchmarks.detection_quality import echo_check

    rows = echo_check(REPO, n=6)
    assert rows
    for row in rows:
        assert row.pairs == 6 and row.with_memory == 6, row
        assert row.false_echoes == 0, row
