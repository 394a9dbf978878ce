"""``run_eval``: metrics of a case file, overall, population-weighted and per stratum.

Every metric is computed by the library functions of :mod:`services.evaluation`; this module
only decides which cases feed which metric and aggregates:

retrieval (``recall@k``, ``mrr``, ``ndcg@k``)
    Cases whose label names relevant documents (``relevant_doc_ids``, or ``relevance`` grades
    > 0). ``returned`` is the case's ``contexts`` in rank order (list order when a rank is
    missing). Graded relevance for nDCG is ``label.relevance``, else 1 per relevant doc.
faithfulness
    Claim-checked cases. Each answer claim is grounded as the checker said unless the label
    corrects it (``claim_grounding``, matched on the claim text). ``faithfulness`` is the mean
    per answer, ``faithfulness_pooled`` grounded / all claims.
claim support
    The fact checks of every case, each status replaced by the label's correction
    (``claim_statuses``, matched on the claim) when there is one.
abstention (``coverage``, ``overall_accuracy``, ``answered_accuracy``, ``risk``,
``abstained_accuracy``)
    Cases with a target: a label with ``answer_correct``, ``expected_answer`` or
    ``expected_abstention``. An abstained case is a ``None`` prediction. An answered case is
    correct when ``answer_correct`` says so; else, with ``expected_abstention``, it is wrong;
    else when the answer equals ``expected_answer`` after normalisation
    (:func:`~services.evalsets.rotation.normalise_question`: NFKC, case folding, punctuation and
    whitespace collapsed — meant for short answers; judge long ones with ``answer_correct``).
    An abstained case was right to abstain when ``answer_correct`` (the reviewer's judgement of
    what the assistant did) or ``expected_abstention`` says so, wrong when either says not or an
    ``expected_answer`` is given: ``abstained_accuracy`` is the share of right abstentions.
miss rate (``miss_rate``, ``miss_rate_<category>``)
    Labelled random unflagged cases: the share whose label names categories the rules missed
    (``missed_categories``; an empty list means rightly unflagged). Weighted, it is the
    estimate of :mod:`services.evalsets.missrate`.
per-rule precision (``finding_precision``; the report's ``rule_precision``)
    The labels' finding verdicts, by the rule of each finding (from the case's findings);
    ``unsure`` verdicts are counted apart and left out of precision.
risk–coverage
    Answered cases with a target and a ``confidence``; abstained cases have no correctness.
ungrounded dose claims
    Answer claims of kind dose or contraindication that are not grounded (after corrections) —
    the same test as ``services.grounding.critical_claims``.

The library functions take at most 1000 items; larger sets are computed in chunks and the
counts added (every figure of those metrics is a ratio of counts, so this is exact).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Final

from schemas.evalset import FLAG_STRATA, UNFLAGGED, EvalCase, GateSpec
from services.evalrun.report import EvalReport, MetricBlock, RunOptions
from services.evalsets.periods import periods_order_key
from services.evalsets.rotation import normalise_question
from services.evalsets.weighting import hajek, subsample_weights
from services.evaluation import (
    CLAIM_STATUSES,
    abstention_metrics,
    faithfulness,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
    risk_coverage_curve,
)

__all__ = [
    "MISS_CATEGORIES",
    "CaseFacts",
    "abstained_right",
    "case_facts",
    "is_correct",
    "metric_block",
    "rule_precision",
    "run_eval",
]

_CHUNK: Final = 1000
#: Categories with a miss rate of their own (``miss_rate_<category>``).
MISS_CATEGORIES: Final = tuple(c for c in FLAG_STRATA if c != UNFLAGGED)
_CORRECT: Final = "correct"
_WRONG: Final = "wrong"


@dataclass(frozen=True)
class CaseFacts:
    """What one case contributes to each metric (``None``: it does not contribute)."""

    case_id: str
    group: tuple[str, str]
    weight: float
    retrieval: dict[str, float] = field(default_factory=dict)
    claims: tuple[tuple[str, bool], ...] | None = None
    faithfulness: float | None = None
    statuses: tuple[str, ...] = ()
    has_target: bool = False
    answered: bool | None = None
    correct: bool | None = None
    confidence: float | None = None
    dose_ungrounded: int = 0
    fabricated: int = 0
    unsupported: int = 0
    true_positives: int = 0
    false_positives: int = 0
    abstain_right: bool | None = None
    #: Labelled random-unflagged case: the categories its label says the rules missed.
    missed: tuple[str, ...] | None = None
    critical_unseen: int = 0


def is_correct(case: EvalCase) -> bool | None:
    """Whether an answered case is correct by its label (``None``: no target or abstained)."""
    label = case.label
    if label is None or case.abstained or case.answer is None:
        return None
    if label.answer_correct is not None:
        return label.answer_correct
    if label.expected_abstention:
        return False
    if label.expected_answer is not None:
        return normalise_question(case.answer) == normalise_question(label.expected_answer)
    return None


def abstained_right(case: EvalCase) -> bool | None:
    """Whether an abstained case was right to abstain by its label (``None``: not abstained, or
    the label does not say)."""
    label = case.label
    if label is None or not case.abstained:
        return None
    if label.answer_correct is not None:
        return label.answer_correct
    if label.expected_abstention is not None:
        return label.expected_abstention
    if label.expected_answer is not None:
        return False
    return None


def _has_target(case: EvalCase) -> bool:
    label = case.label
    if label is None:
        return False
    return (
        label.answer_correct is not None
        or label.expected_answer is not None
        or bool(label.expected_abstention)
    )


def case_facts(case: EvalCase, ks: Sequence[int]) -> CaseFacts:
    label = case.label
    ranked = case.contexts
    if ranked and all(c.rank is not None for c in ranked):
        ranked = sorted(ranked, key=lambda c: c.rank or 0)
    returned = [c.doc_id for c in ranked]
    retrieval: dict[str, float] = {}
    if label is not None:
        grades = dict(label.relevance or {})
        relevant = set(label.relevant_doc_ids or []) | {d for d, g in grades.items() if g > 0}
        if relevant:
            graded = grades or dict.fromkeys(relevant, 1.0)
            for d in relevant:
                graded.setdefault(d, 1.0)
            retrieval["mrr"] = reciprocal_rank(returned, relevant)
            for k in ks:
                retrieval[f"recall@{k}"] = recall_at_k(returned, relevant, k)
                retrieval[f"ndcg@{k}"] = ndcg_at_k(returned, graded, k)

    grounded_fix = {g.text: g.grounded for g in label.claim_grounding} if label else {}
    claims: tuple[tuple[str, bool], ...] | None = None
    faith: float | None = None
    dose = 0
    if case.claims:
        claims = tuple(
            (c.text if c.text.strip() else "<claim>", grounded_fix.get(c.text, c.grounded))
            for c in case.claims
        )
        faith = faithfulness(list(claims)).score
        dose = sum(
            c.kind != "other" and not grounded_fix.get(c.text, c.grounded) for c in case.claims
        )
    elif case.checked or case.faithfulness is not None:
        claims = ()
        faith = case.faithfulness if case.faithfulness is not None else 1.0

    status_fix = {
        (s.claim.entity, s.claim.attribute, s.claim.value): s.status
        for s in (label.claim_statuses if label else [])
    }
    statuses = tuple(
        status_fix.get((v.claim.entity, v.claim.attribute, v.claim.value), v.status)
        for v in case.fact_checks
    )
    verdicts = Counter(label.finding_verdicts.values()) if label else Counter()
    target = _has_target(case)
    return CaseFacts(
        case_id=case.case_id,
        group=(case.period, case.stratum),
        weight=1.0 / case.inclusion_probability,
        retrieval=retrieval,
        claims=claims,
        faithfulness=faith,
        statuses=statuses,
        has_target=target,
        answered=(not case.abstained and case.answer is not None) if target else None,
        correct=is_correct(case) if target else None,
        confidence=case.confidence,
        dose_ungrounded=dose,
        fabricated=len(case.fabricated_citations),
        unsupported=len(case.unsupported_citations),
        true_positives=verdicts["true_positive"],
        false_positives=verdicts["false_positive"],
        abstain_right=abstained_right(case),
        missed=(
            tuple(label.missed_categories)
            if label is not None and case.flag_stratum == UNFLAGGED
            else None
        ),
        critical_unseen=case.critical_answers_unseen,
    )


def _chunks(items: Sequence[CaseFacts]) -> list[Sequence[CaseFacts]]:
    return [items[i : i + _CHUNK] for i in range(0, len(items), _CHUNK)]


def abstention_summary(facts: Sequence[CaseFacts]) -> dict[str, float | int | None] | None:
    """``abstention_metrics`` over the cases with a target (chunked past 1000)."""
    rows = [f for f in facts if f.has_target]
    if not rows:
        return None
    total = answered = correct = 0
    for chunk in _chunks(rows):
        preds = [None if not f.answered else (_CORRECT if f.correct else _WRONG) for f in chunk]
        m = abstention_metrics(preds, [_CORRECT] * len(chunk))
        total, answered, correct = (
            total + m["total"],
            answered + m["answered"],
            correct + m["correct"],
        )
    return {
        "total": total,
        "answered": answered,
        "correct": correct,
        "coverage": answered / total,
        "overall_accuracy": correct / total,
        "answered_accuracy": correct / answered if answered else None,
        "risk": (answered - correct) / answered if answered else None,
    }


def risk_coverage(
    facts: Sequence[CaseFacts], thresholds: Sequence[float]
) -> list[dict[str, float | int | None]] | None:
    """``risk_coverage_curve`` over answered cases with a target and a confidence."""
    rows = [f for f in facts if f.answered and f.correct is not None and f.confidence is not None]
    if not rows:
        return None
    sums: dict[float, list[int]] = {}
    for chunk in _chunks(rows):
        curve = risk_coverage_curve(
            [f.confidence for f in chunk],  # type: ignore[misc]
            [bool(f.correct) for f in chunk],
            list(thresholds),
        )
        for r in curve:
            acc = sums.setdefault(r["threshold"], [0, 0])
            acc[0] += r["answered"]
            acc[1] += r["correct"]
    n = len(rows)
    return [
        {
            "threshold": t,
            "answered": a,
            "correct": c,
            "coverage": a / n,
            "risk": (a - c) / a if a else None,
        }
        for t, (a, c) in sorted(sums.items())
    ]


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def metric_block(
    facts: Sequence[CaseFacts],
    ks: Sequence[int],
    *,
    weighted: bool = False,
    confidence: float = 0.95,
) -> MetricBlock:
    """Metrics over ``facts``; population-weighted (Hájek, weights 1/π) when ``weighted``."""
    values: dict[str, float | None] = {}
    counts: dict[str, int] = {}
    intervals: dict[str, tuple[float, float]] = {}
    base_w = [f.weight for f in facts]
    groups: list[Hashable] = [f.group for f in facts]

    def mean_of(
        name: str, pick: Callable[[CaseFacts], float | None], *, binary: bool = False
    ) -> None:
        picked = [pick(f) for f in facts]
        used = [p is not None for p in picked]
        counts[name] = sum(used)
        ys = [float(p) for p in picked if p is not None]
        if not weighted:
            values[name] = _mean(ys)
            return
        ws = subsample_weights(base_w, groups, used)
        est = hajek(
            ys,
            [w for w, u in zip(ws, used, strict=True) if u],
            [g for g, u in zip(groups, used, strict=True) if u],
            binary=binary,
            confidence=confidence,
        )
        values[name] = est.estimate if est else None
        if est:
            intervals[name] = (est.lower, est.upper)

    def ratio_of(
        name: str, num: Callable[[CaseFacts], float], den: Callable[[CaseFacts], float]
    ) -> None:
        ws = base_w if weighted else [1.0] * len(facts)
        d = sum(w * den(f) for w, f in zip(ws, facts, strict=True))
        counts[name] = int(sum(den(f) for f in facts))
        values[name] = _ratio(sum(w * num(f) for w, f in zip(ws, facts, strict=True)), d)

    def total_of(name: str, pick: Callable[[CaseFacts], float], among: int) -> None:
        ws = base_w if weighted else [1.0] * len(facts)
        values[name] = float(sum(w * pick(f) for w, f in zip(ws, facts, strict=True)))
        counts[name] = among

    values["cases"] = float(len(facts)) if not weighted else float(sum(base_w))
    counts["cases"] = len(facts)
    mean_of("mrr", lambda f: f.retrieval.get("mrr"))
    for k in ks:
        mean_of(f"recall@{k}", lambda f, k=k: f.retrieval.get(f"recall@{k}"))  # type: ignore[misc]
        mean_of(f"ndcg@{k}", lambda f, k=k: f.retrieval.get(f"ndcg@{k}"))  # type: ignore[misc]
    mean_of("faithfulness", lambda f: f.faithfulness)
    ratio_of(
        "faithfulness_pooled",
        lambda f: sum(g for _, g in f.claims or ()),
        lambda f: len(f.claims or ()),
    )
    if values["faithfulness_pooled"] is None and counts["faithfulness"]:
        values["faithfulness_pooled"] = 1.0  # checked answers without claims: SPEC §5
    mean_of("coverage", lambda f: float(bool(f.answered)) if f.has_target else None, binary=True)
    mean_of(
        "overall_accuracy", lambda f: float(bool(f.correct)) if f.has_target else None, binary=True
    )
    mean_of(
        "answered_accuracy",
        lambda f: float(bool(f.correct)) if f.has_target and f.answered else None,
        binary=True,
    )
    mean_of(
        "abstained_accuracy",
        lambda f: None if f.abstain_right is None else float(f.abstain_right),
        binary=True,
    )
    mean_of("miss_rate", lambda f: None if f.missed is None else float(bool(f.missed)), binary=True)
    for cat in MISS_CATEGORIES:
        mean_of(
            f"miss_rate_{cat}",
            lambda f, c=cat: None if f.missed is None else float(c in f.missed),  # type: ignore[misc]
            binary=True,
        )
    acc = values["answered_accuracy"]
    values["risk"] = None if acc is None else 1.0 - acc
    counts["risk"] = counts["answered_accuracy"]
    if "answered_accuracy" in intervals:
        lo, hi = intervals["answered_accuracy"]
        intervals["risk"] = (1.0 - hi, 1.0 - lo)
    checked = sum(f.claims is not None for f in facts)
    total_of("ungrounded_dose_claims", lambda f: f.dose_ungrounded, checked)
    total_of("fabricated_citations", lambda f: f.fabricated, checked)
    total_of("unsupported_citations", lambda f: f.unsupported, checked)
    ratio_of(
        "finding_precision",
        lambda f: f.true_positives,
        lambda f: f.true_positives + f.false_positives,
    )
    n_claims = sum(len(f.statuses) for f in facts)
    for status in CLAIM_STATUSES:
        total_of(f"claims_{status}", lambda f, s=status: f.statuses.count(s), n_claims)  # type: ignore[misc]
        ratio_of(
            f"claim_share_{status}",
            lambda f, s=status: f.statuses.count(s),  # type: ignore[misc]
            lambda f: len(f.statuses),
        )
    return MetricBlock(cases=len(facts), values=values, counts=counts, intervals=intervals)


def rule_precision(cases: Sequence[EvalCase]) -> dict[str, dict[str, float | int | None]]:
    """Reviewers' finding verdicts by rule: ``{rule: {true_positive, false_positive, unsure,
    precision}}``; precision is ``None`` without a true or false positive. A verdict on a
    finding the case does not hold counts under ``unknown``."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for case in cases:
        if case.label is None:
            continue
        rules = {f.finding_id: f.rule_id for f in case.findings}
        for finding_id, verdict in case.label.finding_verdicts.items():
            counts[rules.get(finding_id, "unknown")][verdict] += 1
    out: dict[str, dict[str, float | int | None]] = {}
    for rule, c in sorted(counts.items()):
        tp, fp = c["true_positive"], c["false_positive"]
        out[rule] = {
            "true_positive": tp,
            "false_positive": fp,
            "unsure": c["unsure"],
            "precision": tp / (tp + fp) if tp + fp else None,
        }
    return out


def run_eval(
    cases: Sequence[EvalCase],
    gates: Sequence[GateSpec] = (),
    options: RunOptions | None = None,
    *,
    baselines: dict[str, dict[str, float | None]] | None = None,
    source: str | None = None,
) -> EvalReport:
    """Compute every metric on ``cases`` and evaluate ``gates`` (see the module docstring).

    ``baselines`` maps a gate's ``baseline`` string to the metric values of that earlier report
    (``services.evalrun.gates.load_baseline``); a gate whose baseline is missing fails.
    """
    from services.evalrun.gates import evaluate_gates

    opts = options or RunOptions()
    ks = sorted(set(opts.ks) | {int(g.key.split("@")[1]) for g in gates if "@" in g.key})
    opts = opts.model_copy(update={"ks": tuple(ks)})
    facts = [case_facts(c, ks) for c in cases]
    by_stratum: dict[str, list[CaseFacts]] = defaultdict(list)
    by_flag: dict[str, list[CaseFacts]] = defaultdict(list)
    for c, f in zip(cases, facts, strict=True):
        by_stratum[c.stratum].append(f)
        by_flag[c.flag_stratum].append(f)
    statuses = Counter(s for f in facts for s in f.statuses)
    report = EvalReport(
        source=source,
        options=opts,
        cases=len(cases),
        periods=sorted({c.period for c in cases}, key=periods_order_key),
        overall=metric_block(facts, ks),
        weighted=metric_block(facts, ks, weighted=True, confidence=opts.confidence),
        strata={k: metric_block(v, ks) for k, v in sorted(by_stratum.items())},
        flags={k: metric_block(v, ks) for k, v in sorted(by_flag.items())},
        claim_status_counts={s: statuses.get(s, 0) for s in CLAIM_STATUSES},
        abstention=abstention_summary(facts),
        risk_coverage=risk_coverage(facts, opts.thresholds),
        ungrounded_dose_cases=[f.case_id for f in facts if f.dose_ungrounded],
        critical_answers_unseen=sum(f.critical_unseen for f in facts),
        rule_precision=rule_precision(cases),
    )
    results = evaluate_gates(report, gates, baselines or {})
    failed = [r for r in results if not r.passed]
    return report.model_copy(
        update={"gates": results, "failed_gates": failed, "passed": not failed}
    )
