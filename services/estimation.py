r"""Population rates from sampled checks, with exact confidence intervals (SPEC §5).

The claim-support checks run on a sample of assistant answers (``services.sampling``): every
answer of the ``always`` stratum, and a keyed-hash sample with probability ``p`` of the rest. This
module turns the checked answers back into a rate *for the whole population of assistant answers
the monitor saw* — e.g. the share of answers with at least one unsupported claim, or with a
fabricated citation — with a confidence interval.

Unit and target
    The unit is the assistant answer (event). The target is the realised share in the observed
    population, ``R = X / N``, where ``N`` counts every assistant answer seen (checked or not) and
    ``X`` the answers that have the property (checked or not).

Design
    ``always``: a census — each of its ``N_a`` answers is checked (probability 1), ``x_a`` hits;
    no sampling error. ``sampled``: of its ``N_s`` answers, ``n_s`` were checked (probability
    ``p``), ``x_s`` hits. The monitor *counts* ``N_a`` and ``N_s`` exactly (it screens every
    event), so the estimator uses the known stratum size (post-stratified / ratio form)::

        X̂ = x_a + N_s · x_s / n_s           R̂ = X̂ / N,   N = N_a + N_s

    rather than the plain Horvitz–Thompson ``(x_a + x_s / p) / N``, whose variance also carries
    the randomness of ``n_s`` (HT is reported beside it, for comparison; it can exceed 1).

Interval
    Given ``n_s``, the checked answers of the ``sampled`` stratum are a simple random sample of
    it, so ``x_s`` is binomial (hypergeometric for the finite stratum). The Clopper–Pearson
    interval ``[lo, hi]`` for ``x_s / n_s`` at the requested confidence is exact (coverage ≥
    nominal) for the stratum's hit probability, and conservative for its realised share (sampling
    without replacement varies less than binomial sampling). As the ``always`` part is known
    without error, the affine map ``q ↦ (x_a + N_s·q) / N`` carries the interval over unchanged::

        lower = (x_a + max(x_s,  N_s·lo)) / N
        upper = (x_a + min(N_s − (n_s − x_s),  N_s·hi)) / N

    (the ``max``/``min`` only use what is certain: the hits seen are in the population, and so
    are the non-hits seen). Degenerate cases: ``n_s = N_s`` (everything checked) → the point;
    ``n_s = 0 < N_s`` (nothing known of the stratum, e.g. rate 0) → ``[x_a/N, (x_a+N_s)/N]``
    and no point estimate; ``N = 0`` → no estimate at all (``None``).

Conversations are sampled together
    The hash is per conversation, so the ``sampled``-stratum answers of one conversation are
    checked together (a cluster sample). When answers of one conversation are alike (one bad
    retrieval spoils several answers), ``x_s`` varies more than a binomial and a plain
    Clopper–Pearson interval is too narrow. :class:`RateTracker` therefore accepts the
    conversation id of each checked answer and estimates the design effect ``deff`` of the ratio
    estimator (linearisation over conversations), then applies the Korn–Graubard (1998) interval:
    Clopper–Pearson with effective sample size ``n* = n_s / deff`` and ``x* = x_s / deff``. With
    one answer per conversation (or no ids given) ``deff = 1`` and the interval is exactly
    Clopper–Pearson; with clustering it is approximate, validated by simulation
    (``benchmarks/estimator_coverage.py``, ``docs/sampling.md``).

Several sampling rates
    If the rate changed while a tracker was counting, the ``sampled`` stratum splits into one
    sub-stratum per inclusion probability; each gets its own interval at confidence
    ``1 − α/K`` (Bonferroni over the ``K`` sub-strata with sampling error) and the bounds add
    up, which keeps the joint coverage ≥ ``1 − α``.

Everything here is pure: no I/O, no clock, no global state.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from services.sampling import Stratum

__all__ = [
    "EstimateMethod",
    "RateEstimate",
    "RateTracker",
    "clopper_pearson",
    "cluster_design_effect",
    "estimate_rate",
    "horvitz_thompson_rate",
]

#: ``census``: every answer checked, no sampling error. ``clopper-pearson``: exact binomial
#: interval (design effect 1). ``korn-graubard``: Clopper–Pearson on the effective sample size
#: (design effect > 1, conversations sampled together). ``no-sample``: some answers belong to a
#: stratum of which none was checked; the interval covers every value they could take and there
#: is no point estimate.
EstimateMethod = Literal["census", "clopper-pearson", "korn-graubard", "no-sample"]

_BOUND_TOLERANCE = 1e-12


class RateEstimate(BaseModel):
    """A population rate with its confidence interval and the counts behind it.

    ``estimate`` is ``None`` when a stratum with answers had none checked (the rate is then not
    estimable; ``lower``/``upper`` still bound it). ``population`` = every assistant answer seen
    (``always_population + sampled_population``); ``checked`` and ``hits`` count the checked
    answers and those with the property, over both strata.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    estimate: float | None = Field(ge=0.0, le=1.0)
    lower: float = Field(ge=0.0, le=1.0)
    upper: float = Field(ge=0.0, le=1.0)
    confidence: float = Field(gt=0.0, lt=1.0)
    population: int = Field(ge=1)
    checked: int = Field(ge=0)
    hits: int = Field(ge=0)
    method: EstimateMethod
    horvitz_thompson: float | None = Field(
        default=None, ge=0.0, description="Σ y_i/π_i / N over checked answers; may exceed 1."
    )
    design_effect: float = Field(default=1.0, ge=1.0, description="Largest deff applied.")
    always_population: int = Field(ge=0)
    always_checked: int = Field(ge=0)
    always_hits: int = Field(ge=0)
    sampled_population: int = Field(ge=0)
    sampled_checked: int = Field(ge=0)
    sampled_hits: int = Field(ge=0)


# --- validation helpers ---------------------------------------------------------------------


def _count(name: str, value: object) -> int:
    """A non-negative integer count (Python or NumPy integer; ``bool`` is refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an int, got {type(value).__name__}")
    count = int(value)
    if count < 0:
        raise ValueError(f"{name} must be >= 0, got {count}")
    return count


def _confidence(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"confidence must be a number in (0, 1), got {type(value).__name__}")
    c = float(value)
    if not math.isfinite(c) or not 0.0 < c < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {c!r}")
    return c


def _probability(name: str, value: object, *, allow_zero: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {type(value).__name__}")
    p = float(value)
    low_ok = p >= 0.0 if allow_zero else p > 0.0
    if not math.isfinite(p) or not low_ok or p > 1.0:
        interval = "[0, 1]" if allow_zero else "(0, 1]"
        raise ValueError(f"{name} must be in {interval}, got {p!r}")
    return p


def _stratum(value: object) -> Stratum:
    if value == "always":
        return "always"
    if value == "sampled":
        return "sampled"
    raise ValueError(f"stratum must be 'always' or 'sampled', got {value!r}")


# --- building blocks ------------------------------------------------------------------------


def clopper_pearson(hits: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """Clopper–Pearson interval for a binomial proportion ``hits / n``.

    ``lower = Beta⁻¹(α/2; x, n−x+1)`` (0 when ``x = 0``), ``upper = Beta⁻¹(1−α/2; x+1, n−x)``
    (1 when ``x = n``), ``α = 1 − confidence``. Real-valued ``hits``/``n`` are accepted (the
    Korn–Graubard effective counts); ``0 ≤ hits ≤ n``, ``n > 0``.

    >>> lo, hi = clopper_pearson(7, 100)
    >>> round(lo, 4), round(hi, 4)
    (0.0286, 0.1389)
    >>> clopper_pearson(0, 10)[0], clopper_pearson(10, 10)[1]
    (0.0, 1.0)
    """
    c = _confidence(confidence)
    if not (math.isfinite(hits) and math.isfinite(n)) or n <= 0 or not 0 <= hits <= n:
        raise ValueError(f"need 0 <= hits <= n and n > 0, got hits={hits!r}, n={n!r}")
    # Imported here: scipy costs most of a second at startup, and only estimates need it.
    from scipy.special import betaincinv

    alpha = 1.0 - c
    lower = 0.0 if hits <= 0 else float(betaincinv(hits, n - hits + 1, alpha / 2))
    upper = 1.0 if hits >= n else float(betaincinv(hits + 1, n - hits, 1 - alpha / 2))
    return lower, upper


def horvitz_thompson_rate(
    hits_by_probability: Mapping[float, int], population: int
) -> float | None:
    """Horvitz–Thompson rate ``Σ_i y_i / π_i / N`` over the checked answers.

    ``hits_by_probability`` maps an inclusion probability ``π ∈ (0, 1]`` to the number of checked
    answers with that probability that have the property. Unbiased, but it ignores the known
    stratum sizes, so it is noisier than the post-stratified estimate (and can exceed 1).
    ``None`` when ``population`` is 0.

    >>> horvitz_thompson_rate({1.0: 30, 0.1: 7}, 1000)
    0.1
    """
    n = _count("population", population)
    total = 0.0
    for p, x in hits_by_probability.items():
        total += _count("hits", x) / _probability("inclusion probability", p, allow_zero=False)
    return None if n == 0 else total / n


def _deff_from_sums(k: int, sm: int, sy: int, smm: int, syy: int, smy: int) -> float:
    """Design effect of the ratio ``Σy/Σm`` over ``k`` clusters from integer sums (see below)."""
    if sm == 0:
        return 1.0
    max_deff = smm / sm  # every answer of a conversation alike: n* = (Σm)² / Σm²
    if k <= 1 or sy in (0, sm):
        return max(1.0, max_deff)
    # Σ_c (y_c − r·m_c)² · sm², with r = sy/sm, in exact integer arithmetic.
    ss_scaled = syy * sm * sm - 2 * sy * smy * sm + sy * sy * smm
    # v_clu = k/(k−1) · ss / sm²;  v_srs = r(1−r)/sm;  deff = v_clu / v_srs.
    deff = (k / (k - 1)) * ss_scaled / (sm * sy * (sm - sy))
    return min(max(deff, 1.0), max(1.0, max_deff))


def cluster_design_effect(sizes: Iterable[int], hits: Iterable[int]) -> float:
    """Design effect of ``x_s / n_s`` when whole conversations are sampled.

    ``sizes[c]`` = checked ``sampled``-stratum answers of conversation ``c``, ``hits[c]`` = those
    with the property. With ``r = Σy/Σm`` and ``k`` conversations, the linearised variance of the
    ratio is ``v = k/(k−1) · Σ(y_c − r·m_c)² / (Σm)²``; the design effect is
    ``deff = v / (r(1−r)/Σm)``, clipped to ``[1, Σm²/Σm]`` (the upper end is the value when all
    answers of a conversation agree). When ``r`` is 0 or 1, or ``k ≤ 1``, the variance cannot be
    estimated and the conservative upper end is used. One answer per conversation gives exactly 1.

    >>> cluster_design_effect([1, 1, 1], [0, 1, 0])
    1.0
    >>> cluster_design_effect([3, 3, 3, 3], [3, 0, 0, 3])
    3.0
    """
    k = sm = sy = smm = syy = smy = 0
    for m, y in zip(sizes, hits, strict=True):
        m = _count("size", m)
        y = _count("hits", y)
        if y > m:
            raise ValueError(f"hits ({y}) exceed size ({m}) of a conversation")
        if m == 0:
            continue
        k += 1
        sm += m
        sy += y
        smm += m * m
        syy += y * y
        smy += m * y
    return _deff_from_sums(k, sm, sy, smm, syy, smy)


@dataclass(frozen=True)
class _Part:
    """One sampled sub-stratum: its size, checks, hits, inclusion probability, design effect."""

    population: int
    checked: int
    hits: int
    probability: float | None
    deff: float = 1.0


def _combine(
    always_population: int,
    always_checked: int,
    always_hits: int,
    parts: Sequence[_Part],
    confidence: float,
) -> RateEstimate | None:
    if always_checked > always_population:
        raise ValueError(
            f"always stratum: {always_checked} checked but only {always_population} counted"
        )
    if always_hits > always_checked:
        raise ValueError(f"always stratum: hits ({always_hits}) exceed checked ({always_checked})")
    for part in parts:
        if part.checked > part.population:
            raise ValueError(
                f"sampled stratum: {part.checked} checked but only {part.population} counted "
                "(count every answer with observe_population, checked or not)"
            )
        if part.hits > part.checked:
            raise ValueError(f"sampled stratum: hits ({part.hits}) exceed checked ({part.checked})")

    n_total = always_population + sum(p.population for p in parts)
    if n_total == 0:
        return None

    # always: a census when every answer was checked; unchecked ones are bounded, not guessed.
    missing = always_population - always_checked
    lower = float(always_hits)
    upper = float(always_hits + missing)
    point: float | None
    if missing == 0:
        point = float(always_hits)
    elif always_checked > 0:
        point = always_hits * always_population / always_checked
    else:
        point = None
    no_sample = missing > 0 and always_checked == 0

    random_parts = [p for p in parts if 0 < p.checked < p.population]
    part_confidence = 1.0 - (1.0 - confidence) / max(1, len(random_parts))
    deff_used = 1.0
    for part in parts:
        if part.population == 0:
            continue
        if part.checked == 0:
            no_sample = True
            point = None
            upper += part.population
            continue
        share = part.hits / part.checked
        if point is not None:
            point += part.population * share
        if part.checked == part.population:
            lower += part.hits
            upper += part.hits
            continue
        deff = max(1.0, part.deff)
        deff_used = max(deff_used, deff)
        lo, hi = clopper_pearson(part.hits / deff, part.checked / deff, part_confidence)
        lower += max(float(part.hits), min(part.population * lo, part.population * share))
        upper += min(
            float(part.population - (part.checked - part.hits)),
            max(part.population * hi, part.population * share),
        )

    method: EstimateMethod
    if no_sample:
        method = "no-sample"
    elif missing > 0 or random_parts:
        method = "korn-graubard" if deff_used > 1.0 else "clopper-pearson"
    else:
        method = "census"

    def rate(total: float) -> float:
        return min(1.0, max(0.0, total / n_total))

    ht_hits: dict[float, int] = {}
    ht_ok = missing == 0
    if always_hits:
        ht_hits[1.0] = always_hits
    for part in parts:
        if part.population == 0:
            continue
        if part.probability is None or part.probability == 0.0:
            ht_ok = False
            continue
        ht_hits[part.probability] = ht_hits.get(part.probability, 0) + part.hits
    ht = horvitz_thompson_rate(ht_hits, n_total) if ht_ok else None

    estimate = None if point is None else rate(point)
    low, high = rate(lower), rate(upper)
    if estimate is not None:  # guard the invariant against floating-point noise
        low = min(low, estimate)
        high = max(high, estimate)
    return RateEstimate(
        estimate=estimate,
        lower=low,
        upper=high,
        confidence=confidence,
        population=n_total,
        checked=always_checked + sum(p.checked for p in parts),
        hits=always_hits + sum(p.hits for p in parts),
        method=method,
        horvitz_thompson=ht,
        design_effect=deff_used,
        always_population=always_population,
        always_checked=always_checked,
        always_hits=always_hits,
        sampled_population=sum(p.population for p in parts),
        sampled_checked=sum(p.checked for p in parts),
        sampled_hits=sum(p.hits for p in parts),
    )


# --- the two entry points -------------------------------------------------------------------


def estimate_rate(
    always_hits: int,
    always_n: int,
    sampled_hits: int,
    sampled_n: int,
    population_sampled_stratum: int,
    confidence: float = 0.95,
    *,
    inclusion_probability: float | None = None,
    design_effect: float = 1.0,
) -> RateEstimate | None:
    """Post-stratified rate over all assistant answers with an exact (conservative) interval.

    ``always_n`` answers of the ``always`` stratum were all checked, ``always_hits`` of them have
    the property; of the ``population_sampled_stratum`` (``N_s``) other answers, ``sampled_n``
    (``n_s``) were checked, ``sampled_hits`` (``x_s``) have it. With ``N = always_n + N_s``::

        estimate = (always_hits + N_s · x_s / n_s) / N
        [lower, upper] = Clopper–Pearson(x_s, n_s) mapped by q ↦ (always_hits + N_s·q) / N

    (see the module docstring for the bounds, the edge cases and why the interval is exact).
    ``inclusion_probability`` (the sampling rate ``p``) only adds the Horvitz–Thompson estimate
    ``(always_hits + x_s/p) / N``. ``design_effect`` > 1 applies the Korn–Graubard effective
    sample size (see :func:`cluster_design_effect`). Returns ``None`` when ``N = 0``; raises
    ``ValueError`` on negative or non-integer counts, hits above checks, checks above the stratum
    size, or a confidence outside ``(0, 1)``.

    >>> e = estimate_rate(30, 100, 7, 100, 900)
    >>> e.estimate, round(e.lower, 4), round(e.upper, 4), e.method
    (0.093, 0.0557, 0.155, 'clopper-pearson')
    >>> estimate_rate(30, 100, 0, 0, 900).estimate is None
    True
    """
    c = _confidence(confidence)
    x_a = _count("always_hits", always_hits)
    n_a = _count("always_n", always_n)
    x_s = _count("sampled_hits", sampled_hits)
    n_s = _count("sampled_n", sampled_n)
    big_n_s = _count("population_sampled_stratum", population_sampled_stratum)
    p = (
        None
        if inclusion_probability is None
        else _probability("inclusion_probability", inclusion_probability, allow_zero=True)
    )
    if isinstance(design_effect, bool) or not isinstance(design_effect, int | float):
        raise ValueError("design_effect must be a number >= 1")
    if not math.isfinite(design_effect) or design_effect < 1.0:
        raise ValueError(f"design_effect must be >= 1, got {design_effect!r}")
    if p == 0.0 and n_s > 0:
        raise ValueError("inclusion_probability 0 but sampled answers were checked")
    part = _Part(big_n_s, n_s, x_s, p, float(design_effect))
    return _combine(n_a, n_a, x_a, [part], c)


@dataclass
class _Counts:
    population: int = 0
    checked: int = 0
    hits: int = 0
    # Per-conversation (answers, hits) of checked answers, and the sums the design effect needs.
    conversations: dict[str, tuple[int, int]] = field(default_factory=dict)
    k: int = 0
    smm: int = 0
    syy: int = 0
    smy: int = 0

    def add_check(self, hit: bool, conversation_id: str | None) -> None:
        h = int(hit)
        self.checked += 1
        self.hits += h
        m, y = (
            (0, 0) if conversation_id is None else self.conversations.get(conversation_id, (0, 0))
        )
        if m == 0:
            self.k += 1
        m2, y2 = m + 1, y + h
        self.smm += m2 * m2 - m * m
        self.syy += y2 * y2 - y * y
        self.smy += m2 * y2 - m * y
        if conversation_id is not None:
            self.conversations[conversation_id] = (m2, y2)

    def deff(self) -> float:
        return _deff_from_sums(self.k, self.checked, self.hits, self.smm, self.syy, self.smy)


class RateTracker:
    """Incremental counts for one rate (e.g. "answer has an unsupported claim").

    Call :meth:`observe_population` once for **every** assistant answer screened (checked or not),
    with the stratum and inclusion probability of its :class:`~services.sampling.SampleDecision`,
    and :meth:`observe` once for every checked answer with its outcome; read :meth:`estimate` at
    any time. Use one tracker per rate. Not thread-safe (one per worker task or guarded by a lock).

    >>> t = RateTracker()
    >>> for _ in range(10):
    ...     t.observe_population("always")
    >>> for _ in range(90):
    ...     t.observe_population("sampled", 0.5)
    >>> for i in range(10):
    ...     t.observe("always", 1.0, hit=i < 3)
    >>> for i in range(45):
    ...     t.observe("sampled", 0.5, hit=i < 9)
    >>> e = t.estimate()
    >>> e.estimate, e.population, e.checked, e.hits, e.horvitz_thompson
    (0.21, 100, 55, 12, 0.21)

    Passing ``conversation_id`` to :meth:`observe` makes the interval account for whole
    conversations being sampled together (Korn–Graubard; it keeps two integers per checked
    ``sampled``-stratum conversation). Without it every answer counts as independent.
    """

    def __init__(self) -> None:
        self._always = _Counts()
        self._sampled: dict[float, _Counts] = {}

    def observe_population(
        self, stratum: Stratum, inclusion_probability: float | None = None, count: int = 1
    ) -> None:
        """Count ``count`` screened answers of ``stratum``.

        For ``sampled`` the inclusion probability (the rate in force, may be 0) is required, so
        that a rate change splits the stratum correctly; for ``always`` it must be omitted or 1.
        """
        s = _stratum(stratum)
        n = _count("count", count)
        self._bucket(s, inclusion_probability, allow_zero=True).population += n

    def observe(
        self,
        stratum: Stratum,
        inclusion_probability: float,
        hit: bool,
        conversation_id: str | None = None,
    ) -> None:
        """Record one checked answer: its stratum, inclusion probability and outcome."""
        s = _stratum(stratum)
        if not isinstance(hit, bool):
            raise ValueError(f"hit must be a bool, got {type(hit).__name__}")
        if conversation_id is not None and not isinstance(conversation_id, str):
            raise ValueError("conversation_id must be a str or None")
        bucket = self._bucket(s, inclusion_probability, allow_zero=False)
        bucket.add_check(hit, conversation_id if s == "sampled" else None)

    def _bucket(self, stratum: Stratum, probability: float | None, *, allow_zero: bool) -> _Counts:
        if stratum == "always":
            if probability is not None and _probability("p", probability, allow_zero=True) != 1.0:
                raise ValueError(
                    f"always-stratum inclusion probability must be 1, got {probability}"
                )
            return self._always
        if probability is None:
            raise ValueError("the sampled stratum needs its inclusion probability")
        p = _probability("inclusion_probability", probability, allow_zero=allow_zero)
        return self._sampled.setdefault(p, _Counts())

    def estimate(self, confidence: float = 0.95) -> RateEstimate | None:
        """The current estimate (see :func:`estimate_rate`); ``None`` before any answer."""
        c = _confidence(confidence)
        parts = [
            _Part(b.population, b.checked, b.hits, p, b.deff())
            for p, b in sorted(self._sampled.items())
        ]
        a = self._always
        return _combine(a.population, a.checked, a.hits, parts, c)
