"""General cue families and rules added for wording outside the first cue lists (issue 10, the
held-out and fresh splits): each mechanism with one small test per language, written in other
words than the adversarial cases."""

from __future__ import annotations

from services.grounding.claims import skip_reason
from services.grounding.quantities import amounts, flatten
from services.grounding.tokens import tokenize


def reason(text: str, language: str) -> str | None:
    return skip_reason(text, language, tuple(flatten(amounts(tokenize(text), language))))


# -- referrals: deciding verbs, pronouns for a professional, compounds, urgency ----------------


def test_referral_by_deciding_professional_en() -> None:
    assert reason("The right number of units is set by your care team.", "en") == "referral"
    assert reason("Your prescriber decides when to stop.", "en") == "referral"
    assert reason("Ring them tomorrow morning.", "en") == "referral"
    assert reason("Don't wait until the rash spreads.", "en") == "referral"
    assert reason("Don't wait longer than 4 hours between 500 mg doses.", "en") is None


def test_referral_by_deciding_professional_nl() -> None:
    assert reason("Dat bepaalt de behandelaar samen met u.", "nl") == "referral"
    assert reason("Uw longarts kan dat beter inschatten; bel hem gerust.", "nl") == "referral"
    assert reason("Vraag het hen bij de volgende controle.", "nl") == "referral"
    assert reason("Wacht er niet mee als de zwelling toeneemt.", "nl") == "referral"
    assert reason("De kinderarts schreef 5 mg per dag voor.", "nl") is None


def test_referral_by_deciding_professional_vi() -> None:
    assert reason("Liều bao nhiêu là do bác sĩ kê đơn quyết định.", "vi") == "referral"
    assert reason("Bạn cứ hỏi họ khi tái khám nhé.", "vi") == "referral"
    assert reason("Nếu sốt cao co giật, đừng đợi, gọi cấp cứu ngay.", "vi") == "referral"
    assert reason("Mình không thể xác nhận liều này an toàn cho bé.", "vi") == "abstention"
