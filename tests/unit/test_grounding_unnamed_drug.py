"""A passage about a drug no lexicon knows is still a passage about *a* drug: an answer reading
that names no drug is not bound to the one named drug of the other passages when an unnamed
one may be what it is about (issue 10; found on the blind split fresh8, where a brand answer
about an unlisted drug was bound to the distractor's drug and its correct dose called
contradicted). "Zorvatide" and "Belmoxan" are invented names, so that no lexicon will ever
know them."""

from __future__ import annotations

import pytest

from tests.support.grounding_checks import critical
from tests.support.grounding_checks import numbered_report as report

_CASES = {
    "en": (
        [
            "Zorvatide: the usual starting dose is 5 mg twice daily. After three to four weeks "
            "the dose may be increased to 7.5 mg twice daily.",
            "Nebivolol, hypertension: one 5 mg tablet daily.",
        ],
        "Belmoxan is started at 5 mg in the morning and 5 mg in the evening. After about "
        "four weeks your doctor may raise it to 7.5 mg morning and evening.",
        "Belmoxan is started at 5 mg in the morning and 5 mg in the evening. After about "
        "four weeks your doctor may raise it to 10 mg morning and evening.",
    ),
    "nl": (
        [
            "Zorvatide: de gebruikelijke startdosis is 5 mg tweemaal daags. Na drie tot vier "
            "weken kan de dosis worden verhoogd tot 7,5 mg tweemaal daags.",
            "Nebivolol bij hoge bloeddruk: eenmaal daags één tablet van 5 mg.",
        ],
        "U begint met 5 mg 's ochtends en 5 mg 's avonds. Na ongeveer vier weken kan uw arts "
        "dit verhogen tot 7,5 mg tweemaal daags.",
        "U begint met 5 mg 's ochtends en 5 mg 's avonds. Na ongeveer vier weken kan uw arts "
        "dit verhogen tot 10 mg tweemaal daags.",
    ),
    "vi": (
        [
            "Zorvatide: liều khởi đầu thường dùng là 5 mg x 2 lần/ngày. Sau 3 đến 4 tuần có thể "
            "tăng lên 7,5 mg x 2 lần/ngày.",
            "Nebivolol điều trị tăng huyết áp: 5 mg x 1 lần/ngày.",
        ],
        "Bạn bắt đầu với 5 mg x 2 lần/ngày. Sau khoảng 4 tuần bác sĩ có thể tăng lên 7,5 mg "
        "x 2 lần/ngày.",
        "Bạn bắt đầu với 5 mg x 2 lần/ngày. Sau khoảng 4 tuần bác sĩ có thể tăng lên 10 mg "
        "x 2 lần/ngày.",
    ),
}


@pytest.mark.parametrize("language", sorted(_CASES))
def test_a_drugless_answer_is_not_bound_to_the_one_named_drug(language: str) -> None:
    passages, right, _ = _CASES[language]
    got = report(right, passages, language)
    bound = {d for c in got.claims for m in (c.medical or []) for d in m.reading.drugs}
    assert "nebivolol" not in bound
    assert not critical(got)


@pytest.mark.parametrize("language", sorted(_CASES))
def test_the_wrong_step_up_is_still_caught(language: str) -> None:
    passages, _, wrong = _CASES[language]
    got = report(wrong, passages, language)
    assert got.ungrounded != [] and critical(got)
