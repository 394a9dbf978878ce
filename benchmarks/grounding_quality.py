"""Grounding quality: the adversarial medical set (en/nl/vi) and public data (HaluEval QA, a
constructed PubMedQA set).

Run ``python benchmarks/grounding_quality.py --baseline eded159`` (add ``--write
docs/grounding.md`` to refresh the results sections of that file; ``--baseline`` adds the check
of an earlier commit, run from a temporary ``git worktree``). It prints markdown sections for
``docs/grounding.md``; ``benchmarks/detection_quality.py`` copies the summary into
``docs/detection-quality.md``.

**The adversarial set** (``tests/data/grounding-cases/{en,nl,vi}.jsonl``, written independently of
the check; see its README): every answer goes through :class:`services.checking.ClaimChecker` as
``vigil scan`` checks it (sample rate 1). An answer is *flagged* when its report has an ungrounded
claim, a fabricated or an unsupported citation; *critical* when a critical finding is raised. A
case is judged right when: kinds that must pass are not flagged; kinds that must be caught are
flagged, and critical where the label says so. Reported per kind × language for the ``dev`` split
(used for tuning), the ``test`` split (not) and the ``fresh``, ``fresh2`` … ``fresh37`` splits
(held-out sets written later, one before each later round, each measured as written before its
round: see :data:`SPLITS`; ``fresh3`` to ``fresh37`` were written without reading the check, and
the thirteenth to eighteenth rounds looked at the causes of the earlier splits pooled), with the
user's question given to the check as the preceding turn's medical context (drugs, population)
and without it, beside two baselines: *flag every number* (an answer with any number is flagged
and critical) and *token overlap ≥ .5* (an answer is flagged when a sentence shares less than half
of its words with every passage; critical when that sentence has a number).

What is measured: whether :func:`services.grounding.check` calls an answer *ungrounded*
(faithfulness < 1, i.e. at least one claim not grounded in the passage) — precision and recall
of that flag against the labels, beside a length-only baseline (flag answers longer than the
median of the dev split). The support threshold is tuned on a dev split (even question index /
even position) by the mean over both corpora of Youden's J (TPR − FPR, insensitive to the class
ratio) and reported on the held-out split (odd).

Data (``../shared/corpora``; see their READMEs):

- **HaluEval QA**: knowledge passage = the retrieved passage; the gold answer is grounded, the
  ChatGPT-generated hallucinated answers are not. Labels are per answer.
- **PubMedQA (constructed)**: PubMedQA has no hallucination labels. Positives are each test
  item's long answer (the abstract's conclusion) against its own contexts. Negatives are *built
  here*: (a) *number swap* — the first number in the answer changed to a value absent from the
  context (only answers with a number); (b) *random passage swap* — the answer against another
  item's contexts; (c) *hard passage swap* — against the other abstract sharing the most content
  words with the answer.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from schemas.events import ChatEvent, Passage  # noqa: E402
from schemas.verdicts import GroundingReport  # noqa: E402
from services.grounding import (  # noqa: E402
    DEFAULT_SUPPORT_THRESHOLD,
    ExtractorSet,
    FactRegistry,
    GroundingConfig,
    check,
    quantities,
)
from services.grounding.text import claim_units, passage_units  # noqa: E402

CORPORA = ROOT.parent / "shared" / "corpora"
CASES = ROOT / "tests" / "data" / "grounding-cases"
BEGIN, END = "<!-- BEGIN grounding-quality -->", "<!-- END grounding-quality -->"
#: The adversarial set's splits, in report order, and what each is.
SPLITS = {
    "dev": "tuned on",
    "test": "held out",
    "fresh": "held out, written later",
    "fresh2": "held out, written for the third round",
    "fresh3": "held out, written blind for the fifth round",
    "fresh4": "held out, written blind for the sixth round",
    "fresh5": "held out, written blind for the seventh round",
    "fresh6": "held out, written blind for the eighth round",
    "fresh7": "held out, written blind for the ninth round",
    "fresh8": "held out, written blind for the tenth round",
    "fresh9": "held out, written blind for the eleventh round",
    "fresh10": "held out, written blind for the twelfth round",
    "fresh11": "held out, written blind for the thirteenth round",
    "fresh12": "held out, written blind for the fourteenth round",
    "fresh13": "held out, written blind for the fifteenth round",
    "fresh14": "held out, written blind for the sixteenth round",
    "fresh15": "held out, written blind for the sixteenth and seventeenth rounds",
    "fresh16": "held out, written blind for the eighteenth round",
    "fresh17": "held out, written blind for the nineteenth round",
    "fresh18": "held out, written blind after the twentieth round",
    "fresh19": "held out, written blind beside the twenty-first round",
    "fresh20": "held out, written blind beside the twenty-second round",
    "fresh21": "held out, written blind beside the twenty-third round (then tuned on)",
    "fresh22": "held out, written blind during the twenty-third round (then tuned on)",
    "fresh23": "held out, written blind in the twenty-third round's second half (then tuned on)",
    "fresh24": "held out, written blind during the twenty-third round's last changes "
    "(two causes mended in the twenty-fourth)",
    "fresh25": "held out, written blind in the twenty-fourth round's first half (then tuned on)",
    "fresh26": "held out, written blind in the twenty-fourth round's second half (then tuned on)",
    "fresh27": "held out, written blind in the twenty-fourth round's last changes (then tuned on)",
    "fresh28": "held out, written blind at the end of the twenty-fourth round",
    "fresh29": "held out, written blind at the start of the twenty-fifth round (then tuned on)",
    "fresh30": "held out, written blind during the twenty-fifth round",
    "fresh31": "held out, written blind at the start of the twenty-sixth round (then tuned on)",
    "fresh32": "held out, written blind during the twenty-sixth round (never read)",
    "fresh33": "held out, written blind at the end of the twenty-sixth round (never read)",
    "fresh34": "held out, written blind at the start of the twenty-seventh round (then tuned on)",
    "fresh35": "held out, written blind at the start of the twenty-seventh round (never read)",
    "fresh36": "held out, written blind during the twenty-seventh round (never read)",
    "fresh37": "held out, written blind during the twenty-seventh round (never read)",
}
CBEGIN, CEND = "<!-- BEGIN grounding-cases -->", "<!-- END grounding-cases -->"
SBEGIN, SEND = "<!-- BEGIN grounding-cases-summary -->", "<!-- END grounding-cases-summary -->"
MUST_PASS = ("correct_paraphrase", "correct_citation", "correct_dose", "abstention")
KIND_ORDER = (
    *MUST_PASS,
    "wrong_number",
    "wrong_unit",
    "wrong_drug",
    "wrong_population",
    "polarity_flip",
    "fabricated_citation",
    "unsupported_citation",
)
THRESHOLDS = [round(i * 0.05, 2) for i in range(21)]
EPS = 1e-9


@dataclass(frozen=True)
class Item:
    corpus: str
    group: str  # positive, or the kind of negative
    answer: str
    passages: tuple[str, ...]
    ungrounded: bool  # the label
    dev: bool


@dataclass(frozen=True)
class Scored:
    item: Item
    #: per claim: (support, numbers missing?)
    claims: tuple[tuple[float, bool], ...]

    def flagged(self, threshold: float) -> bool:
        return any(missing or support + EPS < threshold for support, missing in self.claims)


def _jsonl(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def halueval() -> list[Item]:
    rows = _jsonl(CORPORA / "halueval_qa" / "halueval_qa_pairs.jsonl")
    return [
        Item(
            "HaluEval QA",
            "hallucinated" if r["hallucinated"] else "supported",
            str(r["answer"]),
            (str(r["knowledge"]),),
            bool(r["hallucinated"]),
            int(str(r["question_index"])) % 2 == 0,
        )
        for r in rows
    ]


def _swap_number(answer: str, context: str) -> str | None:
    """Change the first number written in digits in ``answer`` to a value that ``context`` does
    not contain (``answer`` is NFC, as the corpus is, so offsets agree)."""
    found = [q for q in quantities(answer, "en") if answer[q.start].isdigit()]
    if not found:
        return None
    present = {q.written for q in quantities(context, "en")}
    q = found[0]
    start = q.start
    end = start
    while end < len(answer) and (answer[end].isdigit() or answer[end] in ".,"):
        end += 1
    end = end - 1 if answer[end - 1] in ".," else end
    original = answer[start:end]
    decimals = len(original.split(".")[1]) if "." in original else 0
    step = 10**-decimals if decimals else 1
    for k in range(1, 50):
        new_value = q.written + type(q.written)(str(step)) * k
        text = f"{new_value:.{decimals}f}" if decimals else str(int(new_value))
        if new_value not in present:
            return answer[:start] + text + answer[end:]
    return None


def pubmedqa() -> list[Item]:
    rows = _jsonl(CORPORA / "pubmedqa" / "pubmedqa_pqal_test_500.jsonl")
    contexts = [" ".join(str(c) for c in r["contexts"]) for r in rows]  # type: ignore[attr-defined]
    answers = [str(r["long_answer"]) for r in rows]
    units = [passage_units(c, "en") for c in contexts]
    rng = random.Random(20240601)
    shift = list(range(len(rows)))
    rng.shuffle(shift)
    items: list[Item] = []
    name = "PubMedQA (constructed)"
    for i, (answer, context) in enumerate(zip(answers, contexts, strict=True)):
        dev = i % 2 == 0
        items.append(Item(name, "own context", answer, (context,), False, dev))
        swapped = _swap_number(answer, context)
        if swapped is not None:
            items.append(Item(name, "number swap", swapped, (context,), True, dev))
        j = shift[i] if shift[i] != i else (i + 1) % len(rows)
        items.append(Item(name, "random passage swap", answer, (contexts[j],), True, dev))
        mine = claim_units(answer, "en")
        hard = max(
            (k for k in range(len(rows)) if k != i), key=lambda k: (len(mine & units[k]), -k)
        )
        items.append(Item(name, "hard passage swap", answer, (contexts[hard],), True, dev))
    return items


_EMPTY_REGISTRY = FactRegistry()
_NO_EXTRACTORS = ExtractorSet()
_WHEN = datetime(2024, 1, 1, tzinfo=UTC)


def score(item: Item, config: GroundingConfig) -> Scored:
    event = ChatEvent(
        schema_version=1,
        event_id="bench",
        conversation_id="bench",
        turn_index=1,
        timestamp=_WHEN,
        role="assistant",
        content=item.answer,
        language="en",
        retrieval=[Passage(doc_id=f"p{i}", text=t) for i, t in enumerate(item.passages)],
    )
    report: GroundingReport = check(
        event,
        _EMPTY_REGISTRY,
        extractors=_NO_EXTRACTORS,
        config=config,
        inclusion_probability=1.0,
        stratum="sampled",
    )
    return Scored(item, tuple((c.support, bool(c.numbers_missing)) for c in report.claims))


@dataclass(frozen=True)
class Counts:
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def fpr(self) -> float | None:
        return self.fp / (self.fp + self.tn) if self.fp + self.tn else None

    @property
    def f1(self) -> float | None:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p and r else None

    @property
    def youden(self) -> float:
        return (self.recall or 0.0) - (self.fpr or 0.0)


def counts(pairs: Iterable[tuple[bool, bool]]) -> Counts:
    tp = fp = fn = tn = 0
    for flagged, label in pairs:
        if flagged and label:
            tp += 1
        elif flagged:
            fp += 1
        elif label:
            fn += 1
        else:
            tn += 1
    return Counts(tp, fp, fn, tn)


def _words(text: str) -> int:
    return len(text.split())


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def _row(label: str, c: Counts) -> str:
    return (
        f"| {label} | {c.tp + c.fn} / {c.fp + c.tn} | {_fmt(c.precision)} | {_fmt(c.recall)} | "
        f"{_fmt(c.f1)} | {_fmt(c.fpr)} |"
    )


def evaluate(scored: Sequence[Scored]) -> tuple[str, float]:
    corpora = sorted({s.item.corpus for s in scored})
    dev = [s for s in scored if s.item.dev]
    test = [s for s in scored if not s.item.dev]

    def j_at(t: float, corpus: str) -> float:
        return counts(
            (s.flagged(t), s.item.ungrounded) for s in dev if s.item.corpus == corpus
        ).youden

    # Max-min: the threshold whose worse corpus does best. The mean of J is nearly flat here and
    # its argmax sits at an extreme that flags almost every multi-sentence answer.
    tuned = max(THRESHOLDS, key=lambda t: (min(j_at(t, c) for c in corpora), -t))

    def best_for(corpus: str) -> float:
        return max(THRESHOLDS, key=lambda t: (j_at(t, corpus), -t))

    per_corpus_best = {c: best_for(c) for c in corpora}
    lines = [
        "### Grounding against retrieved passages (sampled claim checks)",
        "",
        "`services.grounding.check` on public data; an answer counts as flagged *ungrounded* "
        "when at least one of its claims is not grounded. Positive class = ungrounded. "
        "Support threshold tuned on the dev split by the *worse* corpus's Youden J (TPR − FPR; "
        f"max-min over both corpora): "
        f"**{tuned:.2f}** (best per corpus on dev: "
        + ", ".join(f"{c} {t:.2f}" for c, t in per_corpus_best.items())
        + "). Numbers below are on the **held-out** split only. Baseline: flag answers longer "
        "than the dev median (in words). The shipped default "
        f"(`DEFAULT_SUPPORT_THRESHOLD`) is {DEFAULT_SUPPORT_THRESHOLD:.2f}.",
        "",
        "| corpus / slice | ungrounded / grounded | precision | recall | F1 | "
        "false-positive rate |",
        "|---|---|---|---|---|---|",
    ]
    for corpus in corpora:
        part = [s for s in test if s.item.corpus == corpus]
        median = statistics.median(_words(s.item.answer) for s in dev if s.item.corpus == corpus)
        ours = counts((s.flagged(tuned), s.item.ungrounded) for s in part)
        base = counts((_words(s.item.answer) > median, s.item.ungrounded) for s in part)
        lines.append(_row(f"**{corpus}** — grounding check (t = {tuned:.2f})", ours))
        best_t = per_corpus_best[corpus]
        if best_t != tuned:
            own = counts((s.flagged(best_t), s.item.ungrounded) for s in part)
            lines.append(_row(f"{corpus} — at its own best dev threshold (t = {best_t:.2f})", own))
        lines.append(_row(f"{corpus} — length-only baseline (> {median:g} words)", base))
        groups = sorted({s.item.group for s in part if s.item.ungrounded})
        if len(groups) > 1:
            positives = [s for s in part if not s.item.ungrounded]
            for g in groups:
                subset = positives + [s for s in part if s.item.group == g]
                sub = counts((s.flagged(tuned), s.item.ungrounded) for s in subset)
                lines.append(_row(f"{corpus} — only negatives of kind *{g}*", sub))
    lines += [
        "",
        "Recall of the flag by threshold on the held-out split (false-positive rate in brackets):",
        "",
    ]
    header = "| threshold | " + " | ".join(corpora) + " |"
    lines += [header, "|---" * (len(corpora) + 1) + "|"]
    for t in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
        cells = []
        for corpus in corpora:
            c = counts((s.flagged(t), s.item.ungrounded) for s in test if s.item.corpus == corpus)
            cells.append(f"{_fmt(c.recall)} ({_fmt(c.fpr)})")
        lines.append(f"| {t:.1f} | " + " | ".join(cells) + " |")
    lines.append("")
    return "\n".join(lines), tuned


NOTES = """
What the numbers mean, honestly:

- **HaluEval QA.** Hallucinated answers were written on purpose by ChatGPT and are much longer
  than the gold answers (median 9 vs 2 words), so the length-only baseline is strong; the
  grounding check does not use length. Many hallucinated answers reuse the passage's words and
  only swap an entity or a relation ("First for Women was started first"), which content-word
  overlap cannot see: that is where recall is lost. Gold answers are 1–3 words, nearly always
  present verbatim in the knowledge, hence the very low false-positive rate; 32 of the 500 gold
  answers are a bare "yes"/"no", which is not a claim by our rule and so never flagged (one
  hallucinated answer is skipped the same way). Recall at the shipped threshold is poor; the
  corpus's own best threshold (1.0: every content word must be in the passage) does well here
  and badly on PubMedQA.
- **PubMedQA (constructed).** The negatives were built here, not labelled by anyone. *Number
  swap* tests exactly the numbers rule, which is designed for it, so high recall there says the
  rule works as specified, not that the check finds real hallucinations. *Random passage swap*
  pairs a conclusion with an unrelated abstract and is easy. *Hard passage swap* (the most
  word-overlapping other abstract) is closer to a retrieval mix-up. Positives are the abstracts'
  own conclusions, which often state interpretations not literally in the contexts ("This study
  highlights the value of…"); flagging those counts as a false positive here although a strict
  reviewer might agree with the flag.
- A length baseline cannot tell a swapped passage or number from the original (same text),
  so it sits at chance on the constructed set.
- Deterministic grounding is a screen: it is meant to route answers to review and to the
  optional judge, not to prove entailment. Paraphrase, negation and relations need the judge.
"""


def render(section: str) -> str:
    return f"{BEGIN}\n{section}\n{NOTES.strip()}\n{END}"


# --------------------------------------------------------------------------- adversarial set


@dataclass(frozen=True)
class Case:
    id: str
    language: str
    kind: str
    split: str
    question: str
    answer: str
    retrieval: tuple[Passage, ...]
    citations: tuple[str, ...] | None
    flagged: bool
    critical: bool


def load_cases(folder: Path = CASES) -> list[Case]:
    out: list[Case] = []
    for language in ("en", "nl", "vi"):
        for row in _jsonl(folder / f"{language}.jsonl"):
            exp = row["expected"]
            out.append(
                Case(
                    str(row["id"]),
                    language,
                    str(row["kind"]),
                    str(row["split"]),
                    str(row["question"]),
                    str(row["answer"]),
                    tuple(Passage.model_validate(p) for p in row["retrieval"]),  # type: ignore[attr-defined]
                    tuple(row["citations"]) if row.get("citations") else None,  # type: ignore[arg-type]
                    bool(exp["flagged"]),  # type: ignore[index]
                    bool(exp["critical"]),  # type: ignore[index]
                )
            )
    return out


def judged_right(case: Case, flagged: bool, critical: bool) -> bool:
    if not case.flagged:
        return not flagged
    return flagged and (critical or not case.critical)


def _case_event(case: Case, role: str = "assistant") -> ChatEvent:
    return ChatEvent(
        schema_version=1,
        event_id=f"{case.id}:{role}",
        conversation_id=case.id,
        turn_index=1 if role == "assistant" else 0,
        timestamp=_WHEN,
        role=role,  # type: ignore[arg-type]
        content=case.answer if role == "assistant" else case.question,
        language=case.language,
        retrieval=list(case.retrieval) if role == "assistant" else None,
        citations=list(case.citations) if case.citations and role == "assistant" else None,
    )


def run_check(cases: Sequence[Case], *, context: bool) -> dict[str, tuple[bool, bool]]:
    """``{case id: (flagged, critical)}`` from the real claim checker."""
    from services.checking import ClaimChecker
    from services.sampling import SampleDecision
    from services.settings import Settings

    checker = ClaimChecker(Settings())
    decision = SampleDecision(sampled=True, stratum="always", inclusion_probability=1.0)
    out: dict[str, tuple[bool, bool]] = {}
    for case in cases:
        ctx = checker.medical_context(_case_event(case, "user")) if context else None
        checked = checker.check(_case_event(case), decision, context=ctx)
        r = checked.report
        flagged = bool(r.ungrounded or r.fabricated_citations or r.unsupported_citations)
        critical = any(f.severity == "critical" for f in checked.findings)
        out[case.id] = (flagged, critical)
    return out


#: The check of an earlier commit, run in a process of its own with that tree first on the path:
#: events on stdin, ``{case id: [flagged, critical]}`` on stdout (the answer alone: earlier
#: commits take no question context).
_EARLIER_CHECK = """
import json, sys
sys.path.insert(0, sys.argv[1])
from schemas.events import ChatEvent
from services.checking import ClaimChecker
from services.sampling import SampleDecision
from services.settings import Settings

checker = ClaimChecker(Settings())
decision = SampleDecision(sampled=True, stratum="always", inclusion_probability=1.0)
out = {}
for row in json.load(sys.stdin):
    checked = checker.check(ChatEvent.model_validate_json(json.dumps(row)), decision)
    r = checked.report
    flagged = bool(r.ungrounded or r.fabricated_citations or r.unsupported_citations)
    out[row["conversation_id"]] = [flagged, any(f.severity == "critical" for f in checked.findings)]
print(json.dumps(out))
"""


def run_check_at(commit: str, cases: Sequence[Case]) -> dict[str, tuple[bool, bool]]:
    """``{case id: (flagged, critical)}`` from the claim checker of ``commit`` (a temporary
    ``git worktree`` of it, with this tree's virtual environment)."""
    events = json.dumps([_case_event(c).model_dump(mode="json") for c in cases])
    with tempfile.TemporaryDirectory(prefix="vigil-base-") as tmp:
        tree = Path(tmp) / "tree"
        add = ["git", "worktree", "add", "--detach", str(tree), commit]
        subprocess.run(add, cwd=ROOT, check=True, capture_output=True)
        try:
            done = subprocess.run(
                [sys.executable, "-c", _EARLIER_CHECK, str(tree)],
                cwd=tree,
                input=events,
                capture_output=True,
                text=True,
                check=False,
            )
        finally:
            remove = ["git", "worktree", "remove", "--force", str(tree)]
            subprocess.run(remove, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the check at {commit} failed:\n{done.stderr}")
    raw = json.loads(done.stdout.strip().splitlines()[-1])
    return {k: (bool(v[0]), bool(v[1])) for k, v in raw.items()}


def _numbers(text: str, language: str) -> bool:
    return bool(quantities(text, language))


def baseline_every_number(cases: Sequence[Case]) -> dict[str, tuple[bool, bool]]:
    out = {}
    for c in cases:
        has = _numbers(c.answer, c.language)
        out[c.id] = (has, has)
    return out


def baseline_overlap(cases: Sequence[Case], threshold: float = 0.5) -> dict[str, tuple[bool, bool]]:
    from services.grounding.sentences import split_sentences
    from services.grounding.text import words

    out = {}
    for c in cases:
        passages = [set(words(p.text)) for p in c.retrieval]
        flagged = critical = False
        for sentence in split_sentences(c.answer, c.language):
            own = set(words(sentence.text))
            if not own:
                continue
            best = max((len(own & p) / len(own) for p in passages), default=0.0)
            if best < threshold:
                flagged = True
                critical = critical or _numbers(sentence.text, c.language)
        out[c.id] = (flagged, critical)
    return out


def _rate(rows: Sequence[bool]) -> str:
    return f"{sum(rows) / len(rows):.2f} ({sum(rows)}/{len(rows)})" if rows else "–"


Results = dict[str, dict[str, tuple[bool, bool]]]


def case_results(cases: Sequence[Case], baseline: str | None = None) -> Results:
    """``{method: {case id: (flagged, critical)}}`` for the check and the baselines."""
    results = {
        "check": run_check(cases, context=True),
        "check, no question": run_check(cases, context=False),
    }
    if baseline is not None:
        results[f"check at {baseline} ({_baseline_note(baseline)})"] = run_check_at(baseline, cases)
    results["flag every number"] = baseline_every_number(cases)
    results["token overlap ≥ .5"] = baseline_overlap(cases)
    return results


def _cell(
    part: Sequence[Case], res: dict[str, tuple[bool, bool]], kind: str | None, lang: str | None
) -> str:
    rows = [
        judged_right(c, *res[c.id])
        for c in part
        if (kind is None or c.kind == kind) and (lang is None or c.language == lang)
    ]
    return _rate(rows)


def summary_section(cases: Sequence[Case], results: Results) -> str:
    """The check (with the question's context) per kind × language on both splits, and every
    method's totals: the summary ``docs/detection-quality.md`` copies."""
    splits = {s: [c for c in cases if c.split == s] for s in SPLITS}
    check = results["check"]
    langs = ("en", "nl", "vi", None)
    head = [f"{s} {lang or 'all'}" for s in splits for lang in langs]
    lines = [
        f"{len(cases)} answers written independently of the check (11 kinds, en/nl/vi); "
        "rate judged right by `ClaimChecker.check` with the question's medical context. "
        "*dev* was tuned on, *test* is held out, *fresh* … *fresh37* are held-out splits "
        "written later, one before each later round (*fresh18* after the twentieth, *fresh19* "
        "beside the twenty-first, *fresh20* beside the twenty-second, *fresh21* to *fresh24* "
        "beside the twenty-third, *fresh25* to *fresh28* beside the twenty-fourth, *fresh29* "
        "and *fresh30* beside the twenty-fifth, *fresh31* to *fresh33* beside the "
        "twenty-sixth, *fresh34* to *fresh37* beside the twenty-seventh).",
        "",
        "| kind | " + " | ".join(head) + " |",
        "|---|" + "---|" * len(head),
    ]
    for kind in KIND_ORDER:
        cells = [_cell(splits[s], check, kind, lang) for s in splits for lang in langs]
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| method | "
        + " | ".join(splits)
        + " | correct doses flagged "
        + " | ".join(f"({s})" for s in splits)
        + " |",
        "|---|" + "---|" * (2 * len(splits)),
    ]
    for method, res in results.items():
        flagged = [
            _rate([res[c.id][0] for c in splits[s] if c.kind == "correct_dose"]) for s in splits
        ]
        totals = [_cell(splits[s], res, None, None) for s in splits]
        lines.append(f"| {method} | " + " | ".join(totals + flagged) + " |")
    return "\n".join(lines) + "\n"


#: What the usual baselines are; another commit is named by its id only.
_BASELINES: Final = {"eded159": "before issue 10", "19dddc7": "before the tenth round"}


def _baseline_note(commit: str) -> str:
    return _BASELINES.get(commit, "an earlier commit")


def cases_section(cases: Sequence[Case], results: Results, baseline: str | None = None) -> str:
    lines = [
        "### The adversarial medical set (tests/data/grounding-cases)",
        "",
        f"{len(cases)} answers, 11 kinds × en/nl/vi, written independently of the check (see "
        "its README). Rate of answers judged right (flagged / critical as labelled; must-pass "
        "kinds not flagged at all). *check*: `ClaimChecker.check` with the medical context of "
        "the user's question (the preceding turn); *check, no question*: the answer alone"
        + (
            f"; *check at {baseline}*: the check of commit {baseline} "
            f"({_baseline_note(baseline)}), the answer alone."
            if baseline
            else "."
        ),
        "",
    ]
    for split, what in SPLITS.items():
        part = [c for c in cases if c.split == split]
        lines += [
            f"**{split}** split ({what})",
            "",
            "| kind | method | en | nl | vi | all |",
            "|---|---|---|---|---|---|",
        ]
        for kind in KIND_ORDER:
            for method, res in results.items():
                cells = [_cell(part, res, kind, lang) for lang in ("en", "nl", "vi", None)]
                label = kind if method == "check" else ""
                lines.append(f"| {label} | {method} | " + " | ".join(cells) + " |")
        for method, res in results.items():
            rows = [judged_right(c, *res[c.id]) for c in part]
            false_flags = [res[c.id][0] for c in part if c.kind == "correct_dose"]
            lines.append(
                f"| **all** | {method} | | | | {_rate(rows)}; correct doses flagged "
                f"{_rate(false_flags)} |"
            )
        lines.append("")
    return "\n".join(lines)


def write_doc(path: Path, block: str, begin: str = BEGIN, end: str = END) -> None:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        text = (text.rstrip() + "\n\n" if text else "") + "## Measured quality\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--write", type=Path, help="replace the results sections of this file")
    parser.add_argument("--cases-only", action="store_true", help="only the adversarial set")
    parser.add_argument(
        "--baseline", metavar="COMMIT", help="also run the check of this earlier commit"
    )
    args = parser.parse_args(argv)
    cases = load_cases()
    results = case_results(cases, args.baseline)
    cases_block = f"{CBEGIN}\n{cases_section(cases, results, args.baseline)}\n{CEND}"
    summary_block = f"{SBEGIN}\n{summary_section(cases, results)}{SEND}"
    print(summary_block)
    print(cases_block)
    if args.write:
        write_doc(args.write, summary_block, SBEGIN, SEND)
        write_doc(args.write, cases_block, CBEGIN, CEND)
    if args.cases_only:
        return 0
    config = GroundingConfig(support_threshold=0.0)  # support is thresholded here, per t
    items: list[Item] = [*halueval(), *pubmedqa()]
    scored = [score(it, config) for it in items]
    section, _ = evaluate(scored)
    block = render(section)
    print(block)
    if args.write:
        write_doc(args.write, block)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
