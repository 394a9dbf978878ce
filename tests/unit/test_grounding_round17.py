"""The mechanisms of the seventeenth round (issue 10): brands a passage binds to a drug by
brackets, and a negated stop read beside a dose. Own sentences in English, Dutch and
Vietnamese, with invented brand names (Qix, Vel-Dor, Brivan), and for every rule a must-pass
twin that must still pass."""

from __future__ import annotations

import pytest

from services.grounding.medical import load_lexicon
from services.grounding.medical.names import bracket_names
from services.grounding.tokens import tokenize
from tests.support.grounding_checks import critical
from tests.support.grounding_checks import numbered_report as report

# --- a brand bound by brackets ---------------------------------------------------------------

#: two passages (a brand of ibuprofen, a brand of naproxen), the naproxen dose under the
#: ibuprofen brand (wrong drug) and the brand's own dose (right)
_BRANDS = [
    (
        [
            "Vel-Dor (ibuprofen 200 mg). Adults: 200 mg three times a day.",
            "Brivan 250 mg (naproxen), for pain: adults 250 mg twice a day.",
        ],
        "Vel-Dor is taken as 250 mg twice a day.",
        "Vel-Dor is taken as 200 mg three times a day.",
        "en",
    ),
    (
        [
            "Qix (ibuprofen 200 mg) tabletten. Volwassenen: 200 mg driemaal daags.",
            "Brivan 250 mg (naproxen) bij pijn: volwassenen 250 mg tweemaal daags.",
        ],
        "Qix neemt u in als 250 mg tweemaal daags.",
        "Qix neemt u in als 200 mg driemaal daags.",
        "nl",
    ),
    (
        [
            "Qix (ibuprofen 200 mg). Người lớn: 200 mg x 3 lần/ngày.",
            "Brivan 250 mg (naproxen), giảm đau: người lớn 250 mg x 2 lần/ngày.",
        ],
        "Qix uống 250 mg mỗi lần, ngày 2 lần.",
        "Qix uống 200 mg mỗi lần, ngày 3 lần.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "wrong", "right", "language"), _BRANDS)
def test_a_bracketed_brand_names_its_drug(
    passages: list[str], wrong: str, right: str, language: str
) -> None:
    assert critical(report(wrong, passages, language))
    assert not report(right, passages, language).ungrounded


@pytest.mark.parametrize(
    ("sentence", "language", "expected"),
    [
        ("K-Lix (ibuprofen 200 mg).", "en", {"lix": "ibuprofen"}),
        ("Qix 8 mg (naproxen), giảm đau.", "vi", {"qix": "naproxen"}),
        ("Naproxen (Brivan) 250 mg tabletten.", "nl", {"brivan": "naproxen"}),
        # near misses: no strength by the brackets, a heading word, a population
        ("Qix (ibuprofen) is taken with food.", "en", {}),
        ("Dosering (ibuprofen 200 mg).", "nl", {}),
        ("Adults (ibuprofen 200 mg).", "en", {}),
        ("Liều dùng (ibuprofen 200 mg).", "vi", {}),
    ],
)
def test_bracket_names(sentence: str, language: str, expected: dict[str, str]) -> None:
    assert bracket_names(tokenize(sentence), language, load_lexicon()) == expected


# --- a negated stop beside a dose ------------------------------------------------------------

#: a passage that says stop before surgery, an answer that says no need to stop and gives the
#: dose (polarity flip); a passage that says no need to stop, the same answer (right)
_STOPS = [
    (
        "Stop clopidogrel 7 days before surgery. Adults: 75 mg once a day.",
        "You do not need to stop clopidogrel before surgery. Adults: 75 mg once a day.",
        "There's no need to stop clopidogrel before the surgery, just keep taking 75 mg a day.",
        "en",
    ),
    (
        "Stop 7 dagen voor een operatie met clopidogrel. Volwassenen: 75 mg eenmaal daags.",
        "U hoeft niet te stoppen met clopidogrel voor een operatie. Volwassenen: 75 mg eenmaal "
        "daags.",
        "U hoeft niet te stoppen met clopidogrel voor de operatie, neem 75 mg eenmaal daags.",
        "nl",
    ),
    (
        "Ngừng clopidogrel 7 ngày trước khi phẫu thuật. Người lớn: 75 mg mỗi ngày một lần.",
        "Không cần ngừng clopidogrel trước khi phẫu thuật. Người lớn: 75 mg mỗi ngày một lần.",
        "Không cần ngừng clopidogrel trước khi phẫu thuật, cứ uống 75 mg mỗi ngày một lần.",
        "vi",
    ),
]


@pytest.mark.parametrize(("stop", "keep", "answer", "language"), _STOPS)
def test_a_negated_stop_beside_a_dose_is_a_safety_claim(
    stop: str, keep: str, answer: str, language: str
) -> None:
    assert critical(report(answer, [stop], language))
    assert not report(answer, [keep], language).ungrounded
