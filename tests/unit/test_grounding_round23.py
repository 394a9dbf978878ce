"""The twenty-third round (issue 10), one group per mechanism: a referral anchors general
advice; a permission about the drug of the sentence before; lists in passages; doses by body
weight; a permission for an age the passages advise against; a bare amount also given per dose,
nights, stages of pregnancy; a name two passages teach as two drugs; verbs of applying; "more
than … not recommended"; a chunk that names no drug. Own sentences in English, Dutch and
Vietnamese, mostly with invented products (zorvatil, Velmora, Norvex); every rule has a
must-flag twin that is still caught, and every group fails without its change."""

from __future__ import annotations

import pytest

from schemas.verdicts import MedicalContext
from services.grounding.claims import atomic_claims, claim_kind
from services.grounding.quantities import amounts
from services.grounding.tokens import tokenize
from tests.support.grounding_checks import check_report, critical
from tests.support.grounding_checks import numbered_report as report

_PASSAGES = {
    "en": "Zorvatil 20 mg tablets: adults take 20 mg once a day. Take the tablet with water.",
    "nl": "Zorvatil 20 mg tabletten: volwassenen nemen 20 mg eenmaal daags. Neem de tablet in "
    "met water.",
    "vi": "Zorvatil 20 mg: người lớn uống 20 mg mỗi ngày một lần. Uống viên thuốc với nước.",
}

#: a referral, a sentence of general advice in words no passage holds, the same advice naming
#: the drug, and a dose no passage holds
_REFERRING = [
    (
        "Please ask your pharmacist before you change anything.",
        "Keep the box with you when you go.",
        "Zorvatil is best kept in the box when you go.",
        "Take 60 mg of zorvatil a day.",
        "en",
    ),
    (
        "Vraag het eerst aan uw apotheker voordat u iets verandert.",
        "Houd het doosje bij u als u gaat.",
        "Bewaar zorvatil het liefst in het doosje als u gaat.",
        "Neem 60 mg zorvatil per dag.",
        "nl",
    ),
    (
        "Bạn hãy hỏi dược sĩ trước khi thay đổi bất cứ điều gì.",
        "Hãy luôn mang theo hộp thuốc bên mình.",
        "Zorvatil nên được giữ trong hộp khi bạn đi ra ngoài.",
        "Uống 60 mg zorvatil mỗi ngày.",
        "vi",
    ),
]


@pytest.mark.parametrize(("referral", "advice", "named", "dose", "language"), _REFERRING)
def test_general_advice_in_an_answer_that_refers_is_no_finding(
    referral: str, advice: str, named: str, dose: str, language: str
) -> None:
    passage = _PASSAGES[language]
    (claim,) = atomic_claims(f"{advice} {referral}", language)  # the referral is no claim
    assert claim.kind == "other" and claim.general
    assert not report(f"{advice} {referral}", [passage], language).ungrounded
    # must-flag twins: the advice without the referral, advice that names the drug in words
    # no passage holds, and a dose no passage holds, each beside the same referral
    assert report(advice, [passage], language).ungrounded
    assert report(f"{named} {referral}", [passage], language).ungrounded == [named]
    assert critical(report(f"{dose} {referral}", [passage], language))


# --- a list of contraindications, and a permission about the drug of the sentence before -------

#: a passage that lists contraindications after a colon, a dose sentence naming the drug, a
#: permission for a listed condition that names no drug, and one for a condition the list
#: leaves out (no passage speaks about it), per language
_LISTED = [
    (
        "Do not use Zorvatil: if you are allergic to zorvatil; if you have active Crohn's "
        "disease; if you have a serious infection such as active tuberculosis.",
        "Zorvatil 20 mg tablets: adults take 20 mg once a day.",
        "Adults take 20 mg of zorvatil once a day.",
        "There is no objection to using it with active Crohn's disease.",
        "There is no objection to using it with mild eczema.",
        "en",
    ),
    (
        "Gebruik Zorvatil niet: als u allergisch bent voor zorvatil; als u de actieve ziekte van "
        "Crohn heeft; als u een ernstige infectie heeft, zoals actieve tuberculose.",
        "Zorvatil 20 mg tabletten: volwassenen nemen 20 mg eenmaal daags.",
        "Volwassenen nemen 20 mg zorvatil eenmaal daags.",
        "Er is geen bezwaar tegen gebruik bij een actieve ziekte van Crohn.",
        "Er is geen bezwaar tegen gebruik bij milde eczeem.",
        "nl",
    ),
    (
        "Không dùng Zorvatil: nếu bạn dị ứng với zorvatil; nếu bạn đang bị bệnh Crohn hoạt "
        "động; nếu bạn bị nhiễm trùng nặng như lao đang hoạt động.",
        "Zorvatil 20 mg: người lớn uống 20 mg mỗi ngày một lần.",
        "Người lớn uống 20 mg zorvatil mỗi ngày một lần.",
        "Bạn vẫn có thể dùng thuốc khi đang bị bệnh Crohn hoạt động.",
        "Bạn vẫn có thể dùng thuốc khi bị chàm nhẹ.",
        "vi",
    ),
]


@pytest.mark.parametrize(("listing", "dosing", "dose", "listed", "unlisted", "language"), _LISTED)
def test_a_permission_for_a_listed_contraindication_is_critical(
    listing: str, dosing: str, dose: str, listed: str, unlisted: str, language: str
) -> None:
    passages = [listing, dosing]
    checked = report(f"{dose} {listed}", passages, language)
    assert critical(checked)
    assert checked.ungrounded == [listed]
    # the twins: the dose alone is grounded, and a permission for a condition the list leaves
    # out is no contradiction (no passage speaks about it): not critical
    assert not report(dose, passages, language).ungrounded
    assert not critical(report(f"{dose} {unlisted}", passages, language))


# --- doses by body weight: a passage's bands, and items of a list read with its opening ---------

#: a passage of doses by weight band in a list, the dose of the band a 38 kg child is in, the
#: next band's dose, and the first band's, per language
_BANDS = [
    (
        "Zorvatil for children aged 2 to 17 years, dose by body weight: 12 kg to 25 kg: 10 mg; "
        "26 kg to 40 kg: 15 mg; more than 40 kg: 20 mg.",
        "At 38 kg your son takes 15 mg of zorvatil.",
        "At 38 kg your son takes 20 mg of zorvatil.",
        "At 38 kg your son takes 10 mg of zorvatil.",
        "en",
    ),
    (
        "Zorvatil voor kinderen van 2 tot 17 jaar, dosis naar lichaamsgewicht: 12 kg tot 25 kg: "
        "10 mg; 26 kg tot 40 kg: 15 mg; meer dan 40 kg: 20 mg.",
        "Bij 38 kg krijgt uw zoon 15 mg zorvatil.",
        "Bij 38 kg krijgt uw zoon 20 mg zorvatil.",
        "Bij 38 kg krijgt uw zoon 10 mg zorvatil.",
        "nl",
    ),
    (
        "Zorvatil cho trẻ từ 2 đến 17 tuổi, liều theo cân nặng: 12 kg đến 25 kg: 10 mg; 26 kg "
        "đến 40 kg: 15 mg; trên 40 kg: 20 mg.",
        "Con bạn nặng 38 kg nên uống 15 mg zorvatil.",
        "Con bạn nặng 38 kg nên uống 20 mg zorvatil.",
        "Con bạn nặng 38 kg nên uống 10 mg zorvatil.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passage", "right", "next_band", "first_band", "language"), _BANDS)
def test_a_dose_by_weight_is_the_dose_of_the_patients_band(
    passage: str, right: str, next_band: str, first_band: str, language: str
) -> None:
    assert not report(right, [passage], language).ungrounded
    # the must-flag twins: the dose of another band, the one after it (an item of the list)
    # and the first one (beside the list's opening)
    assert critical(report(next_band, [passage], language))
    assert critical(report(first_band, [passage], language))


# --- a permission for a patient of an age the passages advise against ---------------------------

_AGES = [
    (
        "Do not give loperamide to children under 12 years. Adults and children aged 12 and over "
        "may take loperamide for diarrhoea.",
        "Yes, you can give her loperamide for the diarrhoea.",
        "en",
    ),
    (
        "Geef loperamide niet aan kinderen onder de 12 jaar. Volwassenen en kinderen vanaf 12 jaar "
        "mogen loperamide bij diarree gebruiken.",
        "Ja, loperamide kunt u haar bij diarree gewoon geven.",
        "nl",
    ),
    (
        "Không dùng loperamid cho trẻ em dưới 12 tuổi. Người lớn và trẻ từ 12 tuổi trở lên có thể "
        "dùng loperamid khi bị tiêu chảy.",
        "Bạn có thể cho cháu dùng loperamid khi bị tiêu chảy.",
        "vi",
    ),
]


def _child(age: int) -> MedicalContext:
    return MedicalContext(
        drugs=["loperamide"], populations=["child"], age_min_years=age, age_max_years=age
    )


@pytest.mark.parametrize(("passage", "permission", "language"), _AGES)
def test_a_permission_for_an_age_the_passages_advise_against_is_critical(
    passage: str, permission: str, language: str
) -> None:
    """The question's girl of 9 is under the age the passage gives the drug from: "you can give
    her …" contradicts it. The twin: the same permission for a girl of 14 is grounded."""
    assert critical(report(permission, [passage], language, _child(9)))
    assert not report(permission, [passage], language, _child(14)).ungrounded


# --- fresh22's causes: a bare amount the sentence also gives per dose, nights, pregnancy -------

#: a passage that heads the product with its strength and gives it per dose, the dose right,
#: and the same amount as a day's split in two (a per-dose amount given as the day's)
_PER_DOSE = [
    (
        "Zorvatil extended-release tablets 600 mg: adults take 600 mg twice a day.",
        "Adults take 600 mg of zorvatil twice a day.",
        "The usual dose of zorvatil is 600 mg a day, split into two doses.",
        "en",
    ),
    (
        "Zorvatil tabletten met verlengde afgifte 600 mg: volwassenen nemen 600 mg tweemaal per "
        "dag.",
        "Volwassenen nemen tweemaal per dag 600 mg zorvatil.",
        "De gebruikelijke dosis zorvatil is 600 mg per dag, verdeeld over twee keer.",
        "nl",
    ),
    (
        "Zorvatil viên giải phóng kéo dài 600 mg: người lớn uống 600 mg x 2 lần/ngày.",
        "Người lớn uống zorvatil 600 mg, ngày 2 lần.",
        "Liều thông thường của zorvatil là 600 mg mỗi ngày, chia làm 2 lần.",
        "vi",
    ),
]


@pytest.mark.parametrize(("passage", "right", "per_day", "language"), _PER_DOSE)
def test_a_bare_amount_the_sentence_gives_per_dose_backs_no_days_amount(
    passage: str, right: str, per_day: str, language: str
) -> None:
    assert not report(right, [passage], language).ungrounded
    assert critical(report(per_day, [passage], language))


@pytest.mark.parametrize(
    ("text", "language"), [("7 nights", "en"), ("7 nachten", "nl"), ("7 đêm", "vi")]
)
def test_nights_are_days(text: str, language: str) -> None:
    assert [q.key for a in amounts(tokenize(text), language) for q in a.parts] == ["168 h"]


_PREGNANCY = [
    (
        "Use zorvatil cream in the first three months of pregnancy only after talking to your "
        "doctor.",
        "Use zorvatil cream once a day for three months.",
        "en",
    ),
    (
        "Gebruik zorvatil crème in de eerste drie maanden van de zwangerschap alleen na overleg "
        "met uw arts.",
        "Gebruik zorvatil crème drie maanden lang eenmaal per dag.",
        "nl",
    ),
    (
        "Chỉ dùng kem zorvatil trong 3 tháng đầu thai kỳ khi bác sĩ đồng ý.",
        "Dùng kem zorvatil ngày 1 lần trong 3 tháng.",
        "vi",
    ),
]


@pytest.mark.parametrize(("stage", "course", "language"), _PREGNANCY)
def test_a_stage_of_pregnancy_is_no_course(stage: str, course: str, language: str) -> None:
    assert all(r.duration is None for c in atomic_claims(stage, language) for r in c.readings)
    # the twin: three months as the course of the treatment
    (reading,) = [r for c in atomic_claims(course, language) for r in c.readings]
    assert reading.duration is not None


# --- a name two passages teach as two drugs names neither ----------------------------------------

#: two products whose names share a word ("Forte"), each bound to its drug by brackets; the
#: answer names one in a sentence of its own and gives a dose in the next: its own, the other's
_SHARED_NAME = [
    (
        "Calmex Forte (ibuprofen) 400 mg tablets: adults take 400 mg up to three times a day.",
        "Norvex Forte (naproxen) 500 mg tablets: adults take 500 mg twice a day. Take Norvex "
        "Forte with food.",
        "Take Norvex Forte with food. The usual dose is 500 mg twice a day.",
        "Take Norvex Forte with food. The usual dose is 400 mg up to three times a day.",
        "en",
    ),
    (
        "Calmex Forte (ibuprofen) 400 mg tabletten: volwassenen nemen tot driemaal daags 400 mg.",
        "Norvex Forte (naproxen) 500 mg tabletten: volwassenen nemen tweemaal daags 500 mg. Neem "
        "Norvex Forte in met voedsel.",
        "Neem Norvex Forte in met voedsel. De gebruikelijke dosis is tweemaal daags 500 mg.",
        "Neem Norvex Forte in met voedsel. De gebruikelijke dosis is tot driemaal daags 400 mg.",
        "nl",
    ),
    (
        "Calmex Forte (ibuprofen) viên 400 mg: người lớn uống 400 mg, tối đa 3 lần mỗi ngày.",
        "Norvex Forte (naproxen) viên 500 mg: người lớn uống 500 mg, ngày 2 lần. Uống Norvex "
        "Forte cùng thức ăn.",
        "Uống Norvex Forte cùng thức ăn. Liều thường dùng là 500 mg, ngày 2 lần.",
        "Uống Norvex Forte cùng thức ăn. Liều thường dùng là 400 mg, tối đa 3 lần mỗi ngày.",
        "vi",
    ),
]


@pytest.mark.parametrize(("first", "second", "right", "other", "language"), _SHARED_NAME)
def test_a_name_two_passages_teach_as_two_drugs_names_neither(
    first: str, second: str, right: str, other: str, language: str
) -> None:
    assert not report(right, [first, second], language).ungrounded
    checked = report(other, [first, second], language)
    assert critical(checked)
    assert checked.ungrounded == [other.split(". ")[1]]


# --- verbs of applying a product make an amount a dose ------------------------------------------

_APPLIED = [
    (
        "Velmora goes into the bladder through a catheter: 50 mg is instilled.",
        "Velmora goes into the bladder through a catheter.",
        "en",
    ),
    ("Apply 2 g of the cream to the affected skin.", "Apply the cream to the affected skin.", "en"),
    ("Druppel 2 druppels in het aangedane oor.", "Druppel het in het aangedane oor.", "nl"),
    ("Breng 2 g van de crème aan op de huid.", "Breng de crème aan op de huid.", "nl"),
]


@pytest.mark.parametrize(("sentence", "without", "language"), _APPLIED)
def test_an_amount_with_a_verb_of_applying_is_a_dose(
    sentence: str, without: str, language: str
) -> None:
    """A dose that no passage holds in such a sentence is then critical, as any dose ("50 mg is
    instilled" for the passage's 50 ml). The twin: the verb without an amount is no dose."""
    t = tokenize(sentence)
    found = [q for a in amounts(t, language) for q in a.parts]
    assert claim_kind(sentence, language, found) == "dose"
    assert claim_kind(without, language, []) != "dose"


# --- "more than X … not recommended" is a maximum ------------------------------------------------

_ABOVE_ADVISED_AGAINST = [
    ("Dosages higher than 250 mg daily are not recommended.", "Take 250 mg a day.", "en"),
    ("Meer dan 4 gram per dag wordt afgeraden.", "Neem 4 gram per dag.", "nl"),
]


@pytest.mark.parametrize(("sentence", "plain", "language"), _ABOVE_ADVISED_AGAINST)
def test_more_than_an_amount_advised_against_is_a_maximum(
    sentence: str, plain: str, language: str
) -> None:
    """The negative after the amount makes it a maximum, as one before it does ("should not
    take more than"); the twin: the amount alone is no maximum."""
    ((reading,),) = [c.readings for c in atomic_claims(sentence, language)]
    assert reading.qualifier == "max"
    ((reading,),) = [c.readings for c in atomic_claims(plain, language)]
    assert reading.qualifier is None


# --- a chunk that names no drug is read, and takes its sibling chunks' drug -----------------------

#: a leaflet's dose chunk naming the product, a sibling chunk naming none, a right answer and a
#: flipped one about the sibling's warning
_UNNAMED_CHUNK = [
    (
        "Zorvane 2% cream: apply a thin layer once a day for 2 weeks.",
        "For use on the skin only. Do not apply to the eyes, mouth or nose.",
        "Apply the zorvane cream once a day for 2 weeks. Keep it away from your eyes, mouth and "
        "nose.",
        "Apply the zorvane cream once a day for 2 weeks. It is fine to apply it around the eyes "
        "and nose too.",
        "en",
    ),
    (
        "Zorvane 2% crème: eenmaal per dag een dunne laag aanbrengen, 2 weken lang.",
        "Alleen voor gebruik op de huid. Niet aanbrengen op de ogen, mond of neus.",
        "Breng de zorvane crème 2 weken lang eenmaal per dag aan. Houd de crème weg van uw ogen, "
        "mond en neus.",
        "Breng de zorvane crème 2 weken lang eenmaal per dag aan. U mag de crème gerust ook rond "
        "de ogen en neus aanbrengen.",
        "nl",
    ),
    (
        "Kem zorvane 2%: bôi một lớp mỏng ngày 1 lần trong 2 tuần.",
        "Chỉ dùng ngoài da. Không bôi vào mắt, miệng hoặc mũi.",
        "Bôi kem zorvane ngày 1 lần trong 2 tuần. Tránh để kem dính vào mắt, miệng hoặc mũi.",
        "Bôi kem zorvane ngày 1 lần trong 2 tuần. Bạn có thể bôi kem vào mắt và mũi.",
        "vi",
    ),
]


@pytest.mark.parametrize(("dosing", "warning", "right", "flipped", "language"), _UNNAMED_CHUNK)
def test_a_chunk_that_names_no_drug_speaks_of_its_siblings_drug(
    dosing: str, warning: str, right: str, flipped: str, language: str
) -> None:
    passages = [(f"pil-zorvane-{language}-01", dosing), (f"pil-zorvane-{language}-03", warning)]
    assert not check_report(right, passages, language).ungrounded
    assert critical(check_report(flipped, passages, language))
