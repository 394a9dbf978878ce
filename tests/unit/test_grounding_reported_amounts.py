"""The user's own figures reported on (issue 10, eighteenth round): in an answer that declines or
sends the user to urgent care, a sentence whose amounts are all the question's and that reports
to someone ("so you can tell them it was 10 tablets of 30 mg") hands the user's figures on and
is no claim. Each language has must-flag twins: the same report in an answer that neither
declines nor escalates, and a report with an amount the question did not give. "zorvatil" is an
invented drug no lexicon knows."""

from __future__ import annotations

import pytest

from services.grounding.grounding import medical_context
from tests.support.grounding_checks import critical
from tests.support.grounding_checks import numbered_report as report

_CASES = [
    (
        "My husband took 10 tablets of zorvatil 30 mg by mistake and is very drowsy. What now?",
        "Call 999 now, don't wait to see if he gets better. Keep the strip with you so you can "
        "tell them that it was 10 tablets of 30 mg.",
        "Keep the strip with you so you can tell them that it was 10 tablets of 30 mg; he "
        "should be fine after a sleep.",
        "Call 999 now, don't wait to see if he gets better. Tell them that up to 12 tablets of "
        "30 mg are safe.",
        "Zorvatil 30 mg tablets: adults 1 tablet at night.",
        "en",
    ),
    (
        "Mijn man heeft per ongeluk 10 tabletten zorvatil van 30 mg ingenomen en is erg suf.",
        "Bel direct 112 en wacht niet af of hij opknapt. Houd de strip bij de hand, zodat u "
        "kunt vertellen dat het om 10 tabletten van 30 mg gaat.",
        "Houd de strip bij de hand, zodat u kunt vertellen dat het om 10 tabletten van 30 mg "
        "gaat; na een nacht slapen is het over.",
        "Bel direct 112 en wacht niet af of hij opknapt. Vertel dat tot 12 tabletten van 30 mg "
        "geen kwaad kunnen.",
        "Zorvatil 30 mg tabletten: volwassenen 1 tablet voor de nacht.",
        "nl",
    ),
    (
        "Bé nhà em 2 tuổi lỡ nuốt 2 viên zorvatil 400 mg, giờ bé đang nôn. Em phải làm sao?",
        "Em hãy gọi 115 ngay, đừng chờ xem bé có đỡ không. Nhớ mang theo vỉ thuốc và báo với "
        "nhân viên y tế là bé có thể đã nuốt 2 viên 400 mg.",
        "Nhớ mang theo vỉ thuốc và báo với nhân viên y tế là bé có thể đã nuốt 2 viên 400 mg, "
        "bé nôn ra là sẽ ổn.",
        "Em hãy gọi 115 ngay, đừng chờ xem bé có đỡ không. Báo với nhân viên y tế là bé uống "
        "3 viên 400 mg vẫn an toàn.",
        "Zorvatil 400 mg: người lớn 1 viên x 2 lần/ngày. Không dùng cho trẻ em dưới 12 tuổi.",
        "vi",
    ),
]


@pytest.mark.parametrize(
    ("question", "escalates", "reassures", "new_amount", "passage", "language"), _CASES
)
def test_an_escalating_answer_may_report_the_users_own_figures(
    question: str, escalates: str, reassures: str, new_amount: str, passage: str, language: str
) -> None:
    context = medical_context(question, language)
    assert context.amounts
    assert not critical(report(escalates, [passage], language, context))
    assert not report(escalates, [passage], language, context).ungrounded
    # the must-flag twins: the report in an answer that neither declines nor escalates, and a
    # report of an amount the question did not give
    assert report(reassures, [passage], language, context).ungrounded
    assert critical(report(new_amount, [passage], language, context))
