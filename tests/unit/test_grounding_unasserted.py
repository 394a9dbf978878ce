"""Non-asserted content as a scope (issue 10, ``services/grounding/unasserted.py``): a dose,
amount, contraindication or polarity under a refusal, a deferral or a fronted open question is
no claim of the answer. Own sentences in English, Dutch and Vietnamese with an invented drug
(zorvatil), and for every frame a must-flag twin that must still be caught."""

from __future__ import annotations

import pytest

from services.grounding.claims import atomic_claims, skip_reason
from services.grounding.quantities import quantities
from services.grounding.tokens import tokenize
from services.grounding.unasserted import asserted, scope_texts, unasserted_scopes
from tests.support.grounding_checks import critical
from tests.support.grounding_checks import numbered_report as report

_PASSAGE = {
    "en": "Zorvatil 20 mg tablets: adults take 20 mg once a day. Do not use zorvatil in pregnancy.",
    "nl": "Zorvatil 20 mg tabletten: volwassenen nemen 20 mg eenmaal daags. Gebruik zorvatil "
    "niet tijdens de zwangerschap.",
    "vi": "Zorvatil 20 mg: người lớn uống 20 mg mỗi ngày một lần. Không dùng zorvatil khi mang "
    "thai.",
}

#: (refusal around a wrong dose, the same dose asserted, the dose asserted after a frame that
#: does not decline, language)
_REFUSALS = [
    (
        "I'm sorry, but I can't tell you that three 20 mg zorvatil tablets at once would be "
        "safe for you.",
        "Adults can take 60 mg of zorvatil once a day. Whether that suits you, ask your doctor.",
        "I can tell you that adults take 60 mg of zorvatil once a day.",
        "en",
    ),
    (
        "Ik kan u niet zeggen of drie tabletten zorvatil van 20 mg in één keer veilig zijn.",
        "Volwassenen nemen 60 mg zorvatil eenmaal daags. Of dat bij u past, vraag het uw arts.",
        "Ik weet dat volwassenen 60 mg zorvatil eenmaal daags nemen.",
        "nl",
    ),
    (
        "Tôi không thể nói liệu uống 3 viên zorvatil 20 mg một lúc có an toàn với bạn không.",
        "Người lớn uống 60 mg zorvatil mỗi ngày một lần. Việc đó có hợp với bạn không thì hãy "
        "hỏi bác sĩ.",
        "Tôi có thể nói rằng người lớn uống 60 mg zorvatil mỗi ngày một lần.",
        "vi",
    ),
]


@pytest.mark.parametrize(("refusal", "asserted_dose", "no_refusal", "language"), _REFUSALS)
def test_a_dose_under_a_refusal_is_no_claim(
    refusal: str, asserted_dose: str, no_refusal: str, language: str
) -> None:
    assert atomic_claims(refusal, language) == []
    assert not report(refusal, [_PASSAGE[language]], language).ungrounded
    # must-flag twins: the dose said outside the frame, and a frame that does not decline
    assert critical(report(asserted_dose, [_PASSAGE[language]], language))
    assert critical(report(no_refusal, [_PASSAGE[language]], language))


_MIXED = [
    (
        "I'm not able to say if 60 mg is too much, but adults take {n} mg of zorvatil once a day.",
        "en",
    ),
    (
        "Ik weet niet of 60 mg te veel is, maar volwassenen nemen {n} mg zorvatil eenmaal daags.",
        "nl",
    ),
    (
        "Mình không biết liệu 60 mg có quá nhiều không, nhưng người lớn uống {n} mg zorvatil "
        "mỗi ngày một lần.",
        "vi",
    ),
]


@pytest.mark.parametrize(("template", "language"), _MIXED)
def test_the_clause_after_a_refusal_is_still_checked(template: str, language: str) -> None:
    right, wrong = template.format(n=20), template.format(n=40)
    assert not report(right, [_PASSAGE[language]], language).ungrounded
    assert critical(report(wrong, [_PASSAGE[language]], language))
    (claim,) = atomic_claims(right, language)
    assert "60 mg" not in [q.display for q in claim.quantities]  # under the refusal


_FRONTED = [
    (
        "Whether 60 mg of zorvatil at once is right for you is something your doctor must decide.",
        "en",
    ),
    ("Of 60 mg zorvatil in één keer bij u past, bepaalt uw arts.", "nl"),
    ("Uống 60 mg zorvatil một lần có phù hợp với bạn hay không thì bác sĩ sẽ quyết định.", "vi"),
]
_FRONTED_TWINS = [
    ("Whether you eat or not, adults take 60 mg of zorvatil once a day.", "en"),
    ("Of u nu eet of niet, volwassenen nemen 60 mg zorvatil eenmaal daags.", "nl"),
    ("Dù ăn hay không, người lớn uống 60 mg zorvatil mỗi ngày một lần.", "vi"),
]


@pytest.mark.parametrize(("sentence", "language"), _FRONTED)
def test_a_fronted_open_question_before_a_referral_is_no_claim(
    sentence: str, language: str
) -> None:
    assert skip_reason(sentence, language, quantities(sentence, language)) == "referral"
    assert not report(sentence, [_PASSAGE[language]], language).ungrounded


@pytest.mark.parametrize(("sentence", "language"), _FRONTED_TWINS)
def test_a_fronted_clause_before_a_claim_is_no_scope(sentence: str, language: str) -> None:
    assert unasserted_scopes(tokenize(sentence), language) == ()
    assert critical(report(sentence, [_PASSAGE[language]], language))


def test_a_deferral_keeps_its_referral() -> None:
    sentence = "Your doctor will decide whether 60 mg of zorvatil suits your kidneys."
    part = asserted(tokenize(sentence), "en")
    assert part is not None and not part.refused
    assert part.text == "Your doctor will decide ."
    assert skip_reason(sentence, "en", quantities(sentence, "en")) == "referral"


_POLARITY = [
    ("I can't say whether zorvatil is safe in pregnancy.", "Zorvatil is safe in pregnancy.", "en"),
    (
        "Ik kan niet beoordelen of zorvatil veilig is tijdens de zwangerschap.",
        "Zorvatil is veilig tijdens de zwangerschap.",
        "nl",
    ),
    (
        "Tôi không thể khẳng định zorvatil có an toàn khi mang thai hay không.",
        "Zorvatil an toàn khi mang thai.",
        "vi",
    ),
]


@pytest.mark.parametrize(("refusal", "flip", "language"), _POLARITY)
def test_a_polarity_under_a_refusal_is_no_claim(refusal: str, flip: str, language: str) -> None:
    assert not report(refusal, [_PASSAGE[language]], language).ungrounded
    assert critical(report(flip, [_PASSAGE[language]], language))  # the must-flag twin


def test_scopes_end_at_the_clause() -> None:
    t = tokenize("I can't tell you whether 60 mg is safe; adults take 20 mg.")
    assert scope_texts(t, unasserted_scopes(t, "en")) == ["whether 60 mg is safe"]
    # a negator that is not over the verb of telling opens no scope
    t = tokenize("I know that you should not take 60 mg at once.")
    assert unasserted_scopes(t, "en") == ()
