"""Values the assistant repeats bare are found through the conversation memory.

"Mijn BSN is 123456782" fires pii.nl_bsn (a BSN word); "Genoteerd: 123456782." has no BSN word,
so no rule fires on it. The screening stage looks the answer's numbers and tokens up in the
conversation memory by keyed hash (never a value) and reports an ``echo`` of the rule that found
the value. A number the user never gave stays unreported. Measured on constructed conversations
in docs/detection-quality.md ("Values repeated bare in answers").
"""

from __future__ import annotations

from pathlib import Path

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from services.screening.stage import repeat_candidates
from tests.unit.test_reorder import directions, ev, scan


def test_a_value_repeated_bare_is_found_through_the_memory(tmp_path: Path) -> None:
    rows = [
        ev("u0", 0, "user", "Mijn BSN is 123456782, kunt u mijn recept opzoeken?", 0),
        ev("a1", 1, "assistant", "Genoteerd: 123456782. Ik zoek het recept op.", 1),
        ev("a2", 2, "assistant", "Uw ordernummer is 111222333.", 2),  # never given: no finding
        ev("u3", 3, "user", "bel me op 06 1234 5678", 3),
        ev("a4", 4, "assistant", "Ik bel 06-12345678 straks.", 4),  # found by its rule anyway
    ]
    found, _ = scan(tmp_path, rows)
    [bare] = [f for f in found if f.event_id == "a1"]
    assert (bare.rule_id, bare.entity, bare.direction) == ("pii.nl_bsn", "NL_BSN", "echo")
    assert "123456782" not in bare.evidence and "keyed hash" in bare.explanation
    assert [f for f in found if f.event_id == "a2"] == []
    assert directions(found, "a4") == ["echo"]


def test_repeat_candidates_are_number_runs_and_tokens_with_digits() -> None:
    text = "Bệnh nhân: 123456782. Gọi 06 1234 5678 lúc 14:00, mã AB12CD34EF, 500 mg, v1.2.3"
    spans = {text[a:b] for a, b in repeat_candidates(text)}
    assert {"123456782", "06 1234 5678", "1234 5678", "AB12CD34EF"} <= spans
    assert not spans & {"14", "500", "1.2.3", "14:00"}


def _reference_candidates(text: str) -> list[tuple[int, int]]:
    """The candidates as RE2 defines them (the patterns ``repeat_candidates`` stands for)."""
    runs = re2.compile(r"\d+(?:[ .\-/]\d+)*")
    group = re2.compile(r"\d+")
    token = re2.compile(r"[A-Za-z0-9][A-Za-z0-9_\-]{7,}")
    out = []
    for run in runs.finditer(text):
        groups = [(run.start() + g.start(), run.start() + g.end()) for g in group.finditer(run[0])]
        for i in range(len(groups)):
            digits = 0
            for j in range(i, min(i + 6, len(groups))):
                digits += groups[j][1] - groups[j][0]
                if digits > 34:
                    break
                if digits >= 6:
                    out.append((groups[i][0], groups[j][1]))
    for tok in token.finditer(text):
        if any(ch.isdigit() for ch in tok[0]) and not tok[0].isdigit():
            out.append(tok.span())
    return out


#: Digits, the run separators, token characters and their neighbours, non-ASCII digits and
#: letters (which neither pattern may take), and multi-byte characters that move offsets.
_ALPHABET = "0123456789 .-/_aZkx,:;+\n\té ệ٣１€😀"


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=120))
def test_repeat_candidates_are_what_the_re2_patterns_define(text: str) -> None:
    assert list(repeat_candidates(text)) == _reference_candidates(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1234567",
        "06 1234 5678",
        "1--2 3..4 5 -6 7/ 8",
        "NL91 ABNA 0417 1643 00, 4111-1111-1111-1111 en 123.456.789",
        "__ab12cd34ef-- -_-_-_-_-_1 a1234567 abc_defgh1 ____________ ab-cd-ef-gh-1",
        "١٢٣٤٥٦٧٨ １２３４５６７８ 12345678 Bệnh nhân 0912 345 678 😀 AB12CD34EF",
        "9" * 40 + " " + "1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8",
    ],
)
def test_repeat_candidates_edge_cases(text: str) -> None:
    assert list(repeat_candidates(text)) == _reference_candidates(text)
