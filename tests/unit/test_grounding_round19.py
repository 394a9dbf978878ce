"""The mechanisms of the nineteenth round (issue 10): statements the claim check read wrongly
in fresh16's answers, in sentences of our own in English, Dutch and Vietnamese, with invented
brand names (Lyrex, Tavomin), and for every rule a twin with a wrong value that must still be
flagged."""

from __future__ import annotations

import pytest

from tests.support.grounding_checks import critical
from tests.support.grounding_checks import numbered_report as report

# --- a recommendation beside a negated dose change is about the change ---------------------

_NO_CHANGE = [
    (
        [
            "Lyrex 50 mg tablets: one tablet once daily. No dose adjustment is recommended in "
            "mild or moderate renal impairment."
        ],
        "With moderate kidney disease you must not take Lyrex.",
        "With moderate kidney disease Lyrex can be used; the dose does not need to be lowered.",
        "en",
    ),
    (
        [
            "Lyrex 50 mg tabletten: eenmaal daags 1 tablet. Bij een licht of matig verminderde "
            "nierfunctie wordt geen dosisaanpassing aanbevolen."
        ],
        "Met een matig verminderde nierfunctie mag u Lyrex niet gebruiken.",
        "Met een matig verminderde nierfunctie mag u Lyrex gewoon gebruiken; de dosis hoeft "
        "niet omlaag.",
        "nl",
    ),
    (
        [
            "Lyrex 50 mg: uống 1 viên mỗi ngày một lần. Không khuyến cáo điều chỉnh liều ở người "
            "suy thận nhẹ hoặc vừa."
        ],
        "Người suy thận vừa không được dùng Lyrex.",
        "Người suy thận vừa vẫn có thể dùng Lyrex, không cần giảm liều.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passages", "flipped", "right", "language"), _NO_CHANGE)
def test_no_dose_adjustment_recommended_allows_the_use(
    passages: list[str], flipped: str, right: str, language: str
) -> None:
    assert critical(report(flipped, passages, language))
    assert not critical(report(right, passages, language))
