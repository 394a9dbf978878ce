"""Deterministic generator of chat-event streams for the integration tests.

``generate_events(n, seed=...)`` returns ``n`` valid ``ChatEvent`` dicts from many interleaved
conversations (like real traffic: turns of different conversations alternate, each
conversation's turns stay in order). It mixes the content kinds the default rule packs look for —
PII (emails, phones, IBANs, cards, BSNs, CCCDs, IPs, SSNs), secrets, prompt-leak canaries, dose
and contraindication statements, abstentions — with ordinary messages full of numbers that must
not fire (dates, prices, versions, checksum-failing lookalikes). Assistant turns echo the user's
own values (sometimes many turns later, sometimes reformatted) or leak values the user never gave.

When ``examples/chat-events.jsonl`` exists, part of the conversations are copies of its
conversations, re-keyed (new conversation and event ids, timestamps on the generator's clock).

The same seed always yields the same bytes. Values are synthetic.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import phonenumbers
from stdnum import iban as std_iban
from stdnum import luhn
from stdnum.nl import bsn as std_bsn

from schemas.events import ChatEvent

__all__ = [
    "EXAMPLES_PATH",
    "Values",
    "event",
    "generate_events",
    "invalid_lines",
    "load_example_conversations",
    "memory_probes",
    "write_jsonl",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES_PATH = REPO_ROOT / "examples" / "chat-events.jsonl"
EPOCH = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)

_FIRST = ["anna", "bram", "chloe", "daan", "eva", "finn", "linh", "minh", "thu", "quang", "sophie"]
_LAST = ["jansen", "de.vries", "bakker", "visser", "nguyen", "tran", "le", "pham", "smith", "evans"]
_DOMAINS = ["example.org", "example.com", "mail.example.net", "zorg.example.nl", "benh.example.vn"]
_BANKS = ["ABNA", "RABO", "INGB", "TRIO", "SNSB"]
_VN_PROVINCES = ["001", "031", "048", "079", "092"]  # Hà Nội, Hải Phòng, Đà Nẵng, HCMC, Cần Thơ
_TENANTS = ["rivierland", "saigon-care", "acme-health", None]
_B32 = string.ascii_uppercase + "234567"
_ALNUM = string.ascii_letters + string.digits


class Values:
    """Random but valid personal and secret values, from one seeded RNG."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self._n = 0

    def _digits(self, k: int) -> str:
        return "".join(self.rng.choice(string.digits) for _ in range(k))

    def email(self) -> str:
        self._n += 1
        r = self.rng
        return f"{r.choice(_FIRST)}.{r.choice(_LAST)}{self._n}@{r.choice(_DOMAINS)}"

    def phone(self) -> str:
        """A valid NL, VN, GB or US number in a local or international format."""
        r = self.rng
        while True:
            kind = r.randrange(5)
            if kind == 0:
                text = f"06-{r.randint(10, 59)}{self._digits(6)}"
                region = "NL"
            elif kind == 1:
                text = f"+31 6 {r.randint(10, 59)}{self._digits(2)} {self._digits(4)}"
                region = None
            elif kind == 2:
                text = f"09{r.choice('0134')}{self._digits(1)} {self._digits(3)} {self._digits(3)}"
                region = "VN"
            elif kind == 3:
                text = f"+44 20 79{self._digits(2)} {self._digits(4)}"
                region = None
            else:
                text = (
                    f"({r.choice(['212', '415', '617'])}) {r.randint(201, 989)}-{self._digits(4)}"
                )
                region = "US"
            try:
                if phonenumbers.is_valid_number(phonenumbers.parse(text, region)):
                    return text
            except phonenumbers.NumberParseException:
                pass

    def iban(self, spaced: bool | None = None) -> str:
        bban = self.rng.choice(_BANKS) + self._digits(10)
        check = std_iban.calc_check_digits("NL00" + bban)
        value = f"NL{check}{bban}"
        assert std_iban.is_valid(value)
        if spaced if spaced is not None else self.rng.random() < 0.5:
            value = " ".join(value[i : i + 4] for i in range(0, len(value), 4))
        return value

    def card(self) -> str:
        body = self.rng.choice(["4", "51", "55"]) + self._digits(14)
        body = body[:15]
        digits = body + luhn.calc_check_digit(body)
        return " ".join(digits[i : i + 4] for i in range(0, 16, 4))

    def bad_card(self) -> str:
        """A 16-digit number that fails Luhn."""
        good = self.card().replace(" ", "")
        last = str((int(good[-1]) + 1 + self.rng.randrange(8)) % 10)
        digits = good[:-1] + last
        assert not luhn.is_valid(digits)
        return " ".join(digits[i : i + 4] for i in range(0, 16, 4))

    def bsn(self) -> str:
        while True:
            body = str(self.rng.randint(1, 9)) + self._digits(7)
            check = sum((9 - i) * int(d) for i, d in enumerate(body)) % 11
            if check < 10 and std_bsn.is_valid(body + str(check)):
                return body + str(check)

    def bsn_labelled(self) -> str:
        """A BSN with the context word the rule requires (nine digits alone are too common)."""
        return f"BSN {self.bsn()}"

    def cccd_labelled(self) -> str:
        return f"CCCD {self.cccd()}"

    def cccd(self) -> str:
        r = self.rng
        return (
            f"{r.choice(_VN_PROVINCES)}{r.choice('0123')}{r.randint(50, 99):02d}{self._digits(6)}"
        )

    def ip(self) -> str:
        r = self.rng
        return ".".join(
            [str(r.choice([81, 145, 213, 62]))] + [str(r.randint(1, 254)) for _ in "abc"]
        )

    def ssn(self) -> str:
        r = self.rng
        return f"{r.randint(101, 665):03d}-{r.randint(10, 99):02d}-{r.randint(1000, 9999):04d}"

    def aws_key(self) -> str:
        return "AKIA" + "".join(self.rng.choice(_B32) for _ in range(16))

    def github_token(self) -> str:
        return "ghp_" + "".join(self.rng.choice(_ALNUM) for _ in range(36))

    def password(self) -> str:
        return "".join(self.rng.choice(_ALNUM + "!#%") for _ in range(14))


# --------------------------------------------------------------------------- phrasing

_SHARE = {
    "en": [
        "Hi, my email is {v}, can you send me the leaflet?",
        "You can reach me at {v} if anything changes.",
        "My details for the appointment: {v}.",
    ],
    "nl": [
        "Hallo, mijn e-mailadres is {v}, kunt u de bijsluiter sturen?",
        "U kunt mij bereiken via {v} als er iets verandert.",
        "Mijn gegevens voor de afspraak: {v}.",
    ],
    "vi": [
        "Xin chào, email của tôi là {v}, bạn có thể gửi tờ hướng dẫn không?",
        "Bạn có thể liên hệ với tôi qua {v} nếu có thay đổi.",
        "Thông tin của tôi cho buổi hẹn: {v}.",
    ],
}
_ECHO = {
    "en": ["Thanks, I have noted {v} for your appointment.", "I will send it to {v} today."],
    "nl": ["Dank u, ik heb {v} genoteerd voor uw afspraak.", "Ik stuur het vandaag naar {v}."],
    "vi": ["Cảm ơn, tôi đã ghi lại {v} cho buổi hẹn.", "Tôi sẽ gửi đến {v} hôm nay."],
}
_LEAK = {
    "en": ["Another patient, reachable at {v}, had the same question.", "Dr. Evans: {v}."],
    "nl": ["Een andere patiënt, bereikbaar via {v}, had dezelfde vraag.", "Dr. Visser: {v}."],
    "vi": ["Một bệnh nhân khác, liên hệ qua {v}, cũng hỏi như vậy.", "Bác sĩ Trần: {v}."],
}
_QUESTION = {
    "en": ["How much paracetamol may I take?", "Can I combine ibuprofen with my blood thinner?"],
    "nl": [
        "Hoeveel paracetamol mag ik nemen?",
        "Mag ik ibuprofen combineren met mijn bloedverdunner?",
    ],
    "vi": [
        "Tôi có thể uống bao nhiêu paracetamol?",
        "Tôi có thể dùng ibuprofen với thuốc chống đông không?",
    ],
}
_DOSE = {
    "en": [
        "Adults may take 500 mg paracetamol every 6 hours, at most 4 g per day [doc:pil-12].",
        "Take 1 tablet of 400 mg ibuprofen up to 3 times a day with food.",
    ],
    "nl": [
        "Volwassenen mogen elke 6 uur 500 mg paracetamol nemen, maximaal 4 gram per dag.",
        "Neem 1 tablet van 400 mg ibuprofen, maximaal 3 keer per dag, bij het eten.",
    ],
    "vi": [
        "Người lớn có thể uống 500 mg paracetamol mỗi 6 giờ, tối đa 4 g mỗi ngày.",
        "Uống 1 viên ibuprofen 400 mg, tối đa 3 lần mỗi ngày sau khi ăn.",
    ],
}
_CONTRA = {
    "en": ["Do not take ibuprofen if you have a stomach ulcer or use blood thinners."],
    "nl": ["Gebruik geen ibuprofen als u een maagzweer heeft of bloedverdunners gebruikt."],
    "vi": ["Không dùng ibuprofen nếu bạn bị loét dạ dày hoặc đang dùng thuốc chống đông."],
}
_ABSTAIN = {
    "en": ["I'm sorry, I don't know. Please contact your pharmacist or GP."],
    "nl": ["Dat weet ik helaas niet. Neem contact op met uw apotheker of huisarts."],
    "vi": ["Xin lỗi, tôi không biết. Vui lòng liên hệ dược sĩ hoặc bác sĩ của bạn."],
}
_ORDINARY = {
    "en": [
        "Your appointment is on 2026-03-14 at 10:30 in room 4.12.",
        "Order 88231-77 costs EUR 49.95 including 21% VAT.",
        "Version 3.14.2 of the app fixes the login problem.",
        "The card number {bad} was declined, please check it.",
        "Reference 2026/0412/118 was received on 12 March.",
        "Thanks, that helps a lot!",
    ],
    "nl": [
        "Uw afspraak is op 14-03-2026 om 10:30 in kamer 4.12.",
        "Bestelling 88231-77 kost € 49,95 inclusief 21% btw.",
        "Versie 3.14.2 van de app lost het inlogprobleem op.",
        "Het kaartnummer {bad} werd geweigerd, controleer het alstublieft.",
        "Dank u wel, dat helpt!",
    ],
    "vi": [
        "Lịch hẹn của bạn vào ngày 14/03/2026 lúc 10:30 tại phòng 4.12.",
        "Đơn hàng 88231-77 có giá 1.250.000 đồng.",
        "Phiên bản 3.14.2 của ứng dụng đã sửa lỗi đăng nhập.",
        "Cảm ơn, rất hữu ích!",
    ],
}
_SECRET_SHARE = [
    "Our integration fails, the key is {v}, can you check?",
    "I pasted the config: password={v}",
    "Token for the API: {v}",
]
_PROMPT_LEAK = [
    "My instructions say: do not reveal them. Internal reference VGL-CANARY-7F3A91C2.",
    "Internal note zebra-quartz-lantern-4417 applies here.",
]


@dataclass
class _Turn:
    role: str
    content: str
    extra: dict[str, Any] = field(default_factory=dict)


def _conversation(rng: random.Random, values: Values) -> tuple[str, list[_Turn]]:
    """One synthetic conversation: its language and its turns."""
    lang = rng.choice(["en", "en", "nl", "nl", "vi"])
    pick = rng.choice
    turns: list[_Turn] = []
    own: list[str] = []  # values the user gave, for later echoes
    if rng.random() < 0.15:
        turns.append(_Turn("system", "You are MedAssist. Cite passages as [doc:ID]."))
    for _ in range(rng.randint(1, 5)):
        kind = rng.choices(
            ["share", "question", "secret", "ordinary", "card"], weights=[4, 3, 1, 3, 1]
        )[0]
        if kind == "share":
            gen = pick(
                [
                    values.email,
                    values.email,
                    values.phone,
                    values.iban,
                    values.bsn_labelled,
                    values.cccd_labelled,
                    values.ip,
                    values.ssn,
                ]
            )
            v = gen()
            own.append(v)
            turns.append(_Turn("user", pick(_SHARE[lang]).format(v=v)))
        elif kind == "card":
            v = values.card()
            own.append(v)
            turns.append(_Turn("user", f"Please charge card {v} for the copay."))
        elif kind == "secret":
            v = pick([values.aws_key, values.github_token, values.password])()
            own.append(v)
            turns.append(_Turn("user", pick(_SECRET_SHARE).format(v=v)))
        elif kind == "question":
            turns.append(_Turn("user", pick(_QUESTION[lang])))
        else:
            turns.append(_Turn("user", pick(_ORDINARY[lang]).format(bad=values.bad_card())))
        if rng.random() < 0.1:
            turns.append(_Turn("tool", json.dumps({"lookup": "ok", "rows": rng.randint(0, 9)})))
        answer = rng.choices(
            ["echo", "leak", "echo_leak", "dose", "contra", "abstain", "ordinary", "prompt"],
            weights=[4, 3, 2, 3, 2, 2, 4, 1],
        )[0]
        extra: dict[str, Any] = {"confidence": round(rng.random(), 3)}
        if answer in ("echo", "echo_leak") and own:
            v = pick(own)
            if rng.random() < 0.3:  # reformatted: case and separators differ
                if "@" in v:
                    v = v.upper()
                elif not v.startswith(("BSN", "CCCD")):
                    v = v.replace(" ", "")
            text = pick(_ECHO[lang]).format(v=v)
            if answer == "echo_leak":
                text += " " + pick(_LEAK[lang]).format(v=pick([values.email, values.phone])())
        elif answer in ("leak", "echo", "echo_leak"):
            gen = pick([values.email, values.phone, values.iban, values.card, values.bsn_labelled])
            text = pick(_LEAK[lang]).format(v=gen())
        elif answer == "dose":
            text = pick(_DOSE[lang])
            extra["retrieval"] = [{"doc_id": "pil-12", "text": text, "score": 0.82, "rank": 0}]
            extra["citations"] = ["pil-12"]
        elif answer == "contra":
            text = pick(_CONTRA[lang])
        elif answer == "abstain":
            text = pick(_ABSTAIN[lang])
        elif answer == "prompt":
            text = pick(_PROMPT_LEAK)
        else:
            text = pick(_ORDINARY[lang]).format(bad=values.bad_card())
        turns.append(_Turn("assistant", text, extra))
    return lang, turns


def load_example_conversations(path: Path = EXAMPLES_PATH) -> list[list[dict[str, Any]]]:
    """The valid events of the example log grouped by conversation, in file order."""
    if not path.is_file():
        return []
    convs: dict[str, list[dict[str, Any]]] = {}
    with open(path, "rb") as fh:
        for raw in fh:
            if not raw.strip():
                continue
            try:
                ChatEvent.model_validate_json(raw)
                obj = json.loads(raw)
            except ValueError:
                continue  # planted invalid lines stay out of the re-keyed copies
            convs.setdefault(obj["conversation_id"], []).append(obj)
    return list(convs.values())


def event(
    event_id: str,
    conversation_id: str,
    turn: int,
    role: str,
    content: str,
    *,
    when: datetime = EPOCH,
    **extra: Any,
) -> dict[str, Any]:
    """A valid ChatEvent dict."""
    return {
        "schema_version": 1,
        "event_id": event_id,
        "conversation_id": conversation_id,
        "turn_index": turn,
        "timestamp": when.isoformat().replace("+00:00", "Z"),
        "role": role,
        "content": content,
        **{k: v for k, v in extra.items() if v is not None},
    }


def memory_probes(n: int, prefix: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(user turns, answers)`` of ``n`` conversations that test conversation memory across
    whatever happens between the two lists (a kill, a rebalance, a restart): each user gives an
    address; the answer repeats it in capitals (``echo``: only right with the user's turn
    remembered) and gives another one (``leak``)."""
    before, after = [], []
    for i in range(n):
        cid = f"{prefix}-mem-{i:03d}"
        own = f"own.{i}.{prefix}@example.org"
        before.append(event(f"{cid}-t0", cid, 0, "user", f"Mail me at {own} please."))
        answer = f"Sent to {own.upper()}; copy to other.{i}.{prefix}@example.com."
        after.append(event(f"{cid}-t1", cid, 1, "assistant", answer))
    return before, after


def generate_events(
    n: int,
    *,
    seed: int = 20261102,
    prefix: str = "gen",
    concurrency: int = 40,
    examples: Path | None = EXAMPLES_PATH,
    example_share: float = 0.4,
) -> list[dict[str, Any]]:
    """``n`` valid events from interleaved conversations (see the module docstring)."""
    rng = random.Random(seed)
    values = Values(rng)
    example_convs = load_example_conversations(examples) if examples is not None else []
    clock = EPOCH
    out: list[dict[str, Any]] = []
    active: list[Iterator[dict[str, Any]]] = []
    serial = 0

    def new_conversation() -> Iterator[dict[str, Any]]:
        nonlocal serial
        serial += 1
        if example_convs and rng.random() < example_share:
            cid = f"{prefix}-x{serial:06d}"
            return _rekeyed(cid, rng.choice(example_convs))
        cid = f"{prefix}-c{serial:06d}"
        lang, turns = _conversation(rng, values)
        tenant = rng.choice(_TENANTS)
        return (
            event(
                f"{cid}-t{i:02d}",
                cid,
                i,
                t.role,
                t.content,
                language=lang,
                tenant=tenant,
                channel="web",
                **t.extra,
            )
            for i, t in enumerate(turns)
        )

    while len(out) < n:
        while len(active) < concurrency:
            active.append(new_conversation())
        idx = rng.randrange(len(active))
        ev = next(active[idx], None)
        if ev is None:
            active.pop(idx)
            continue
        clock += timedelta(seconds=rng.randint(1, 20))
        ev["timestamp"] = clock.isoformat().replace("+00:00", "Z")
        out.append(ev)
    return out


def _rekeyed(cid: str, source: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for i, original in enumerate(source):
        ev = dict(original)
        ev["conversation_id"] = cid
        ev["event_id"] = f"{cid}-t{i:02d}"
        yield ev


def invalid_lines(prefix: str = "bad") -> list[tuple[str, bytes]]:
    """Messages a worker must dead-letter, each with its expected reason."""
    good = event(f"{prefix}-e1", f"{prefix}-c1", 0, "user", "hello")
    oversize = dict(good, content="x" * (64 * 1024 + 10))
    return [
        ("bad_json", b'{"schema_version": 1, "event_id": "' + prefix.encode() + b"-trunc"),
        ("bad_json", b"not json at all"),
        ("schema", json.dumps(dict(good, role="wizard")).encode()),
        ("schema", json.dumps(dict(good, event_id="")).encode()),
        ("schema", json.dumps({k: v for k, v in good.items() if k != "timestamp"}).encode()),
        ("oversize", json.dumps(oversize).encode()),
        ("oversize", b'{"content": "' + b"y" * (400 * 1024) + b'"}'),
        ("bad_utf8", b'{"schema_version": 1, "content": "caf\xe9 \xff\xfe"}'),
    ]


def write_jsonl(path: Path, events: Iterable[dict[str, Any] | bytes]) -> Path:
    """Write events (dicts as compact JSON, bytes as given) one per line."""
    with open(path, "wb") as fh:
        for ev in events:
            line = ev if isinstance(ev, bytes) else json.dumps(ev, ensure_ascii=False).encode()
            assert b"\n" not in line
            fh.write(line + b"\n")
    return path
