"""Detection quality of the default rule packs against public labelled corpora (issue 2, item 10).

Run from the repo root::

    python benchmarks/detection_quality.py --write docs/detection-quality.md

Each corpus becomes :class:`Case` records: a text, the entities judged on it, the gold spans of
those entities, and *excluded* gold spans, each with the reason it is excluded: outside what the
rule claims (a Swiss phone number, a loopback address), or a corpus label we disagree with. A
prediction matches a gold span of the same entity when they overlap (one to one); a prediction
overlapping an excluded span counts neither way. Every metric is given twice: ``raw`` against the
labels as published and ``claimed`` with the exclusions. The gate (0.95, ``Report.failures``)
applies to ``claimed``; the report lists every exclusion and every remaining disagreement.
"""

from __future__ import annotations

import argparse
import datetime as dt
import ipaddress
import json
import random
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import phonenumbers
from phonenumbers import Leniency
from stdnum import luhn
from stdnum.nl import bsn
from stdnum.us import ssn

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # runnable as a script from anywhere
    sys.path.insert(0, str(REPO_ROOT))

from services.rules import RuleEngine, load_packs, load_prompt_registry  # noqa: E402
from services.rules.examples import EXAMPLE_PHONE_REGIONS  # noqa: E402

__all__ = [
    "CLAIMED",
    "NOT_CLAIMED",
    "THRESHOLD",
    "Case",
    "Report",
    "build_cases",
    "default_corpora",
    "default_engine",
    "measure",
    "render_markdown",
]

THRESHOLD = 0.95
COMMAND = "python benchmarks/detection_quality.py --write docs/detection-quality.md"

#: Entities whose precision and recall we claim (the gate), with what the claim covers.
CLAIMED: dict[str, str] = {
    "EMAIL_ADDRESS": "addresses with a letter or punycode TLD",
    "PHONE_NUMBER": (
        "NL, VN, GB (+GG/JE/IM) and US/CA numbers in a grouping phonenumbers accepts for the"
        " country, or any valid number written with + or 00"
    ),
    "CREDIT_CARD": "13–19 digits (12 next to a card word), contiguous or usual groups, Luhn",
    "IBAN_CODE": "compact, or upper case in groups of four (spaces or dashes); python-stdnum valid",
    "IP_ADDRESS": "IPv4 / IPv6 other than loopback and unspecified",
    "US_SSN": (
        "123-45-6789, or 9 digits plain, with spaces or dots, or 123-456789, next to an SSN word"
    ),
    "NL_BSN": "9 digits passing the 11-check next to a BSN word",
    "SECRET:aws_key": "AWS access key ids; secret keys in aws_*secret/access* assignments",
    "SECRET:github_token": "ghp_ / gho_ / ghu_ / ghs_ / ghr_ and github_pat_ tokens",
    "SECRET:slack": "Slack tokens (xoxa/b/p/o/r/s-) and incoming-webhook URLs",
    "SECRET:jwt": "JWTs whose header decodes to JSON with alg",
    "SECRET:stripe_key": "Stripe live secret and restricted keys",
    "SECRET:openai": "OpenAI API keys (T3BlbkFJ marker)",
    "SECRET:gitlab_token": (
        "glpat- / gldt- / glft- / glsoat- / glrt- / glcbt- / GR1348941 (20–50 characters),"
        " glimt- (25), glptt- (40), gloas- (64), glagent- (50+)"
    ),
}
#: Entities with rules but no claim, and why.
NOT_CLAIMED: dict[str, str] = {
    "SECRET:basic_auth": (
        "measured, not claimed: the corpus's only positive uses the placeholder 'password',"
        " which the rule rejects by design, so there is no positive left to measure recall"
    ),
    "VN_CCCD": (
        "no independent labelled data (python-stdnum has no CCCD module); 0 findings on the 500"
        " English synth sentences; covered by the rule's own examples only"
    ),
    "PASSWORD, GENERIC_SECRET, PRIVATE_KEY, GOOGLE_API_KEY, ANTHROPIC_API_KEY": (
        "no labelled cases in the corpora for these rules (see the cross-check table for what they"
        " find on detect-secrets rows of other plugins); examples only"
    ),
    "DOSE_STATEMENT, CONTRAINDICATION, ABSTENTION, PROMPT_CANARY, SYSTEM_PROMPT": (
        "no labelled corpus; examples only (see the unlabelled-text scan below for what the"
        " medical rules find in PubMedQA abstracts)"
    ),
}
#: detect-secrets plugin -> the entities of ours that cover it.
SECRET_PLUGINS: dict[str, frozenset[str]] = {
    "aws_key": frozenset({"AWS_ACCESS_KEY", "AWS_SECRET_KEY"}),
    "github_token": frozenset({"GITHUB_TOKEN"}),
    "slack": frozenset({"SLACK_TOKEN", "SLACK_WEBHOOK"}),
    "jwt": frozenset({"JWT"}),
    "stripe_key": frozenset({"STRIPE_KEY"}),
    "openai": frozenset({"OPENAI_API_KEY"}),
    "gitlab_token": frozenset({"GITLAB_TOKEN"}),
    "basic_auth": frozenset({"URL_CREDENTIALS"}),
}
PII_ENTITIES = (
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "CREDIT_CARD",
    "IBAN_CODE",
    "IP_ADDRESS",
    "US_SSN",
    "NL_BSN",
    "VN_CCCD",
)
#: The regions of the claim: the defaults (VIGIL_PHONE_REGIONS) and those their rules share a
#: numbering plan with (crown dependencies, Canada).
PHONE_REGIONS = ("NL", "VN", "GB", "GG", "JE", "IM", "US", "CA")
#: The wider set the report measures as well (with its own claim): EXAMPLE_PHONE_REGIONS.
WIDE_PHONE_REGIONS = (*EXAMPLE_PHONE_REGIONS, "GG", "JE", "IM", "CA")
SSN_WORDS = ("ssn", "social security", "ss#", "an sinh xã hội")

#: Corpus labels we disagree with, by case id: excluded from ``claimed``, listed with the reason.
OVERRIDES: dict[str, str] = {
    "detect-secrets-0032": (
        "label disputed: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY is the example key printed in"
        " the AWS documentation, which chatbots quote when explaining configuration; the rule"
        " rejects values containing EXAMPLE"
    ),
    "detect-secrets-0035": (
        "label disputed: https://username:password@yelp.com has the literal placeholder"
        " 'password'; placeholders are rejected by design"
    ),
}
#: Disagreements that stay counted, by case id, with the explanation shown in the report.
NOTES: dict[str, str] = {
    "presidio-case-0049": (
        "BE68539007547034 passes mod-97, but python-stdnum's Belgian check rejects bank code 539"
        " (not in its bank registry); we keep the stricter national check"
    ),
}


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    entity: str
    note: str = ""  # why a gold span is excluded, or which rule made a prediction


@dataclass(frozen=True, slots=True)
class Case:
    """One text, the entities judged on it, their gold spans and the excluded gold spans.

    ``count`` replaces spans where the corpus gives only the number of expected detections;
    ``whole`` marks a case-level label (detect-secrets): one prediction makes the text positive.
    """

    id: str
    corpus: str
    text: str
    judged: frozenset[str]
    gold: tuple[Span, ...] = ()
    excluded: tuple[Span, ...] = ()
    count: int | None = None
    whole: bool = False
    language: str | None = None


@dataclass
class Tally:
    cases: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0
    exact: int = 0  # true positives whose span equals the gold span

    def add(self, other: Tally) -> None:
        self.cases += other.cases
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn
        self.exact += other.exact

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


@dataclass(frozen=True, slots=True)
class Disagreement:
    entity: str
    kind: str  # "FP" | "FN" | "excluded"
    case_id: str
    text: str
    value: str
    why: str


@dataclass
class Report:
    claimed: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    raw: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    by_corpus: dict[tuple[str, str], Tally] = field(default_factory=lambda: defaultdict(Tally))
    disagreements: list[Disagreement] = field(default_factory=list)

    def failures(self, threshold: float = THRESHOLD) -> list[str]:
        """Claimed entities below ``threshold`` in precision or recall (empty: the gate passes)."""
        out = []
        for entity in CLAIMED:
            t = self.claimed.get(entity, Tally())
            if t.tp + t.fn == 0:
                out.append(f"{entity}: no labelled positives")
            elif t.precision < threshold or t.recall < threshold:
                out.append(f"{entity}: precision {t.precision:.3f}, recall {t.recall:.3f}")
        return out


# ------------------------------------------------------------------------------- claims (scope)


def _phone_in_claim(value: str, regions: tuple[str, ...] = PHONE_REGIONS) -> bool:
    """Any valid number written with + or 00; else a valid number of a claimed country written
    in a grouping phonenumbers accepts for it (``STRICT_GROUPING``), with the trunk 0 where the
    country has one. This keeps out foreign local numbers whose digits happen to be valid in a
    claimed country (a Swiss ``056 590 36 33`` is also a valid Vietnamese digit string)."""
    v = value.strip()
    if v.startswith(("+", "00")):
        try:
            return phonenumbers.is_valid_number(phonenumbers.parse("+" + v.lstrip("+0"), None))
        except phonenumbers.NumberParseException:
            return False
    digits = "".join(ch for ch in v if ch.isdigit())
    for region in regions:
        meta = phonenumbers.PhoneMetadata.metadata_for_region(region)
        if meta is not None and meta.national_prefix == "0" and not digits.startswith("0"):
            continue
        for m in phonenumbers.PhoneNumberMatcher(v, region, leniency=Leniency.STRICT_GROUPING):
            if phonenumbers.region_code_for_number(m.number) in regions:
                return True
    return False


def _outside_claim(entity: str, text: str, start: int, end: int) -> str | None:
    """Why a gold span lies outside what our rules claim, or ``None`` when it is inside."""
    value = text[start:end]
    if entity == "PHONE_NUMBER" and not _phone_in_claim(value):
        return (
            "outside claim: not a NL/VN/GB/US number in that country's grouping, nor a valid"
            " +/00 international number (phonenumbers)"
        )
    if entity == "IP_ADDRESS":
        if text[end : end + 1] == "." and text[end + 1 : end + 2].isdigit():
            return "outside claim: part of a longer dotted number (1.2.3.4.5 is not an address)"
        try:
            addr = ipaddress.ip_address(value.split("/", 1)[0].split("%", 1)[0])
        except ValueError:
            return None
        if addr.is_loopback or addr.is_unspecified:
            return "outside claim: loopback / unspecified address is not personal data"
    if entity == "US_SSN":
        dashed = len(value) == 11 and value[3] == "-" and value[6] == "-"
        window = text[max(0, start - 60) : end + 60].lower()
        if not dashed and not any(w in window for w in SSN_WORDS):
            return "outside claim: not 123-45-6789 and no SSN word nearby"
        if len(value) == 10 and value[5] == "-":
            return "outside claim: 12345-6789 is how a US ZIP+4 code is written"
    if entity == "IBAN_CODE":
        groups = value.replace("-", " ").split(" ")
        compact = len(groups) == 1 and value.isalnum()
        grouped = (
            all(g.isalnum() and (g.isupper() or g.isdigit()) for g in groups)
            and all(len(g) == 4 for g in groups[:-1])
            and 1 <= len(groups[-1]) <= 4
        )
        if not (compact or grouped):
            return "outside claim: neither compact nor upper case in groups of four"
    return None


def _case(
    cid: str,
    corpus: str,
    text: str,
    judged: Iterable[str],
    spans: Iterable[Span],
    **kw: Any,
) -> Case:
    gold, excluded = [], []
    for s in spans:
        why = OVERRIDES.get(cid) or _outside_claim(s.entity, text, s.start, s.end)
        (excluded if why else gold).append(Span(s.start, s.end, s.entity, why or ""))
    return Case(cid, corpus, text, frozenset(judged), tuple(gold), tuple(excluded), **kw)


# ------------------------------------------------------------------------------------ corpora


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def presidio_recognizer_cases(corpora: Path) -> Iterator[Case]:
    """Presidio's recognizer tests: only the target entity is judged on each text. Phone cases
    run with a non-default ``leniency`` are skipped (Presidio's default is 1, VALID)."""
    path = corpora / "presidio_recognizer_cases" / "presidio_recognizer_cases.jsonl"
    for r in _jsonl(path):
        entity = r["target_entity"]
        if entity not in PII_ENTITIES or (r.get("extra_params") or {}).get("leniency", 1) != 1:
            continue
        spans = [Span(s["start"], s["end"], entity) for s in r["spans"]]
        if r["expected_count"] and not spans:  # upstream gives a count but no positions
            yield Case(
                r["id"],
                "presidio_recognizer_cases",
                r["text"],
                frozenset({entity}),
                count=r["expected_count"],
            )
        else:
            yield _case(r["id"], "presidio_recognizer_cases", r["text"], {entity}, spans)


def presidio_synth_cases(corpora: Path) -> Iterator[Case]:
    """Synthetic sentences labelled for all their PII: every PII entity of ours is judged."""
    for r in _jsonl(corpora / "presidio_synth_pii" / "presidio_synth_pii_500.jsonl"):
        spans = [
            Span(s["start"], s["end"], s["entity_type"])
            for s in r["spans"]
            if s["entity_type"] in PII_ENTITIES
        ]
        yield _case(r["id"], "presidio_synth_pii", r["text"], PII_ENTITIES, spans)


def stdnum_cases(corpora: Path) -> Iterator[Case]:
    """python-stdnum IBAN and BSN vectors and django-localflavor BSNs, as written upstream.

    IBANs are judged bare (the rule needs no context). BSNs follow "Mijn BSN is", as the rule
    claims BSNs next to a BSN word only: that sentence is ours, the labels are upstream's. IBANs
    valid only with ``check_country=False`` are negatives for us (we apply the national checks).
    """
    rows = [
        *_jsonl(corpora / "stdnum_vectors" / "stdnum_vectors.jsonl"),
        *_jsonl(corpora / "stdnum_vectors" / "localflavor_nl_bsn.jsonl"),
    ]
    seen: set[tuple[str, str]] = set()
    for r in rows:
        module, number = r["module"], r["number"]
        if module not in ("iban", "nl.bsn") or (module, number) in seen:
            continue
        seen.add((module, number))
        valid = r["valid"] and not r.get("condition")
        if module == "iban":
            spans = [Span(0, len(number), "IBAN_CODE")] if valid else []
            yield _case(r["id"], "stdnum_vectors", number, {"IBAN_CODE"}, spans)
        else:
            text = f"Mijn BSN is {number}."
            spans = [Span(12, 12 + len(number), "NL_BSN")] if valid else []
            yield _case(r["id"], "stdnum_vectors", text, {"NL_BSN"}, spans, language="nl")


def bsn_constructed_cases(n: int = 2000, seed: int = 20240315) -> Iterator[Case]:
    """CONSTRUCTED here: random 9-digit numbers in BSN sentences, labelled by python-stdnum as an
    independent oracle (as the stdnum_vectors README suggests), and the same numbers as order or
    invoice numbers, negative by construction."""
    rng = random.Random(seed)
    with_word = ("Mijn BSN is {}.", "Burgerservicenummer: {}", "BSN {} staat op mijn pas.")
    without = ("Bestelling {} is verzonden.", "Factuur {} is betaald.", "Ticket {} is gesloten.")
    for i in range(n):
        number = f"{rng.randrange(10**8, 10**9):09d}"
        text = with_word[i % 3].format(number)
        start = text.index(number)
        spans = [Span(start, start + 9, "NL_BSN")] if bsn.is_valid(number) else []
        yield _case(f"bsn-word-{i:04d}", "constructed_bsn", text, {"NL_BSN"}, spans, language="nl")
        text = without[i % 3].format(number)
        yield _case(f"bsn-order-{i:04d}", "constructed_bsn", text, {"NL_BSN"}, [], language="nl")


def ssn_context_cases(corpora: Path, n: int = 1200, seed: int = 20241203) -> Iterator[Case]:
    """CONSTRUCTED here: US SSNs next to an SSN word in English, Dutch and Vietnamese.

    Presidio's own SSN test texts (``078051121``, ``078.05.1123``, ...) behind an SSN word, with
    Presidio's spans; and random 9-digit numbers written plain, with spaces, dots or one dash
    (123-456789), labelled by python-stdnum as the oracle, in SSN sentences and, negative by
    construction, as order numbers.
    """
    path = corpora / "presidio_recognizer_cases" / "presidio_recognizer_cases.jsonl"
    for r in _jsonl(path):
        if r["target_entity"] != "US_SSN" or (r["expected_count"] and not r["spans"]):
            continue
        prefix = "My SSN: "
        spans = [
            Span(len(prefix) + x["start"], len(prefix) + x["end"], "US_SSN") for x in r["spans"]
        ]
        text = prefix + r["text"]
        yield _case(f"ssn-context-{r['id']}", "constructed_ssn", text, {"US_SSN"}, spans)
    rng = random.Random(seed)
    with_word = (
        ("My SSN is {}.", "en"),
        ("Social security number: {}", "en"),
        ("SS# {} is on the W-2.", "en"),
        ("Mijn Amerikaanse SSN is {}.", "nl"),
        ("Số an sinh xã hội (SSN) của tôi là {}.", "vi"),
    )
    without = (
        ("Order {} has shipped.", "en"),
        ("Bestelling {} is verzonden.", "nl"),
        ("Mã đơn hàng {} đã được giao.", "vi"),
    )
    forms = (
        lambda d: d,
        lambda d: f"{d[:3]} {d[3:5]} {d[5:]}",
        lambda d: f"{d[:3]}.{d[3:5]}.{d[5:]}",
        lambda d: f"{d[:3]}-{d[3:]}",
    )
    for i in range(n):
        digits = f"{rng.randrange(10**8, 10**9):09d}"
        number = forms[i % len(forms)](digits)
        template, lang = with_word[i % len(with_word)]
        text = template.format(number)
        start = text.index(number)
        spans = [Span(start, start + len(number), "US_SSN")] if ssn.is_valid(digits) else []
        yield _case(f"ssn-word-{i:04d}", "constructed_ssn", text, {"US_SSN"}, spans, language=lang)
        template, lang = without[i % len(without)]
        text = template.format(number)
        yield _case(f"ssn-order-{i:04d}", "constructed_ssn", text, {"US_SSN"}, [], language=lang)


def detect_secrets_cases(corpora: Path) -> Iterator[Case]:
    """detect-secrets plugin tests, for the plugins our rules cover: case-level labels."""
    for r in _jsonl(corpora / "detect_secrets_cases" / "detect_secrets_cases.jsonl"):
        plugin = r["plugin"]
        if plugin not in SECRET_PLUGINS:
            continue
        entity = f"SECRET:{plugin}"
        spans = [Span(0, max(1, len(r["text"])), entity)] if r["should_flag"] else []
        yield _case(r["id"], "detect_secrets_cases", r["text"], {entity}, spans, whole=True)


def build_cases(corpora: Path) -> list[Case]:
    return [
        *presidio_recognizer_cases(corpora),
        *presidio_synth_cases(corpora),
        *stdnum_cases(corpora),
        *bsn_constructed_cases(),
        *ssn_context_cases(corpora),
        *detect_secrets_cases(corpora),
    ]


# ------------------------------------------------------------------------------------ scoring


def default_engine(
    repo_root: Path = REPO_ROOT, phone_regions: tuple[str, ...] | None = None
) -> RuleEngine:
    packs = load_packs([repo_root / "rules" / "packs"])
    prompts = load_prompt_registry(repo_root / "rules" / "prompts.yaml")
    if phone_regions is None:
        return RuleEngine(packs, prompts)
    return RuleEngine(packs, prompts, phone_regions=phone_regions)


def _predictions(engine: RuleEngine, case: Case) -> dict[str, list[Span]]:
    out: dict[str, list[Span]] = defaultdict(list)
    for m in engine.scan(case.text, "user", case.language):
        for entity in case.judged:
            covered = (
                m.rule.entity in SECRET_PLUGINS[entity.split(":", 1)[1]]
                if case.whole
                else m.rule.entity == entity
            )
            if covered:
                out[entity].append(Span(m.start, m.end, entity, m.rule.id))
    return out


def _overlaps(a: Span, b: Span) -> bool:
    return a.start < b.end and b.start < a.end


def _judge(
    case: Case, entity: str, preds: list[Span], raw: bool
) -> tuple[Tally, list[Disagreement]]:
    """TP/FP/FN of one entity on one case, and the disagreements (claimed view only)."""
    t, out = Tally(cases=1), []
    if case.whole:
        preds = preds[:1]  # a case-level label: one positive per text

    def say(kind: str, value: str, why: str) -> None:
        if not raw:
            out.append(Disagreement(entity, kind, case.id, case.text, value, why))

    if case.count is not None:
        t.tp = min(len(preds), case.count)
        t.fp, t.fn = len(preds) - t.tp, case.count - t.tp
        if t.fn:
            say("FN", "", f"expected {case.count} detections, found {len(preds)}")
        for s in preds[t.tp :]:
            say("FP", case.text[s.start : s.end], f"rule {s.note}")
        return t, out
    gold = [g for g in case.gold if g.entity == entity]
    excluded = [g for g in case.excluded if g.entity == entity]
    if raw:
        gold, excluded = gold + excluded, []
    free = list(gold)
    for s in preds:
        hit = next((g for g in free if _overlaps(g, s)), None)
        if hit is not None:
            free.remove(hit)
            t.tp += 1
            t.exact += (hit.start, hit.end) == (s.start, s.end)
        elif not any(_overlaps(g, s) for g in gold + excluded):
            # (a second piece of an already matched span counts neither way)
            t.fp += 1
            say("FP", case.text[s.start : s.end], NOTES.get(case.id, f"rule {s.note}"))
    t.fn = len(free)
    for g in free:
        say("FN", case.text[g.start : g.end], NOTES.get(case.id, ""))
    for g in excluded:
        found = "found anyway" if any(_overlaps(g, s) for s in preds) else "not found"
        say("excluded", case.text[g.start : g.end], f"{g.note} ({found})")
    return t, out


def measure(corpora: Path, engine: RuleEngine | None = None) -> Report:
    """Score the engine (the default packs when ``None``) on every labelled corpus case."""
    engine = engine or default_engine()
    report = Report()
    for case in build_cases(corpora):
        preds = _predictions(engine, case)
        for entity in sorted(case.judged):
            claimed, notes = _judge(case, entity, preds.get(entity, []), raw=False)
            raw, _ = _judge(case, entity, preds.get(entity, []), raw=True)
            report.claimed[entity].add(claimed)
            report.by_corpus[(case.corpus, entity)].add(claimed)
            report.raw[entity].add(raw)
            report.disagreements.extend(notes)
    return report


# ------------------------------------------------------------------- informational (no labels)


def secret_cross_check(corpora: Path, engine: RuleEngine) -> dict[str, Counter[str]]:
    """Secret findings on detect-secrets rows of plugins we do not map (no claim: a generic
    password or key rule firing on a real key of another vendor is right, not a false positive)."""
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for r in _jsonl(corpora / "detect_secrets_cases" / "detect_secrets_cases.jsonl"):
        if r["plugin"] in SECRET_PLUGINS:
            continue
        label = "should_flag" if r["should_flag"] else "should_not_flag"
        rules = {m.rule.id for m in engine.scan(r["text"], "user") if m.rule.category == "secret"}
        out[r["plugin"]][f"{label}_rows"] += 1
        if rules:
            out[r["plugin"]][f"{label}_hit"] += 1
            for rule_id in rules:
                out[r["plugin"]][rule_id] += 1
    return out


def _unlabelled_texts(corpora: Path) -> list[str]:
    """PubMedQA abstracts and conclusions and HaluEval passages and answers: text with many
    numbers and no personal data."""
    texts = [r["text"] for r in _jsonl(corpora / "pubmedqa" / "retrieval_corpus_1000.jsonl")]
    texts += [
        r["long_answer"] for r in _jsonl(corpora / "pubmedqa" / "pubmedqa_pqal_test_500.jsonl")
    ]
    seen: set[str] = set()
    for r in _jsonl(corpora / "halueval_qa" / "halueval_qa_pairs.jsonl"):
        if r["knowledge"] not in seen:
            seen.add(r["knowledge"])
            texts.append(r["knowledge"])
        texts.append(r["answer"])
    return texts


def scan_unlabelled(corpora: Path, engine: RuleEngine) -> tuple[int, int, list[tuple[str, str]]]:
    """Every finding on the unlabelled text (:func:`_unlabelled_texts`), as English assistant
    turns."""
    texts = _unlabelled_texts(corpora)
    found = []
    for text in texts:
        for m in engine.scan(text, "assistant", "en"):
            around = text[max(0, m.start - 50) : m.end + 30]
            found.append((m.rule.id, around))
    return len(texts), sum(map(len, texts)), found


@dataclass
class PhoneRow:
    """Phone numbers on the Presidio corpora with one set of configured regions."""

    label: str
    regions: tuple[str, ...]
    claimed: Tally = field(default_factory=Tally)
    all_gold: int = 0
    all_found: int = 0
    unlabelled_findings: int = 0
    #: (FP or FN, case id, value) of the claim.
    misses: list[tuple[str, str, str]] = field(default_factory=list)


def phone_regions_check(corpora: Path, repo_root: Path = REPO_ROOT) -> list[PhoneRow]:
    """Recall and precision of phone numbers with the default regions and with the wider set
    (``EXAMPLE_PHONE_REGIONS``): each row's claim is the numbers of its own regions (and any
    valid +/00 number); *all* counts every labelled phone span, whatever its country."""
    cases = [
        c
        for c in (*presidio_recognizer_cases(corpora), *presidio_synth_cases(corpora))
        if "PHONE_NUMBER" in c.judged and c.count is None
    ]
    texts = _unlabelled_texts(corpora)
    rows = [
        PhoneRow("default: NL, VN, GB, US", PHONE_REGIONS),
        PhoneRow(f"wider: + {', '.join(EXAMPLE_PHONE_REGIONS[4:])}", WIDE_PHONE_REGIONS),
    ]
    for row in rows:
        engine = default_engine(repo_root, phone_regions=row.regions)
        for case in cases:
            spans = [s for s in (*case.gold, *case.excluded) if s.entity == "PHONE_NUMBER"]
            preds = [
                Span(m.start, m.end, "PHONE_NUMBER", m.rule.id)
                for m in engine.scan(case.text, "user", case.language)
                if m.rule.entity == "PHONE_NUMBER"
            ]
            claimed = [s for s in spans if _phone_in_claim(case.text[s.start : s.end], row.regions)]
            row.all_gold += len(spans)
            row.all_found += sum(any(_overlaps(s, p) for p in preds) for s in spans)
            free = list(claimed)
            for p in preds:
                hit = next((g for g in free if _overlaps(g, p)), None)
                if hit is not None:
                    free.remove(hit)
                    row.claimed.tp += 1
                elif not any(_overlaps(g, p) for g in spans):
                    row.claimed.fp += 1
                    row.misses.append(("FP", case.id, case.text[p.start : p.end]))
            row.claimed.fn += len(free)
            row.misses += [("FN", case.id, case.text[g.start : g.end]) for g in free]
            row.claimed.cases += 1
        for text in texts:
            for m in engine.scan(text, "assistant", "en"):
                if m.rule.entity == "PHONE_NUMBER":
                    row.unlabelled_findings += 1
                    row.misses.append(("FP", "unlabelled", text[max(0, m.start - 20) : m.end + 20]))
    return rows


@dataclass
class BsnVariant:
    """One way of finding BSNs in assistant turns, measured on constructed answers."""

    label: str
    shipped: bool
    counts: Counter[str] = field(default_factory=Counter)

    def rate(self, hit: str, total: str) -> float:
        return self.counts[hit] / self.counts[total] if self.counts[total] else 0.0

    @property
    def precision(self) -> float:
        tp = self.counts["patient_hit"] + self.counts["word_hit"]
        fp = self.counts["plain_hit"] + self.counts["person_hit"]
        return tp / (tp + fp) if tp + fp else 1.0


def bsn_assistant_check(
    corpora: Path, repo_root: Path = REPO_ROOT, n: int = 1500, seed: int = 20241204
) -> list[BsnVariant]:
    """CONSTRUCTED here: BSNs in assistant answers, with and without a BSN word or a word for a
    person, against the same kind of 9-digit numbers used as order, ticket or appointment
    numbers — also next to a person ("Mevrouw, uw bestelling ..."). BSNs are random numbers that
    pass python-stdnum's 11-check; the other numbers are random 9-digit numbers (one in eleven
    passes the check by chance, as in real life). Three variants: the shipped rules with and
    without ``pii.nl_bsn_patient``, and a context-free rule (not shipped) at medium severity."""
    packs = load_packs([repo_root / "rules" / "packs"])
    prompts = load_prompt_registry(repo_root / "rules" / "prompts.yaml")
    rules = {r.id: r for pack in packs for r in pack.rules}
    bare = rules["pii.nl_bsn"].model_copy(
        update={
            "id": "pii.nl_bsn_bare",
            "severity": "medium",
            "roles": ["assistant"],
            "context_required": False,
        }
    )

    def engine_of(*chosen: Any) -> RuleEngine:
        pack = packs[0].model_copy(update={"pack": "bsn_variant", "rules": list(chosen)})
        return RuleEngine([pack], prompts)

    variants = [
        (BsnVariant("BSN word required (pii.nl_bsn)", True), engine_of(rules["pii.nl_bsn"])),
        (
            BsnVariant("+ a word for a person (pii.nl_bsn_patient)", True),
            engine_of(rules["pii.nl_bsn"], rules["pii.nl_bsn_patient"]),
        ),
        (BsnVariant("no context, medium severity (not shipped)", False), engine_of(bare)),
    ]
    patient = (
        ("De vorige patiënt, {}, kreeg gisteren 500 mg amoxicilline.", "nl"),
        ("Ik zie dat patiënt {} om 10:00 een afspraak heeft.", "nl"),
        ("The previous patient ({}) was given the same dose.", "en"),
        ("Bệnh nhân {} đã được kê đơn paracetamol.", "vi"),
    )
    word = (
        ("Ik heb BSN {} in het dossier gevonden.", "nl"),
        ("Het burgerservicenummer {} hoort bij mevrouw De Vries.", "nl"),
        ("Your BSN {} is linked to this prescription.", "en"),
        ("Số BSN {} thuộc về bệnh nhân trước.", "vi"),
    )
    plain = (
        ("Uw bestelling {} is vandaag verzonden.", "nl"),
        ("Ticket {} is gesloten; neem contact op als het probleem terugkomt.", "nl"),
        ("Your order {} will arrive on Tuesday.", "en"),
        ("Mã đơn hàng {} đã được giao.", "vi"),
    )
    person = (
        ("Mevrouw, uw bestelling {} is vandaag verzonden.", "nl"),
        ("De patiënt kan met afspraakcode {} inchecken.", "nl"),
        ("The patient's appointment reference is {}.", "en"),
        ("Bệnh nhân vui lòng mang mã hẹn {} khi đến khám.", "vi"),
    )
    rng = random.Random(seed)

    def valid_bsn() -> str:
        while True:
            number = f"{rng.randrange(10**8, 10**9):09d}"
            if bsn.is_valid(number):
                return number

    sentences: list[tuple[str, str, str]] = []
    for i in range(n):
        for kind, templates in (("patient", patient), ("word", word)):
            template, lang = templates[i % len(templates)]
            sentences.append((kind, template.format(valid_bsn()), lang))
        for kind, templates in (("plain", plain), ("person", person)):
            template, lang = templates[i % len(templates)]
            sentences.append((kind, template.format(f"{rng.randrange(10**8, 10**9):09d}"), lang))
    texts = _unlabelled_texts(corpora)
    out = []
    for variant, engine in variants:
        for kind, text, lang in sentences:
            variant.counts[kind] += 1
            if any(m.rule.entity == "NL_BSN" for m in engine.scan(text, "assistant", lang)):
                variant.counts[f"{kind}_hit"] += 1
        variant.counts["unlabelled"] = sum(
            1 for t in texts for m in engine.scan(t, "assistant", "en") if m.rule.entity == "NL_BSN"
        )
        out.append(variant)
    return out


@dataclass
class EchoRow:
    """Assistant turns repeating a user's value bare, for one entity."""

    entity: str
    pairs: int = 0
    rules_only: int = 0  # echoes found by the rules alone (memory lookup off)
    with_memory: int = 0  # echoes found with the memory lookup
    other_numbers: int = 0  # answers with a number the user never gave
    false_echoes: int = 0  # findings on those


def echo_check(repo_root: Path = REPO_ROOT, n: int = 400, seed: int = 20241205) -> list[EchoRow]:
    """CONSTRUCTED here: a user gives a value next to its context word (so the rule fires), the
    assistant repeats it bare ("Genoteerd: 123456782.", spaced or dashed differently) in Dutch,
    English or Vietnamese; and, as negatives, answers with another number of the same shape the
    user never gave. Screened as the dataflow does (``services.screening.screen``), once with
    the rules alone (an empty remembered rule: no lookup) and once with the memory lookup."""
    from services.screening import screen

    engine = default_engine(repo_root)
    key = b"quality-benchmark-key"
    rng = random.Random(seed)

    def digits(k: int) -> str:
        return f"{rng.randrange(10 ** (k - 1), 10**k)}"

    def bsn_value() -> str:
        while not bsn.is_valid(v := digits(9)):
            pass
        return v

    def ssn_value() -> str:
        while not ssn.is_valid(v := digits(9)):
            pass
        return v

    def card12() -> str:
        body = digits(11)
        return body + luhn.calc_check_digit(body)

    def us_phone() -> str:
        while True:
            v = f"{rng.randrange(2, 10)}{digits(2)}{rng.randrange(2, 10)}{digits(6)}"
            number = phonenumbers.parse(v, "US")
            if phonenumbers.region_code_for_number(number) in ("US", "CA"):
                return v

    cases = {
        "NL_BSN": (bsn_value, "Mijn BSN is {}.", "nl", lambda v: f"{v[:3]} {v[3:6]} {v[6:]}"),
        "US_SSN": (ssn_value, "My SSN is {}.", "en", lambda v: f"{v[:3]}-{v[3:5]}-{v[5:]}"),
        "CREDIT_CARD": (
            card12,
            "My card number is {}.",
            "en",
            lambda v: f"{v[:4]} {v[4:8]} {v[8:]}",
        ),
        "PHONE_NUMBER": (us_phone, "Call me on {}.", "en", lambda v: v),
    }
    answers = (
        ("Genoteerd: {}.", "nl"),
        ("Noted: {} is on file.", "en"),
        ("Đã ghi nhận: {}.", "vi"),
    )
    rows = []
    for entity, (make, said, lang, regroup) in cases.items():
        row = EchoRow(entity)
        for i in range(n):
            value = make()
            template, alang = answers[i % len(answers)]
            shown = value if i % 2 == 0 else regroup(value)
            user = _event_of("u", 0, "user", said.format(value), lang)
            answer = _event_of("a", 1, "assistant", template.format(shown), alang)
            other = _event_of("o", 1, "assistant", template.format(make()), alang)
            memory = screen(user, engine, None, key=key).memory
            assert memory is not None, said.format(value)
            blind = memory.model_copy(
                update={"seen": {d: (r[0], r[1], None) for d, r in memory.seen.items()}}
            )
            row.pairs += 1
            for mem, attr in ((blind, "rules_only"), (memory, "with_memory")):
                out = screen(answer, engine, mem, key=key).findings
                if any(f.entity == entity and f.direction == "echo" for f in out):
                    setattr(row, attr, getattr(row, attr) + 1)
            row.other_numbers += 1
            out = screen(other, engine, memory, key=key).findings
            row.false_echoes += any(f.category == "pii" for f in out)
        rows.append(row)
    return rows


def _event_of(eid: str, turn: int, role: str, content: str, language: str) -> Any:
    from schemas.events import ChatEvent

    record = {
        "schema_version": 1,
        "event_id": eid,
        "conversation_id": "c",
        "turn_index": turn,
        "timestamp": "2026-11-02T10:00:00Z",
        "role": role,
        "content": content,
        "language": language,
    }
    return ChatEvent.model_validate_json(json.dumps(record))


def example_log_check(repo_root: Path, engine: RuleEngine) -> dict[str, Any] | None:
    """The project's example log (``examples/``, built here, so no claim): planted values and
    statements found, and anything else found (its decoys and ordinary messages must stay quiet).
    ``None`` when the example log is not there."""
    log, manifest = (
        repo_root / "examples" / "chat-events.jsonl",
        repo_root / "examples" / "planted.json",
    )
    if not (log.exists() and manifest.exists()):
        return None
    planted = json.loads(manifest.read_text(encoding="utf-8"))
    values: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for f in planted["findings"]:
        values[f["event_id"]].append((f["entity"], f["value"]))
    kinds: dict[str, set[str]] = defaultdict(set)
    for st in planted["statements"]:
        kinds[st["event_id"]].add(st["kind"])
    kind_of = {
        "DOSE_STATEMENT": "dose",
        "CONTRAINDICATION": "contraindication",
        "ABSTENTION": "abstention",
    }
    out: dict[str, Any] = {"events": 0, "decoys": len(planted.get("decoys", [])), "misses": []}
    counts: Counter[str] = Counter()
    for ev in _jsonl(log):
        out["events"] += 1
        lang = (ev.get("language") or "").split("-", 1)[0].lower() or None
        matches = engine.scan(ev["content"], ev["role"], lang)
        want = list(values.get(ev["event_id"], []))
        for m in matches:
            if m.rule.category in ("pii", "secret", "prompt_leak"):
                if (m.rule.entity, m.value) in want:
                    want.remove((m.rule.entity, m.value))
                    counts["value_tp"] += 1
                else:
                    counts["value_fp"] += 1
                    out["misses"].append(("FP", ev["event_id"], m.rule.id, m.value))
        for entity, value in want:
            counts["value_fn"] += 1
            out["misses"].append(("FN", ev["event_id"], entity, value))
        got = {kind_of[m.rule.entity] for m in matches if m.rule.entity in kind_of}
        expected = kinds.get(ev["event_id"], set())
        counts["statement_tp"] += len(got & expected)
        counts["statement_fp"] += len(got - expected)
        counts["statement_fn"] += len(expected - got)
        out["misses"] += [("FP", ev["event_id"], k, "") for k in sorted(got - expected)]
        out["misses"] += [("FN", ev["event_id"], k, "") for k in sorted(expected - got)]
    out.update(counts)
    return out


# ------------------------------------------------------------------------------------- report


def _wilson_low(successes: int, n: int, z: float = 1.96) -> float:
    """Lower end of the Wilson score interval for a proportion (1.0 when there is no data)."""
    if n == 0:
        return 1.0
    p = successes / n
    centre = p + z * z / (2 * n)
    spread = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5)
    return (centre - spread) / (1 + z * z / n)


def _cell(text: str, limit: int = 90) -> str:
    t = text.replace("\n", "⏎").replace("|", "\\|")
    return t if len(t) <= limit else t[: limit - 1] + "…"


def render_markdown(
    report: Report,
    today: dt.date,
    cross: dict[str, Counter[str]] | None = None,
    unlabelled: tuple[int, int, list[tuple[str, str]]] | None = None,
    example_log: dict[str, Any] | None = None,
    phones: list[PhoneRow] | None = None,
    bsn_variants: list[BsnVariant] | None = None,
    echoes: list[EchoRow] | None = None,
) -> str:
    lines = [
        "# Detection quality of the default rule packs",
        "",
        f"Generated on {today.isoformat()} from the repo root with",
        "",
        f"    {COMMAND}",
        "",
        "Do not edit by hand. The corpora are in `../shared/corpora/` (sources, commits and",
        "licences in their README files).",
        "",
        "How to read it: a finding matches a gold span of the same entity when they overlap.",
        "*raw* scores the corpus labels as published; *claimed* leaves out gold spans outside what",
        "the rule claims and labels we dispute, each listed below with its reason. The gate",
        "(`tests/unit/test_detection_quality.py`) requires claimed precision and recall ≥",
        f"{THRESHOLD} for every claimed entity. *P low* / *R low* are 95 % Wilson lower bounds: a",
        "perfect score on a handful of positives (the secret rows) says little. *exact* counts",
        "matches with the very same span (CIDR suffixes, zone ids and extensions make the others",
        "differ).",
        "",
        "## Claimed entities",
        "",
        "| entity | claim | cases | TP | FP | FN | precision | recall | raw P | raw R"
        " | P low | R low | exact |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for entity, claim in CLAIMED.items():
        t, r = report.claimed[entity], report.raw[entity]
        lines.append(
            f"| {entity} | {claim} | {t.cases} | {t.tp} | {t.fp} | {t.fn} | {t.precision:.3f}"
            f" | {t.recall:.3f} | {r.precision:.3f} | {r.recall:.3f}"
            f" | {_wilson_low(t.tp, t.tp + t.fp):.3f} | {_wilson_low(t.tp, t.tp + t.fn):.3f}"
            f" | {t.exact}/{t.tp} |"
        )
    lines += ["", "## Not claimed", "", "| entity | why |", "|---|---|"]
    for entity, why in NOT_CLAIMED.items():
        t = report.claimed.get(entity)
        measured = f" (measured: TP {t.tp}, FP {t.fp}, FN {t.fn})" if t and t.cases else ""
        lines.append(f"| {entity} | {why}{measured} |")
    lines += [
        "",
        "## Per corpus (claimed)",
        "",
        "`constructed_bsn` and `constructed_ssn` are built here (random numbers, python-stdnum as",
        "oracle; `constructed_ssn` also holds Presidio's own SSN texts behind an SSN word); the",
        "rest is third-party data.",
        "",
        "| corpus | entity | cases | TP | FP | FN |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for (corpus, entity), t in sorted(report.by_corpus.items()):
        lines.append(f"| {corpus} | {entity} | {t.cases} | {t.tp} | {t.fp} | {t.fn} |")
    sections = (
        ("FP", "False positives (claimed)"),
        ("FN", "False negatives (claimed)"),
        ("excluded", "Excluded gold spans: outside the claim, or labels we dispute"),
    )
    for kind, title in sections:
        rows = [d for d in report.disagreements if d.kind == kind]
        lines += ["", f"## {title}: {len(rows)}", ""]
        if not rows:
            lines.append("None.")
            continue
        lines += ["| entity | case | value | text | why |", "|---|---|---|---|---|"]
        for d in sorted(rows, key=lambda d: (d.entity, d.why, d.case_id)):
            lines.append(
                f"| {d.entity} | {d.case_id} | `{_cell(d.value, 50)}` | {_cell(d.text, 70)}"
                f" | {_cell(d.why, 200)} |"
            )
    if phones:
        lines += [
            "",
            "## Phone numbers with more regions (`VIGIL_PHONE_REGIONS`)",
            "",
            "National-form numbers are found for the configured regions: NL, VN, GB and US by",
            "default (each with a rule of its own), any other region through `pii.phone_national`",
            "(phonenumbers decides validity and grouping). International numbers (+ or 00) are",
            "found for every region either way. The same Presidio texts with the default set and",
            "with a wider one; each row's claim is the numbers of its own regions, *all labelled*",
            "counts every phone span of the corpora, whatever its country.",
            "",
            "| regions | TP | FP | FN | precision | recall | all labelled found"
            " | findings on unlabelled text |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for row in phones:
            t = row.claimed
            lines.append(
                f"| {row.label} | {t.tp} | {t.fp} | {t.fn} | {t.precision:.3f}"
                f" | {t.recall:.3f} | {row.all_found}/{row.all_gold}"
                f" | {row.unlabelled_findings} |"
            )
        lines += [
            "",
            "A region joins the claim only when configured: a number's digits are often valid",
            "in several countries, and with every region on, dates become phone numbers (Denmark",
            "and Luxembourg write 8-digit numbers as 2024 03 15). What the rows above miss or find",
            "wrongly:",
            "",
        ]
        for row in phones:
            lines += [
                f"- {row.label}: {kind} {case} `{_cell(value, 60)}`"
                for kind, case, value in row.misses
            ]
    if bsn_variants:
        lines += [
            "",
            "## BSN in assistant turns",
            "",
            "Constructed here (answers in Dutch, English and Vietnamese): BSNs that pass the",
            "11-check next to a word for a patient or person but no BSN word (*patient*), BSNs",
            "next to a BSN word (*BSN word*), and random 9-digit order, ticket and appointment",
            "numbers without (*plain*) and with a person word (*person*); one random number in",
            "eleven passes the 11-check, as in real life. Rates are the share of sentences with an",
            "NL_BSN finding; precision counts the four sets at equal size.",
            "",
            "| variant | shipped | patient | BSN word | plain (FP) | person (FP) | precision"
            " | findings on unlabelled text |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        for v in bsn_variants:
            lines.append(
                f"| {v.label} | {'yes' if v.shipped else 'no'}"
                f" | {v.rate('patient_hit', 'patient'):.3f} | {v.rate('word_hit', 'word'):.3f}"
                f" | {v.rate('plain_hit', 'plain'):.3f} | {v.rate('person_hit', 'person'):.3f}"
                f" | {v.precision:.3f} | {v.counts['unlabelled']} |"
            )
        lines += [
            "",
            "Decision: a BSN without context in assistant turns is **not** shipped: it reports",
            "every eleventh ordinary 9-digit number of an answer (the *plain* column), whatever",
            "the answer is about, which no severity makes useful. `pii.nl_bsn_patient` is: it",
            'finds the BSN of "de vorige patiënt" and never fires on a number without a word',
            "for a person nearby; its price is the *person* column, an order or appointment",
            "number of a named person that happens to pass the 11-check (medium severity, and a",
            "person's number all the same). NL_BSN's claim above stays \"next to a BSN word\";",
            "these figures are outside the gate.",
        ]
    if echoes:
        lines += [
            "",
            "## Values repeated bare in answers (echo through the conversation memory)",
            "",
            "Constructed here: a user gives a value next to its context word, the assistant",
            'repeats it without one ("Genoteerd: 123456782.", half of them grouped differently)',
            "in Dutch, English or Vietnamese. *Rules alone* is the echo found without the memory",
            "lookup; *with memory* looks the answer's numbers and tokens up by keyed hash. The",
            "negatives are answers with another number of the same shape the user never gave:",
            "any finding on them is a false one.",
            "",
            "| entity | pairs | echo, rules alone | echo, with memory | other numbers"
            " | false findings |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for r in echoes:
            lines.append(
                f"| {r.entity} | {r.pairs} | {r.rules_only / r.pairs:.3f}"
                f" | {r.with_memory / r.pairs:.3f} | {r.other_numbers} | {r.false_echoes} |"
            )
    if cross:
        lines += [
            "",
            "## Cross-check: secret rules on detect-secrets rows of other plugins (no claim)",
            "",
            "Rows of plugins without a rule of ours. A hit on a `should_flag` row is usually the",
            "generic password / key-assignment rule finding a real secret of another vendor.",
            "",
            "| plugin | should_flag rows hit | should_not_flag rows hit | rules |",
            "|---|---:|---:|---|",
        ]
        for plugin, c in sorted(cross.items()):
            rules = ", ".join(f"{k} ×{v}" for k, v in sorted(c.items()) if k.startswith("secret."))
            lines.append(
                f"| {plugin} | {c['should_flag_hit']}/{c['should_flag_rows']}"
                f" | {c['should_not_flag_hit']}/{c['should_not_flag_rows']} | {rules or '—'} |"
            )
    if unlabelled:
        n_texts, n_chars, found = unlabelled
        per_rule = Counter(rule for rule, _ in found)
        lines += [
            "",
            "## Unlabelled text: every finding on PubMedQA and HaluEval text (no claim)",
            "",
            f"{n_texts} texts, {n_chars:,} characters of abstracts, conclusions, Wikipedia",
            "passages and answers, scanned as English assistant turns. They hold no personal data",
            "or secrets, so every PII / secret finding here is a false positive; medical findings",
            "are listed for inspection (abstracts do state doses).",
            "",
            "| rule | findings |",
            "|---|---:|",
        ]
        lines += [f"| {rule} | {n} |" for rule, n in sorted(per_rule.items())]
        shown: Counter[str] = Counter()
        lines += ["", "| rule | text around the finding (first 10 per rule) |", "|---|---|"]
        for rule, around in found:
            shown[rule] += 1
            if shown[rule] <= 10:
                lines.append(f"| {rule} | {_cell(around, 120)} |")
    if example_log:
        x = example_log
        lines += [
            "",
            "## Example log: `examples/chat-events.jsonl` vs `examples/planted.json` (no claim)",
            "",
            "Built in this project (not third-party labels): planted values and statements, plus",
            "decoys and ordinary number-heavy messages that must not fire.",
            "",
            "| | found (TP) | unexpected (FP) | missed (FN) |",
            "|---|---:|---:|---:|",
            f"| values (pii, secret, prompt_leak) | {x.get('value_tp', 0)} | {x.get('value_fp', 0)}"
            f" | {x.get('value_fn', 0)} |",
            f"| statements (dose, contraindication, abstention) | {x.get('statement_tp', 0)}"
            f" | {x.get('statement_fp', 0)} | {x.get('statement_fn', 0)} |",
            "",
            f"{x['events']} events, {x['decoys']} decoys.",
        ]
        lines += [
            f"- {kind} {ev} {what} `{_cell(value, 60)}`" for kind, ev, what, value in x["misses"]
        ]
    return "\n".join(lines) + "\n"


def default_corpora(repo_root: Path = REPO_ROOT) -> Path:
    return repo_root.parent / "shared" / "corpora"


def grounding_section(path: Path) -> str:
    """The claim-grounding results (HaluEval QA, constructed PubMedQA), as last measured by
    ``python benchmarks/grounding_quality.py --write docs/grounding.md``, copied from there."""
    begin, end = "<!-- BEGIN grounding-quality -->", "<!-- END grounding-quality -->"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if begin not in text or end not in text:
        return ""
    block = text.split(begin, 1)[1].split(end, 1)[0].strip()
    return (
        "\n## Grounding of answer claims (issue 3)\n\n"
        "Copied from `docs/grounding.md` (regenerate that first with "
        "`python benchmarks/grounding_quality.py --write docs/grounding.md`).\n\n"
        f"{block}\n"
    )


def _block(text: str, name: str) -> str:
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    if begin not in text or end not in text:
        return ""
    return text.split(begin, 1)[1].split(end, 1)[0].strip()


def medical_grounding_section(path: Path) -> str:
    """Issue 10's figures (the adversarial set per kind × language, baselines, cost, Vietnamese
    segmentation), copied from ``docs/grounding.md``, where
    ``python benchmarks/grounding_quality.py --baseline eded159 --write docs/grounding.md``
    writes the table."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    brief, summary = _block(text, "grounding-brief"), _block(text, "grounding-cases-summary")
    if not summary:
        return ""
    return (
        "\n## Medical grounding on the adversarial set (issue 10)\n\n"
        "Copied from `docs/grounding.md` (regenerate that first with "
        "`python benchmarks/grounding_quality.py --baseline eded159 --write docs/grounding.md`; "
        "the per-method tables and what is weak are there).\n\n"
        f"{brief}\n\n{summary}\n"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=default_corpora(), help="corpora folder")
    ap.add_argument("--write", type=Path, help="write the Markdown report here (else stdout)")
    args = ap.parse_args(argv)
    engine = default_engine()
    report = measure(args.corpora, engine)
    text = render_markdown(
        report,
        dt.date.today(),
        cross=secret_cross_check(args.corpora, engine),
        unlabelled=scan_unlabelled(args.corpora, engine),
        example_log=example_log_check(REPO_ROOT, engine),
        phones=phone_regions_check(args.corpora),
        bsn_variants=bsn_assistant_check(args.corpora),
        echoes=echo_check(),
    )
    text += medical_grounding_section(REPO_ROOT / "docs" / "grounding.md")
    text += grounding_section(REPO_ROOT / "docs" / "grounding.md")
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    failures = report.failures()
    for f in failures:
        print(f"below {THRESHOLD}: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
