"""Simulation of the rotating evaluation sets over several periods, with a known truth.

A synthetic chat stream (``generate``) over consecutive ISO weeks: conversations in two tenants
and three languages, flagged by category with known rates (a flag can appear at a later turn, so
conversations move between strata), some conversations continuing into the next week, events
shuffled within a week and 10% re-delivered. Every conversation has a hidden truth: whether its
answer is correct and, for unflagged ones, which categories the rules missed.

``simulate`` feeds the stream through :class:`~services.evalsets.EvalsetCollector` week by week
(close, rotate), labels the selected cases with the truth, and compares the population-weighted
estimates (``run_eval`` weighted block, ``estimate_miss_rates``) with the realised population
rates. ``tests/unit/test_evalset_simulation.py`` asserts on one seed; this script repeats over
many seeds and prints how often each interval covered the truth::

    .venv/bin/python benchmarks/evalset_simulation.py --seeds 20
"""

from __future__ import annotations

import argparse
import itertools
import random
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from schemas.evalset import EvalCase, EvalLabel, FileSource
from schemas.events import ChatEvent, Role
from schemas.outputs import Finding
from services.evalrun import RunOptions, run_eval
from services.evalsets import EvalsetCollector, EvalsetConfig, attach_labels, estimate_miss_rates
from services.evalsets.periods import period_start
from services.evalsets.rotation import Rotation

__all__ = [
    "PERIODS",
    "SimConfig",
    "SimResult",
    "Truth",
    "generate",
    "simulate",
]

PERIODS: tuple[str, ...] = ("2026-W40", "2026-W41", "2026-W42", "2026-W43", "2026-W44", "2026-W45")
LANGUAGES = (("en", 0.5), ("nl", 0.3), ("vi", 0.2))
TENANTS = (("acme", 0.6), ("zorg", 0.4))
#: Independent per conversation and week.
FLAG_RATES = {"medical": 0.06, "pii": 0.12, "secret": 0.02}
#: For unflagged conversations: categories the rules should have raised but did not.
MISS_RATES = {"pii": 0.05, "medical": 0.03}
#: Probability that the answer is correct, by highest flag (medical answers are harder).
CORRECT = {"medical": 0.70, "secret": 0.80, "pii": 0.85, "unflagged": 0.92}
ORDER = ("medical", "secret", "pii")


@dataclass(frozen=True)
class SimConfig:
    periods: tuple[str, ...] = PERIODS
    conversations: int = 1500
    span_share: float = 0.2
    redeliver_share: float = 0.1
    capacities: tuple[tuple[str, int], ...] = (
        ("medical", 10),
        ("secret", 5),
        ("pii", 10),
        ("unflagged", 40),
    )
    active_periods: int = 4

    def evalset_config(self) -> EvalsetConfig:
        return EvalsetConfig(
            capacities=dict(self.capacities),  # type: ignore[arg-type]
            active_periods=self.active_periods,
        )


@dataclass
class Truth:
    """What is true of one conversation in one week."""

    flags: set[str]
    language: str
    tenant: str
    correct: bool
    missed: list[str]

    @property
    def flag(self) -> str:
        return next((c for c in ORDER if c in self.flags), "unflagged")


@dataclass
class SimResult:
    truth: dict[tuple[str, str], Truth]
    selections: dict[str, list[EvalCase]]
    archived: list[Rotation] = field(default_factory=list)
    active_after: dict[str, list[str]] = field(default_factory=dict)
    events: int = 0
    seconds: float = 0.0


def _pick(rng: random.Random, table: Sequence[tuple[str, float]]) -> str:
    return rng.choices([k for k, _ in table], weights=[w for _, w in table])[0]


def _finding(event: ChatEvent, category: str, n: int) -> Finding:
    return Finding(
        finding_id=f"{event.event_id}:{category}:{n}",
        event_id=event.event_id,
        conversation_id=event.conversation_id,
        turn_index=event.turn_index,
        timestamp=event.timestamp,
        role=event.role,
        rule_id=f"sim.{category}",
        category=category,  # type: ignore[arg-type]
        entity=category.upper(),
        severity="high" if category == "medical" else "medium",
        start=0,
        end=4,
        evidence="****",
        direction="input" if event.role == "user" else "output",
        score=0.9,
        explanation="simulated",
    )


def _slice(
    rng: random.Random, cid: str, period: str, first_turn: int, truth: Truth, late: bool
) -> list[tuple[ChatEvent, list[Finding]]]:
    """Two or four events of one conversation in one week; flags land on a random event."""
    start = period_start(period)
    offset = timedelta(days=6, hours=20) if late else timedelta(seconds=rng.uniform(0, 6.5 * 86400))
    turns = 2 if rng.random() < 0.5 else 4
    out: list[tuple[ChatEvent, list[Finding]]] = []
    for t in range(turns):
        role: Role = "user" if t % 2 == 0 else "assistant"
        ev = ChatEvent(
            schema_version=1,
            event_id=f"{cid}-{period}-{t}",
            conversation_id=cid,
            turn_index=first_turn + t,
            timestamp=start + offset + timedelta(seconds=30 * t),
            role=role,
            content=f"text {cid} turn {first_turn + t} of {period}",
            language=truth.language,
            tenant=truth.tenant,
            confidence=round(rng.random(), 3) if role == "assistant" else None,
        )
        out.append((ev, []))
    for n, category in enumerate(sorted(truth.flags)):
        i = rng.randrange(len(out))
        ev, fs = out[i]
        out[i] = (ev, [*fs, _finding(ev, category, n)])
    return out


def _truth(rng: random.Random, language: str, tenant: str) -> Truth:
    flags = {c for c, p in FLAG_RATES.items() if rng.random() < p}
    flag = next((c for c in ORDER if c in flags), "unflagged")
    missed = [c for c, p in MISS_RATES.items() if rng.random() < p] if not flags else []
    return Truth(flags, language, tenant, rng.random() < CORRECT[flag], missed)


Delivery = tuple[ChatEvent, list[Finding], FileSource]


def generate(
    cfg: SimConfig, seed: int
) -> tuple[dict[str, list[Delivery]], dict[tuple[str, str], Truth]]:
    """Events per week (shuffled, 10% re-delivered with their original source line) and the truth
    per (week, conversation)."""
    rng = random.Random(seed)
    slices: dict[str, list[tuple[ChatEvent, list[Finding]]]] = defaultdict(list)
    streams: dict[str, list[Delivery]] = {}
    truth: dict[tuple[str, str], Truth] = {}
    carry: list[tuple[str, str, str]] = []  # conversations continuing into the next week
    for w, period in enumerate(cfg.periods):
        nxt: list[tuple[str, str, str]] = []
        for cid, language, tenant in carry:
            t = _truth(rng, language, tenant)
            truth[(period, cid)] = t
            slices[period] += _slice(rng, cid, period, 10, t, late=False)
        for i in range(cfg.conversations - len(carry)):
            cid = f"w{w}-c{i}"
            language, tenant = _pick(rng, LANGUAGES), _pick(rng, TENANTS)
            t = _truth(rng, language, tenant)
            spans = w + 1 < len(cfg.periods) and rng.random() < cfg.span_share
            truth[(period, cid)] = t
            slices[period] += _slice(rng, cid, period, 0, t, late=spans)
            if spans:
                nxt.append((cid, language, tenant))
        carry = nxt
        events: list[Delivery] = [
            (ev, fs, FileSource(file=f"{period}.jsonl", line=n))
            for n, (ev, fs) in enumerate(slices[period], start=1)
        ]
        events += rng.sample(events, int(len(events) * cfg.redeliver_share))
        rng.shuffle(events)
        streams[period] = events
    return streams, truth


def label_for(case: EvalCase, t: Truth) -> EvalLabel:
    return EvalLabel(
        conversation_id=case.conversation_id,
        case_id=case.case_id,
        answer_correct=t.correct,
        missed_categories=t.missed,  # type: ignore[arg-type]
    )


def simulate(cfg: SimConfig, seed: int, secret: bytes = b"simulation-secret") -> SimResult:
    streams, truth = generate(cfg, seed)
    collector = EvalsetCollector(cfg.evalset_config(), secret)
    result = SimResult(truth=truth, selections={})
    t0 = time.perf_counter()
    for period in cfg.periods:
        for event, findings, source in streams[period]:
            collector.observe(event, findings, source)
            result.events += 1
        collector.close(period)
        cases = collector.cases(period)
        labels = [label_for(c, truth[(c.period, c.conversation_id)]) for c in cases]
        result.selections[period] = attach_labels(cases, labels).cases
        rotation = collector.rotate(period)
        result.archived.append(rotation)
        result.active_after[period] = collector.periods()
    result.seconds = time.perf_counter() - t0
    return result


@dataclass(frozen=True)
class Check:
    period: str
    name: str
    truth: float
    estimate: float | None
    lower: float | None
    upper: float | None

    @property
    def covered(self) -> bool:
        return (
            self.lower is not None
            and self.upper is not None
            and (self.lower - 1e-12 <= self.truth <= self.upper + 1e-12)
        )


def estimate_checks(result: SimResult) -> list[Check]:
    """Weighted estimates of each week against the week's realised population rates."""
    checks: list[Check] = []
    for period, cases in result.selections.items():
        pop = [t for (p, _), t in result.truth.items() if p == period]
        unflagged = [t for t in pop if not t.flags]
        report = run_eval(cases, options=RunOptions(ks=(5,)))
        w = report.weighted
        lo, hi = w.intervals.get("overall_accuracy", (None, None))
        checks.append(
            Check(
                period,
                "accuracy",
                sum(t.correct for t in pop) / len(pop),
                w.values["overall_accuracy"],
                lo,
                hi,
            )
        )
        miss = estimate_miss_rates(cases, categories=list(MISS_RATES))
        for name in [*MISS_RATES, "any"]:
            rate = miss.rates[name]
            true = sum(
                (bool(t.missed) if name == "any" else name in t.missed) for t in unflagged
            ) / len(unflagged)
            checks.append(
                Check(period, f"miss:{name}", true, rate.estimate, rate.lower, rate.upper)
            )
    return checks


def overlap(result: SimResult) -> list[tuple[str, int, float, float]]:
    """Per consecutive weeks: conversations selected in both, the number expected with
    independent salts (Σ π₁π₂ over conversations in both weeks), and with one fixed salt
    (≈ Σ min(π₁, π₂), for contrast)."""
    rows = []
    periods = list(result.selections)
    for a, b in itertools.pairwise(periods):
        sel_a = {c.conversation_id for c in result.selections[a]}
        sel_b = {c.conversation_id for c in result.selections[b]}
        pi_a = _pi_by_stratum(result.selections[a])
        pi_b = _pi_by_stratum(result.selections[b])
        both = [cid for (p, cid) in result.truth if p == b and (a, cid) in result.truth]
        exp_ind = exp_fixed = 0.0
        for cid in both:
            x = pi_a.get(_stratum(result.truth[(a, cid)]), 1.0)
            y = pi_b.get(_stratum(result.truth[(b, cid)]), 1.0)
            exp_ind += x * y
            exp_fixed += min(x, y)
        rows.append((f"{a}→{b}", len(sel_a & sel_b), exp_ind, exp_fixed))
    return rows


def _stratum(t: Truth) -> str:
    return f"{t.flag}|{t.language}|{t.tenant}"


def _pi_by_stratum(cases: Sequence[EvalCase]) -> dict[str, float]:
    return {c.stratum: c.inclusion_probability for c in cases}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--conversations", type=int, default=1500)
    args = ap.parse_args()
    cfg = SimConfig(conversations=args.conversations)
    covered: dict[str, list[bool]] = defaultdict(list)
    overlaps: list[tuple[int, float, float]] = []
    seconds = events = 0.0
    for seed in range(args.seeds):
        result = simulate(cfg, seed)
        seconds += result.seconds
        events += result.events
        for check in estimate_checks(result):
            covered[check.name].append(check.covered)
        overlaps += [(o, e, f) for _, o, e, f in overlap(result)]
    print(f"{args.seeds} seeds × {len(cfg.periods)} weeks × {cfg.conversations} conversations")
    print(f"{events / seconds:,.0f} events/s through the collector\n")
    print("| estimate | intervals | covered the truth |")
    print("|---|---:|---:|")
    for name, flags in covered.items():
        print(f"| {name} | {len(flags)} | {sum(flags) / len(flags):.1%} |")
    obs = sum(o for o, _, _ in overlaps)
    ind = sum(e for _, e, _ in overlaps)
    fixed = sum(f for _, _, f in overlaps)
    print(
        f"\nconsecutive-week overlap: observed {obs}, expected with per-week salts {ind:.1f}, "
        f"with one fixed salt ≈ {fixed:.1f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
