"""A conversation whose review item outgrows one Kafka record unless it is bounded in bytes.

Every answer is about 55 KB of Vietnamese-and-English text (many letters 2–3 bytes of UTF-8)
with an e-mail address near its end, and carries eight retrieved passages of about 6 KB;
every question is long too. Twenty answers flagged for their leaks make an item of several
megabytes at the policy's counts (20 turns, 8 passages each), far over the broker's default
``max.message.bytes`` (1 MiB).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["email_of", "long_conversation"]

T0 = datetime(2026, 11, 5, 9, 0, tzinfo=UTC)

_SENTENCES = [
    "Thuốc giảm đau nên được uống sau bữa ăn và với một cốc nước đầy.",
    "Người cao tuổi cần được bác sĩ kiểm tra chức năng gan và thận định kỳ.",
    "Không dùng hai loại thuốc có cùng hoạt chất trong một ngày.",
    "Hãy ghi lại giờ uống thuốc để cả gia đình cùng theo dõi được.",
    "Gentle movement during the day often helps stiff joints more than rest.",
    "Nếu đau kéo dài hơn ba ngày, hãy liên hệ với phòng khám gần nhất.",
    "Bảo quản thuốc ở nơi khô ráo, thoáng mát, tránh ánh nắng trực tiếp.",
    "Ask the pharmacy to review all medicines together once in a while.",
]


def _prose(rng: random.Random, size: int) -> str:
    """About ``size`` bytes of UTF-8 (whole sentences)."""
    out: list[str] = []
    used = 0
    while True:
        s = rng.choice(_SENTENCES)
        if used + len(s.encode()) + 1 > size:
            return " ".join(out)
        out.append(s)
        used += len(s.encode()) + 1


def email_of(n: int) -> str:
    return f"nguyen.van.{n:02d}@phongkham-benhnhan.vn"


def long_conversation(
    cid: str,
    *,
    answers: int = 20,
    answer_bytes: int = 55_000,
    question_bytes: int = 8_000,
    passages: int = 8,
    passage_bytes: int = 6_000,
    seed: int = 7,
) -> list[dict[str, Any]]:
    """The events of the conversation (``ChatEvent`` JSON dicts), in turn order: a long
    question, then a long answer (sizes in bytes of UTF-8) whose e-mail address
    (:func:`email_of`) sits about 300 bytes before its end, ``answers`` times."""
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    for n in range(answers):
        for role in ("user", "assistant"):
            turn = len(events)
            event: dict[str, Any] = {
                "schema_version": 1,
                "event_id": f"{cid}-{turn:03d}",
                "conversation_id": cid,
                "turn_index": turn,
                "timestamp": (T0 + timedelta(minutes=turn)).isoformat(),
                "role": role,
                "tenant": "saigon-clinic",
                "language": "vi",
            }
            if role == "user":
                event["content"] = _prose(rng, question_bytes)
            else:
                head = _prose(rng, answer_bytes - 400)
                tail = _prose(rng, 300)
                event["content"] = f"{head} Liên hệ: {email_of(n)} để đặt lịch. {tail}"
                event["retrieval"] = [
                    {
                        "doc_id": f"pil-paracetamol-vi-{k:02d}",
                        "text": _prose(rng, passage_bytes),
                        "rank": k + 1,
                        "score": round(0.9 - k * 0.05, 2),
                    }
                    for k in range(passages)
                ]
            events.append(event)
    return events
