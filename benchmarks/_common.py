"""Shared helpers of the benchmark scripts: rule-pack choice, synthetic chat data, machine facts,
timing and result files. Not part of the product; nothing here is imported by ``services``.
"""

from __future__ import annotations

import atexit
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"
STAND_IN_PACK = REPO_ROOT / "benchmarks" / "data" / "representative-pack.yaml"
DEFAULT_PROMPTS = REPO_ROOT / "rules" / "prompts.yaml"

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

__all__ = [
    "DAY_SECONDS",
    "DENSE_SHIFT",
    "EVENT_MIXES",
    "MIXES",
    "REPO_ROOT",
    "RESULTS_DIR",
    "TENANTS",
    "RulesChoice",
    "best_of",
    "machine",
    "make_content",
    "make_events",
    "md_table",
    "pin_to_one_core",
    "rel",
    "resolve_rules",
    "save_result",
    "write_events_file",
    "write_example_file",
]


# --------------------------------------------------------------------------- rule packs


@dataclass(frozen=True)
class RulesChoice:
    """The pack location to hand to ``Settings(rules_dir=...)`` / ``vigil scan --rules``."""

    path: Path
    files: list[str]
    source: str  # "given" | "settings default" | "rules/*.yaml" | "stand-in"


def _yaml_packs(folder: Path) -> list[Path]:
    """Pack files directly in ``folder`` (the prompt registry is not a pack)."""
    if not folder.is_dir():
        return []
    files = sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")])
    return [f for f in files if f.name not in {"prompts.yaml", "prompts.yml"}]


def resolve_rules(given: str | None) -> RulesChoice:
    """``--rules`` if given; else the Settings default (``rules/packs/``) when it holds packs;
    else the packs in ``rules/*.yaml`` (linked into a temporary folder, without the prompt
    registry); else the benchmark stand-in pack, which says so in every result."""
    from services.settings import Settings

    if given:
        p = Path(given).resolve()
        files = _yaml_packs(p) if p.is_dir() else [p]
        return RulesChoice(p, [rel(f) for f in files], "given")
    default = Path(Settings().rules_dir)
    if _yaml_packs(default):
        return RulesChoice(default, [rel(f) for f in _yaml_packs(default)], "settings default")
    loose = _yaml_packs(REPO_ROOT / "rules")
    if loose:
        tmp = Path(tempfile.mkdtemp(prefix="vigil-bench-rules-"))
        atexit.register(shutil.rmtree, tmp, True)
        for f in loose:
            (tmp / f.name).symlink_to(f)
        return RulesChoice(tmp, [rel(f) for f in loose], "rules/*.yaml")
    return RulesChoice(STAND_IN_PACK, [rel(STAND_IN_PACK)], "stand-in")


def rel(p: Path | str) -> str:
    """``p`` relative to the repository when it lies inside it (for printed commands)."""
    try:
        return str(Path(p).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(p)


# --------------------------------------------------------------------------- synthetic chats

_FIRST = ["anna", "jan", "sophie", "daan", "linh", "minh", "emma", "lucas", "thao", "pieter"]
_LAST = ["devries", "jansen", "nguyen", "tran", "bakker", "smit", "pham", "visser", "le", "meijer"]
_DOMAINS = ["example.nl", "mail.example.com", "gmail.com", "ziekenhuis-rivierland.nl", "vnmail.vn"]
_CARDS = ["4111 1111 1111 1111", "5500 0000 0000 0004", "4012-8888-8888-1881", "378282246310005"]
_IBANS = ["NL91 ABNA 0417 1643 00", "DE89370400440532013000", "GB82 WEST 1234 5698 7654 32"]
_PHONES = {
    "en": ["+44 20 7946 0958", "+1 415 555 2671", "(415) 555-2671"],
    "nl": ["06-12345678", "020-7946095", "+31 6 12345678"],
    "vi": ["0912 345 678", "+84 912 345 678", "0987 654 321"],
}
_ORDINARY = {
    "en": [
        "Your appointment is on {d}-{m}-2026 at {h}:{mi} in room {r}.{r2}.",
        "The invoice total was EUR {p},{c} for order {o}.",
        "Version {v}.{v2}.{v3} of the app fixes the login problem on page {r}.",
        "The leaflet says to store the tablets below {t} degrees, out of reach of children.",
        "Ward {r} has visiting hours from {h}:00 to {h2}:00 on weekdays.",
        "We measured a blood pressure of {bp}/{bp2} and a pulse of {t}{r} this morning.",
        "Reference number {o}-{r}{r2} was registered on {d}/{m}/2025.",
        "Please bring your insurance card and the letter from your general practitioner.",
        "Parking costs {p} cents per hour; the garage closes at {h2}:{mi}.",
        "The pharmacy on floor {r} can answer questions about your prescription.",
    ],
    "nl": [
        "Uw afspraak is op {d}-{m}-2026 om {h}:{mi} in kamer {r}.{r2}.",
        "Het totaalbedrag van bestelling {o} was EUR {p},{c}.",
        "Versie {v}.{v2}.{v3} van de app lost het inlogprobleem op pagina {r} op.",
        "Bewaar de tabletten beneden {t} graden en buiten bereik van kinderen.",
        "Afdeling {r} heeft bezoekuur van {h}:00 tot {h2}:00 op werkdagen.",
        "Referentienummer {o}-{r}{r2} is geregistreerd op {d}/{m}/2025.",
        "Neem uw zorgpas en de verwijsbrief van de huisarts mee.",
        "Parkeren kost {p} cent per uur; de garage sluit om {h2}:{mi}.",
    ],
    "vi": [
        "Lịch hẹn của bạn vào ngày {d}/{m}/2026 lúc {h}:{mi} tại phòng {r}.{r2}.",
        "Tổng hóa đơn cho đơn hàng {o} là {p}.{c}00 đồng.",
        "Phiên bản {v}.{v2}.{v3} của ứng dụng sửa lỗi đăng nhập ở trang {r}.",
        "Bảo quản thuốc dưới {t} độ, để xa tầm tay trẻ em.",
        "Khoa {r} có giờ thăm bệnh từ {h}:00 đến {h2}:00 các ngày trong tuần.",
        "Mã tham chiếu {o}-{r}{r2} được đăng ký ngày {d}/{m}/2025.",
        "Vui lòng mang theo thẻ bảo hiểm và giấy giới thiệu của bác sĩ.",
    ],
}
#: Ordinary sentences without digits (half of the ordinary text in the default mix).
_PROSE = {
    "en": [
        "Paracetamol is a common painkiller used to treat aches and pain and to reduce a fever.",
        "Ask your pharmacist for advice before you take any other medicine with this one.",
        "Most people can take it safely, including pregnant and breastfeeding women.",
        "If the pain lasts longer than a few days, please contact your general practitioner.",
        "You can find the patient leaflet inside the box or on the website of the hospital.",
        "The nurse will explain how the procedure works and what you should bring with you.",
        "Thank you for your question, I hope this information helps you prepare for the visit.",
    ],
    "nl": [
        "Paracetamol is een veelgebruikte pijnstiller tegen pijn en koorts.",
        "Vraag uw apotheker om advies voordat u dit samen met andere medicijnen gebruikt.",
        "Als de pijn langer dan een paar dagen aanhoudt, neem dan contact op met uw huisarts.",
        "De bijsluiter zit in de verpakking en staat ook op de website van het ziekenhuis.",
        "De verpleegkundige legt uit hoe het onderzoek verloopt en wat u moet meenemen.",
        "Bedankt voor uw vraag, ik hoop dat deze informatie u helpt bij de voorbereiding.",
    ],
    "vi": [
        "Paracetamol là thuốc giảm đau và hạ sốt thường dùng.",
        "Hãy hỏi ý kiến dược sĩ trước khi dùng chung với các thuốc khác.",
        "Nếu cơn đau kéo dài hơn vài ngày, vui lòng liên hệ bác sĩ gia đình của bạn.",
        "Tờ hướng dẫn sử dụng nằm trong hộp thuốc và trên trang web của bệnh viện.",
        "Điều dưỡng sẽ giải thích quy trình và những gì bạn cần mang theo.",
        "Cảm ơn câu hỏi của bạn, hy vọng thông tin này giúp bạn chuẩn bị tốt hơn.",
    ],
}
_PII = {
    "en": [
        "You can reach me at {email}.",
        "My phone number is {phone}.",
        "I paid with card {card} last week.",
        "Refund it to IBAN {iban} please.",
        "My SSN is 536-90-4399 if you need it.",
        "The request came from IP 203.0.113.{r}.",
    ],
    "nl": [
        "Mijn e-mailadres is {email}.",
        "Bel me op {phone}.",
        "Ik heb betaald met kaart {card}.",
        "Maak het over naar IBAN {iban}.",
        "Mijn BSN is 111222333.",
    ],
    "vi": [
        "Email của tôi là {email}.",
        "Gọi cho tôi theo số {phone}.",
        "Tôi đã thanh toán bằng thẻ {card}.",
        "Số CCCD của tôi là 001099012345.",
    ],
}
_SECRETS = [
    "here is my token ghp_{tok36} for the repo",
    "aws key AKIAIOSFODNN7EXAMPLE and password=Sup3r{tok8}",
    "config: api_key = {tok36}",
    "slack xoxb-123456789012-{tok8}{tok8}",
]
_DOSE = {
    "en": ["Take {n} mg of paracetamol up to four times daily.", "The usual dose is {n} mg."],
    "nl": ["Neem {n} mg paracetamol maximaal vier keer per dag.", "De dosis is {n} mg per dag."],
    "vi": ["Uống {n} mg paracetamol mỗi ngày, tối đa bốn lần.", "Liều thường dùng là {n} mg."],
}
_ABSTAIN = {
    "en": ["I don't know; the retrieved leaflets do not say."],
    "nl": ["Dat weet ik niet, het staat niet in de bijsluiter."],
    "vi": ["Xin lỗi, tôi không biết, không có thông tin trong tài liệu."],
}
_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _fill(rng: random.Random, template: str, lang: str) -> str:
    def num(lo: int, hi: int) -> str:
        return str(rng.randint(lo, hi))

    first, last = rng.choice(_FIRST), rng.choice(_LAST)
    values = {
        "d": num(1, 28),
        "m": num(1, 12),
        "h": num(8, 12),
        "h2": num(13, 20),
        "mi": f"{rng.randint(0, 59):02d}",
        "r": num(1, 9),
        "r2": num(10, 99),
        "p": num(1, 2500),
        "c": f"{rng.randint(0, 99):02d}",
        # order numbers: 16 digits that mostly fail Luhn, so the card validator runs and rejects
        "o": "".join(rng.choice("0123456789") for _ in range(rng.choice((8, 10, 16)))),
        "v": num(1, 12),
        "v2": num(0, 30),
        "v3": num(0, 9),
        "t": num(20, 30),
        "bp": num(100, 160),
        "bp2": num(60, 100),
        "n": rng.choice(["250", "500", "1000", "20", "5"]),
        "email": f"{first}.{last}{rng.randint(1, 99)}@{rng.choice(_DOMAINS)}",
        "phone": rng.choice(_PHONES[lang]),
        "card": rng.choice(_CARDS),
        "iban": rng.choice(_IBANS),
        "tok36": "".join(rng.choice(_ALNUM) for _ in range(36)),
        "tok8": "".join(rng.choice(_ALNUM) for _ in range(8)),
    }
    return template.format(**values)


MIXES = ("default", "numeric")
#: Mixes of whole events: the content mixes, and ``rag`` (answers with retrieval passages).
EVENT_MIXES = (*MIXES, "rag")
TENANTS = ("rivierland", "saigon-clinic")
#: Languages of consecutive conversations: 50% English, 30% Dutch, 20% Vietnamese.
_LANGUAGES = ("en", "nl", "en", "vi", "en", "nl", "en", "vi", "en", "nl")


def make_content(rng: random.Random, size: int, lang: str, role: str, mix: str = "default") -> str:
    """Chat text of exactly ``size`` UTF-8 bytes (a few fewer when a multi-byte character would
    straddle the end): mostly ordinary sentences, with a realistic share of PII, secrets (user
    turns), dose statements and abstentions (assistant turns). In the ``default`` mix half of the
    ordinary sentences carry numbers (dates, prices, order and version numbers, lookalikes that
    fail their checksums); in the ``numeric`` mix all of them do (the validators' worst case)."""
    parts: list[str] = []
    n = 0
    while n < size:
        x = rng.random()
        if x < 0.045:
            s = _fill(rng, rng.choice(_PII[lang]), lang)
        elif x < 0.055 and role == "user":
            s = _fill(rng, rng.choice(_SECRETS), lang)
        elif x < 0.085 and role == "assistant":
            s = _fill(rng, rng.choice(_DOSE[lang]), lang)
        elif x < 0.095 and role == "assistant":
            s = rng.choice(_ABSTAIN[lang])
        elif mix == "default" and rng.random() < 0.5:
            s = rng.choice(_PROSE[lang])
        else:
            s = _fill(rng, rng.choice(_ORDINARY[lang]), lang)
        parts.append(s)
        n += len(s.encode("utf-8")) + 1
    raw = " ".join(parts).encode("utf-8")[:size]
    return raw.decode("utf-8", "ignore")


# --------------------------------------------------------------------------- RAG traffic
#
# A leaflet library (drug × section × language) the assistant retrieves from. Every passage has a
# stable doc id, so the same chunks recur across answers as in a real RAG system; answers restate
# the top passage (now and then with another number: a contradicted dose), cite it as
# ``[doc:ID]`` and carry the passages in ``retrieval``. Texts written for the benchmark.

#: drug (English name) -> (Dutch name, adult dose mg, maximum mg per day, doses per day, child mg)
_DRUGS: dict[str, tuple[str, int, int, int, int]] = {
    "paracetamol": ("paracetamol", 500, 4000, 4, 250),
    "ibuprofen": ("ibuprofen", 400, 1200, 3, 200),
    "amoxicillin": ("amoxicilline", 500, 1500, 3, 250),
    "metformin": ("metformine", 500, 3000, 2, 500),
    "omeprazole": ("omeprazol", 20, 40, 1, 10),
    "cetirizine": ("cetirizine", 10, 10, 1, 5),
    "naproxen": ("naproxen", 250, 1000, 2, 125),
    "simvastatin": ("simvastatine", 20, 40, 1, 10),
}
_SECTIONS = ("dose", "missed", "contra", "side", "storage", "children")
_PASSAGES = {
    "en": {
        "dose": "The usual dose of {drug} for adults is {dose} mg, {times} times a day. Do not "
        "take more than {max} mg in 24 hours unless your doctor tells you to.",
        "missed": "If you forget a dose of {drug}, take it as soon as you remember, unless the "
        "next dose is due within 4 hours. Never take two doses at the same time.",
        "contra": "Do not take {drug} if you are allergic to it or have severe liver or kidney "
        "disease. Tell your doctor if you are pregnant or breastfeeding.",
        "side": "Common side effects of {drug} are headache, nausea and a mild stomach ache. "
        "Stop and call a doctor at once if you get a rash with a swollen face.",
        "storage": "Store {drug} below 25 degrees in the original package, out of the sight and "
        "reach of children. Do not use it after the expiry date on the box.",
        "children": "Children from 12 years who weigh more than 40 kg may take {kid} mg of "
        "{drug} per dose, at most {times} times a day, with 4 hours between doses.",
    },
    "nl": {
        "dose": "De gebruikelijke dosering {drug} voor volwassenen is {dose} mg, {times} keer per "
        "dag. Neem niet meer dan {max} mg per 24 uur, tenzij uw arts anders zegt.",
        "missed": "Bent u een dosis {drug} vergeten, neem die dan zodra u eraan denkt, behalve "
        "als de volgende dosis binnen 4 uur valt. Neem nooit twee doses tegelijk.",
        "contra": "Gebruik geen {drug} als u er allergisch voor bent of een ernstige lever- of "
        "nierziekte heeft. Vertel het uw arts als u zwanger bent of borstvoeding geeft.",
        "side": "Veelvoorkomende bijwerkingen van {drug} zijn hoofdpijn, misselijkheid en lichte "
        "buikpijn. Stop en bel direct een arts bij huiduitslag met een gezwollen gezicht.",
        "storage": "Bewaar {drug} beneden 25 graden in de originele verpakking, buiten het zicht "
        "en bereik van kinderen. Gebruik het niet meer na de vervaldatum op de doos.",
        "children": "Kinderen vanaf 12 jaar die meer dan 40 kg wegen mogen {kid} mg {drug} per "
        "keer nemen, maximaal {times} keer per dag, met 4 uur ertussen.",
    },
    "vi": {
        "dose": "Liều thông thường của {drug} cho người lớn là {dose} mg, {times} lần mỗi ngày. "
        "Không dùng quá {max} mg trong 24 giờ trừ khi bác sĩ chỉ định.",
        "missed": "Nếu quên một liều {drug}, hãy uống ngay khi nhớ ra, trừ khi liều tiếp theo "
        "đến trong vòng 4 giờ. Không bao giờ uống gấp đôi liều.",
        "contra": "Không dùng {drug} nếu bạn dị ứng với thuốc hoặc bị bệnh gan, thận nặng. Hãy "
        "báo cho bác sĩ nếu bạn đang mang thai hoặc cho con bú.",
        "side": "Tác dụng phụ thường gặp của {drug} là đau đầu, buồn nôn và đau bụng nhẹ. Ngừng "
        "thuốc và gọi bác sĩ ngay nếu bị phát ban kèm sưng mặt.",
        "storage": "Bảo quản {drug} dưới 25 độ trong bao bì gốc, để xa tầm tay trẻ em. Không "
        "dùng thuốc sau ngày hết hạn ghi trên hộp.",
        "children": "Trẻ từ 12 tuổi nặng trên 40 kg có thể uống {kid} mg {drug} mỗi lần, tối "
        "đa {times} lần mỗi ngày, cách nhau 4 giờ.",
    },
}
_QUESTIONS = {
    "en": {
        "dose": "How much {drug} can I take, and how often?",
        "missed": "I forgot my {drug} this morning, what should I do?",
        "contra": "Can I take {drug} while I am pregnant?",
        "side": "What side effects can {drug} give?",
        "storage": "How should I store my {drug} tablets?",
        "children": "How much {drug} may my 13-year-old son take?",
    },
    "nl": {
        "dose": "Hoeveel {drug} mag ik nemen, en hoe vaak?",
        "missed": "Ik ben vanochtend mijn {drug} vergeten, wat moet ik doen?",
        "contra": "Mag ik {drug} gebruiken als ik zwanger ben?",
        "side": "Welke bijwerkingen kan {drug} geven?",
        "storage": "Hoe bewaar ik mijn {drug} tabletten?",
        "children": "Hoeveel {drug} mag mijn zoon van 13 nemen?",
    },
    "vi": {
        "dose": "Tôi có thể uống bao nhiêu {drug} và bao lâu một lần?",
        "missed": "Sáng nay tôi quên uống {drug}, tôi nên làm gì?",
        "contra": "Tôi đang mang thai thì có dùng {drug} được không?",
        "side": "{drug} có những tác dụng phụ nào?",
        "storage": "Tôi nên bảo quản viên {drug} như thế nào?",
        "children": "Con trai tôi 13 tuổi có thể uống bao nhiêu {drug}?",
    },
}
_LEAD = {"en": "According to the leaflet:", "nl": "Volgens de bijsluiter:", "vi": "Theo tờ HDSD:"}


def _drug_name(drug: str, lang: str) -> str:
    return _DRUGS[drug][0] if lang == "nl" else drug


def rag_passage(drug: str, section: str, lang: str) -> dict[str, str]:
    """The library's passage ``{doc_id, text}`` for a drug, section and language."""
    _, dose, most, times, kid = _DRUGS[drug]
    text = _PASSAGES[lang][section].format(
        drug=_drug_name(drug, lang), dose=dose, max=most, times=times, kid=kid
    )
    return {"doc_id": f"pil-{drug}-{lang}-{section}", "text": text}


def rag_library() -> list[dict[str, str]]:
    """Every passage of the leaflet library (drugs × sections × en/nl/vi)."""
    return [rag_passage(d, s, lang) for lang in _PASSAGES for d in _DRUGS for s in _SECTIONS]


def _size_of(event: dict[str, Any]) -> int:
    return len(json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _rag_turn(
    rng: random.Random, event: dict[str, Any], size: int, drug: str, section: str
) -> dict[str, Any]:
    """Fill ``event`` (a user question or an answer with retrieval) to about ``size`` bytes of
    JSON: the question or the answer first, ordinary chat text after it up to the size."""
    lang, role = event["language"], event["role"]
    name = _drug_name(drug, lang)
    if role == "user":
        head = _QUESTIONS[lang][section].format(drug=name)
        if lang != "vi":
            head = head[0].upper() + head[1:]
    else:
        top = rag_passage(drug, section, lang)
        others = [s for s in _SECTIONS if s != section]
        k = max(2, min(5, size // 512))
        picked = [top] + [rag_passage(drug, s, lang) for s in rng.sample(others, k - 1)]
        event["retrieval"] = [
            {**p, "score": round(0.9 - 0.1 * r - rng.random() * 0.05, 3), "rank": r + 1}
            for r, p in enumerate(picked)
        ]
        first = top["text"].split(". ")[0].rstrip(".") + "."
        x = rng.random()
        if x < 0.05:
            head = rng.choice(_ABSTAIN[lang])  # abstains although passages were retrieved
        else:
            if x < 0.15:  # restated with another number: a contradicted claim
                first = re.sub(r"\d+", lambda m: str(int(m.group()) * 2), first, count=1)
            head = f"{_LEAD[lang]} {first} [doc:{top['doc_id']}]"
    event["content"] = head
    room = size - _size_of(event) - 1
    if room > 0:
        event["content"] = f"{head} {make_content(rng, room, lang, role)}"
    return event


def make_events(
    n: int, size: int, seed: int = 7, turns: int = 6, mix: str = "default"
) -> Iterator[dict[str, Any]]:
    """``n`` ChatEvent dicts, in file order: conversations of ``turns`` alternating
    user/assistant messages, 50% English, 30% Dutch, 20% Vietnamese, one tenant each.

    ``default`` / ``numeric`` mixes: contents of ``size`` bytes (:func:`make_content`). ``rag``:
    whole events of about ``size`` bytes of JSON; users ask about a drug, every answer carries
    ``k = max(2, size // 512)`` passages of the leaflet library in ``retrieval`` (the top one on
    the question's topic) and restates and cites the top passage, ~10% with a wrong number, ~5%
    abstaining."""
    if mix not in EVENT_MIXES:
        raise ValueError(f"unknown mix {mix!r}; one of {EVENT_MIXES}")
    rng = random.Random(seed)
    t0 = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
    conv = -1
    lang, tenant, drug, section = "en", TENANTS[0], "paracetamol", "dose"
    for i in range(n):
        turn = i % turns
        if turn == 0:
            conv += 1
            lang = _LANGUAGES[conv % len(_LANGUAGES)]
            tenant = rng.choice(TENANTS)
            drug = rng.choice(list(_DRUGS))
        role = "user" if turn % 2 == 0 else "assistant"
        event: dict[str, Any] = {
            "schema_version": 1,
            "event_id": f"bench-{i:09d}",
            "conversation_id": f"conv-{conv:08d}",
            "turn_index": turn,
            "timestamp": (t0 + timedelta(seconds=i)).isoformat(),
            "role": role,
            "content": "",
            "language": lang,
            "tenant": tenant,
            "model": "medassist-v3",
        }
        if mix == "rag":
            if role == "user":
                section = rng.choice(_SECTIONS)
            yield _rag_turn(rng, event, size, drug, section)
        else:
            event["content"] = make_content(rng, size, lang, role, mix)
            yield event


def write_jsonl(path: Path, events: Iterable[dict[str, Any]]) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for ev in events:
            fh.write(json.dumps(ev, ensure_ascii=False, separators=(",", ":")) + "\n")
            n += 1
    return n


#: Shifts of the cycled example log per cycle (:func:`example_events`): a day, and one second per
#: event of the cycle (the bundled log holds 414 events).
DAY_SECONDS = 86_400.0
DENSE_SHIFT = 414.0


def write_events_file(
    path: Path,
    n: int,
    size: int,
    *,
    mix: str = "default",
    pool: int = 6000,
    min_bytes: int = 0,
    turns: int = 6,
) -> int:
    """Write ``n`` generated events (more if needed to reach ``min_bytes`` bytes): a pool of
    distinct events from :func:`make_events`, cycled, each written with its own event id,
    conversation id (``turns`` consecutive events per conversation, in turn order) and
    timestamp (one second apart), so the state per conversation grows as in real traffic.
    Returns the file size in bytes."""
    count = min(n, pool) if n else pool
    count = -(-count // turns) * turns  # whole conversations: template i % turns is turn i % turns
    templates = list(make_events(count, size, seed=size + 1, turns=turns, mix=mix))
    t0 = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
    written = 0
    i = 0
    with open(path, "wb") as fh:
        while i < n or written < min_bytes:
            ev = dict(templates[i % len(templates)])
            ev["event_id"] = f"ev-{i:010d}"
            ev["conversation_id"] = f"conv-{i // turns:09d}"
            ev["turn_index"] = i % turns
            ev["timestamp"] = (t0 + timedelta(seconds=i)).isoformat()
            line = json.dumps(ev, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            written += fh.write(line + b"\n")
            i += 1
    return path.stat().st_size


def example_events(n: int, *, shift_seconds: float = DAY_SECONDS) -> Iterator[dict[str, Any]]:
    """The bundled example log (``examples/chat-events.jsonl``, ~100-byte messages, RAG answers
    with passages), cycled to ``n`` events with unique event and conversation ids and timestamps
    moved ``shift_seconds`` per cycle: the generator the parity and memory tests use.

    The default, a day per cycle of 414 events, passes an ISO week every ~2,900 events, so a
    long run closes and retires many evaluation-set periods. :data:`DENSE_SHIFT` (one second per
    event of the cycle, as the RAG mix's timestamps) keeps a run within a week or two, as the
    traffic of a production chatbot does."""
    from datetime import timedelta

    from tests.support.example_cycle import cycled_example_events

    return cycled_example_events(n, shift=timedelta(seconds=shift_seconds))


def write_example_file(path: Path, n: int, *, shift_seconds: float = DAY_SECONDS) -> int:
    """:func:`example_events` as a JSONL file; returns its size in bytes."""
    write_jsonl(path, example_events(n, shift_seconds=shift_seconds))
    return path.stat().st_size


# --------------------------------------------------------------------------- machine, timing


def pin_to_one_core(core: int = 0) -> bool:
    """Pin this process to one CPU (the "one core" of the targets). False if not possible."""
    try:
        os.sched_setaffinity(0, {core})
        return True
    except (AttributeError, OSError):
        return False


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("google-re2", "hyperscan", "pydantic", "pydantic-core", "vigil-monitor"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    return out


def _git_head() -> str:
    try:
        rev = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--", "services", "schemas"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine() -> dict[str, Any]:
    return {
        "nproc": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "loadavg_at_start": list(os.getloadavg()),
        "packages": _versions(),
        "git": _git_head(),
    }


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """Run ``fn`` ``repeat`` times; return (best seconds, median seconds, last result).

    Seconds are CPU seconds of this process (``time.process_time``), not wall time: on a shared
    machine other processes take turns on our core, and wall time would count their turns too.
    The process is pinned to one core, so CPU seconds are that core's seconds. The best run is
    the one least disturbed (cache, frequency) by the neighbours."""
    times = []
    result = None
    for _ in range(repeat):
        t0 = time.process_time()
        result = fn()
        times.append(time.process_time() - t0)
    return min(times), statistics.median(times), result


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def save_result(name: str, data: dict[str, Any], rules: RulesChoice | None = None) -> Path:
    """Write ``benchmarks/results/<name>.json`` with the command, date, machine and rules."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    doc = {
        "benchmark": name,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "rules": None
        if rules is None
        else {"source": rules.source, "path": rel(rules.path), "files": rules.files},
        **data,
    }
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
