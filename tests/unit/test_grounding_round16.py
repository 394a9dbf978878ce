"""The mechanisms of the sixteenth round (issue 10): how findings are decided for sentences of
general advice, and a negated reason read as a scope. Own sentences in English, Dutch and
Vietnamese, with invented drug names (zorvatil, Velmora) where no lexicon is needed, and for
every rule a must-flag twin that must still be caught."""

from __future__ import annotations

import pytest

from services.grounding.claims import atomic_claims
from tests.support.grounding_checks import critical
from tests.support.grounding_checks import numbered_report as report

# --- general advice in an anchored answer ----------------------------------------------------

#: passage, a grounded dose sentence, general advice in other words, the same advice with a
#: proper name, with a number no passage holds, and with a condition
_GENERAL = [
    (
        "Zorvatil 20 mg tablets: adults take 20 mg once a day. Take the tablet with a glass of "
        "water.",
        "Adults take 20 mg of zorvatil once a day.",
        "It usually starts to help within a few hours.",
        "It is also sold as Velmora.",
        "It usually starts to help within 3 hours.",
        "It also helps people with asthma.",
        "en",
    ),
    (
        "Zorvatil 20 mg tabletten: volwassenen nemen 20 mg eenmaal daags. Neem de tablet in "
        "met een glas water.",
        "Volwassenen nemen 20 mg zorvatil eenmaal daags.",
        "Meestal merkt u binnen een paar uur verschil.",
        "Het is ook te koop als Velmora.",
        "Meestal merkt u binnen 3 uur verschil.",
        "Het helpt ook mensen met astma.",
        "nl",
    ),
    (
        "Zorvatil 20 mg: người lớn uống 20 mg mỗi ngày một lần. Uống viên thuốc với một cốc nước.",
        "Người lớn uống 20 mg zorvatil mỗi ngày một lần.",
        "Thường sau vài giờ bạn sẽ thấy dễ chịu hơn.",
        "Thuốc này còn được bán với tên Velmora.",
        "Thường sau 3 giờ bạn sẽ thấy dễ chịu hơn.",
        "Thuốc cũng giúp người bị hen suyễn.",
        "vi",
    ),
]


@pytest.mark.parametrize(
    ("passage", "dose", "advice", "named", "numbered", "condition", "language"), _GENERAL
)
def test_general_advice_beside_a_grounded_claim_is_no_finding(
    passage: str,
    dose: str,
    advice: str,
    named: str,
    numbered: str,
    condition: str,
    language: str,
) -> None:
    (claim,) = atomic_claims(advice, language)
    assert claim.kind == "other" and claim.general
    assert not report(f"{dose} {advice}", [passage], language).ungrounded
    # must-flag twins: the advice alone (nothing anchors the answer), and advice that names
    # something or holds a number no passage has, beside the same grounded dose
    assert report(advice, [passage], language).ungrounded
    for specific in (named, numbered, condition):
        (claim,) = atomic_claims(specific, language)
        assert not claim.general, specific
        assert report(f"{dose} {specific}", [passage], language).ungrounded == [specific]


@pytest.mark.parametrize(
    ("passage", "dose", "advice", "language"), [(p, d, a, lang) for p, d, a, *_, lang in _GENERAL]
)
def test_a_wrong_dose_does_not_anchor_the_answer(
    passage: str, dose: str, advice: str, language: str
) -> None:
    wrong = dose.replace("20 mg", "40 mg")
    checked = report(f"{wrong} {advice}", [passage], language)
    assert critical(checked)
    assert advice in checked.ungrounded


_DECLINING = [
    ("I can't tell you which dose suits you.", "Keep the box with you when you go.", "en"),
    ("Dat kan ik niet voor u beoordelen.", "Houd het doosje bij u als u gaat.", "nl"),
    ("Mình không thể trả lời câu hỏi này.", "Hãy luôn mang theo hộp thuốc bên mình.", "vi"),
]


@pytest.mark.parametrize(("declines", "advice", "language"), _DECLINING)
def test_general_advice_in_an_answer_that_declines_is_no_finding(
    declines: str, advice: str, language: str
) -> None:
    passage = _GENERAL[["en", "nl", "vi"].index(language)][0]
    assert not report(f"{declines} {advice}", [passage], language).ungrounded
    # the twin: the same advice without the abstention is flagged, and an amount beside the
    # abstention is still checked
    assert report(advice, [passage], language).ungrounded
    assert critical(report(f"{declines} Take 60 mg of zorvatil a day.", [passage], "en"))


def test_general_advice_with_nothing_retrieved_is_not_grounded() -> None:
    assert report("I can't tell you. Keep the box with you.", [], "en").ungrounded


# --- a bare negated reason scopes over its clause ---------------------------------------------

_NO_REASON = [
    ("There's no reason you would need to stop {drug} in pregnancy.", "en"),
    ("Er is geen reden dat u in de zwangerschap met {drug} zou moeten stoppen.", "nl"),
    ("Không có lý do gì mà bạn phải ngừng {drug} khi mang thai.", "vi"),
]
_PASSAGES = {
    "en": ("Paracetamol can be used during pregnancy.", "Do not use isotretinoin in pregnancy."),
    "nl": (
        "Paracetamol mag tijdens de zwangerschap worden gebruikt.",
        "Gebruik isotretinoïne niet tijdens de zwangerschap.",
    ),
    "vi": (
        "Có thể dùng paracetamol khi mang thai.",
        "Không dùng isotretinoin khi mang thai.",
    ),
}


@pytest.mark.parametrize(("template", "language"), _NO_REASON)
def test_no_reason_to_stop_is_a_permission(template: str, language: str) -> None:
    allowed, forbidden = _PASSAGES[language]
    assert not report(template.format(drug="paracetamol"), [allowed], language).ungrounded
    # the must-flag twin: the same permission against a passage that forbids the use
    assert critical(report(template.format(drug="isotretinoin"), [forbidden], language))


#: a second sentence of general advice in other words, per language
_MORE_ADVICE = {
    "en": "Most people find it easy to fit into their routine.",
    "nl": "De meeste mensen kunnen het makkelijk inpassen in hun dag.",
    "vi": "Hầu hết mọi người đều dễ dàng quen với việc này.",
}


@pytest.mark.parametrize(
    ("passage", "dose", "advice", "language"), [(p, d, a, lang) for p, d, a, *_, lang in _GENERAL]
)
def test_general_advice_does_not_hide_an_answer_mostly_outside_its_passages(
    passage: str, dose: str, advice: str, language: str
) -> None:
    """One grounded sentence anchors one sentence of general advice (half the answer), not two:
    an answer whose sentences are mostly not in its passages keeps its findings (faithfulness
    below one half, which the review queue's triage also takes), unless it declines."""
    more = _MORE_ADVICE[language]
    (claim,) = atomic_claims(more, language)
    assert claim.kind == "other" and claim.general
    assert not report(f"{dose} {advice}", [passage], language).ungrounded
    found = report(f"{dose} {advice} {more}", [passage], language)
    assert found.ungrounded == [advice, more]
    assert found.faithfulness < 0.5
