r"""Population rates from sampled checks, with confidence intervals (SPEC §5).

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
    are the non-hits seen). ``n_s = N_s`` (everything checked) gives the point itself.

Not estimable
    ``N = 0``, or answers of a stratum counted and none of them checked (e.g. rate 0): nothing is
    known of those answers, so there is no estimate and no interval — only the counts and the
    reason (:class:`~schemas.estimates.RateEstimate` with ``estimable = false``). An interval of
    [0, 1] would "cover" every rate and say nothing; it is not given as if it were an estimate.

Conversations are sampled together
    The hash is per conversation, so the ``sampled``-stratum answers of one conversation are
    checked together (a cluster sample). When answers of one conversation are alike (one bad
    retrieval spoils several answers), ``x_s`` varies more than a binomial and a plain
    Clopper–Pearson interval is too narrow. :class:`RateTracker` therefore accepts the
    conversation id of each checked answer, estimates the design effect ``deff`` of the ratio
    over the ``k`` conversations (linearisation) and applies the Korn–Graubard (1998) interval:
    Clopper–Pearson on the effective sample size ``n* = n_s / deff`` (``x* = x_s / deff``) with
    their degrees-of-freedom correction ``n*_df = n* · (t_{n_s−1} / t_{k−1})²`` (``t_d``: the
    ``1 − α/2`` quantile of Student's t with ``d`` degrees of freedom). A variance estimated from
    ``k`` conversations has ``k − 1`` degrees of freedom; with few conversations it is itself
    uncertain, and the correction widens the interval accordingly. With one answer per
    conversation ``k = n_s``: ``deff = 1``, the factor is 1, and the interval is exactly
    Clopper–Pearson. With clustering it is approximate, validated by simulation
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
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from schemas.estimates import EstimateMethod, NotEstimable, RateEstimate
from services.sampling import Stratum

__all__ = [
    "DEFAULT_MAX_CONVERSATIONS",
    "ClusterSums",
    "EstimateMethod",
    "KornGraubard",
    "RateEstimate",
    "RateTracker",
    "clopper_pearson",
    "cluster_degrees_of_freedom",
    "cluster_design_effect",
    "estimate_rate",
    "horvitz_thompson_rate",
    "korn_graubard",
]

#: Conversations whose checked-answer counts a tracker keeps (for the design effect) by default.
DEFAULT_MAX_CONVERSATIONS = 200_000


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


@dataclass
class ClusterSums:
    """Integer sums over the conversations of a cluster sample, updated one answer at a time.

    ``k`` conversations with ``m_c`` checked answers and ``y_c`` hits each; ``sm = Σm``,
    ``sy = Σy`` and the power sums the design effect and its degrees of freedom need. Exact
    (Python integers), so the variance terms below do not cancel catastrophically.
    """

    k: int = 0
    sm: int = 0
    sy: int = 0
    # Σ m^a y^b for a + b = 2 and a + b = 4
    smm: int = 0
    smy: int = 0
    syy: int = 0
    m4: int = 0
    m3y: int = 0
    m2y2: int = 0
    my3: int = 0
    y4: int = 0

    def move(self, old: tuple[int, int], new: tuple[int, int]) -> None:
        """Conversation ``(m, y)`` became ``new`` (``old = (0, 0)``: a new conversation)."""
        for (m, y), sign in ((old, -1), (new, 1)):
            if m == 0:
                continue
            self.k += sign
            self.sm += sign * m
            self.sy += sign * y
            self.smm += sign * m * m
            self.smy += sign * m * y
            self.syy += sign * y * y
            self.m4 += sign * m**4
            self.m3y += sign * m**3 * y
            self.m2y2 += sign * m * m * y * y
            self.my3 += sign * m * y**3
            self.y4 += sign * y**4

    def _residual_moments(self) -> tuple[int, int]:
        """``(Σe², Σe⁴)`` of ``e_c = y_c·Σm − Σy·m_c`` (the residuals ``y_c − r·m_c`` times Σm)."""
        a, b = self.sm, self.sy
        s2 = a * a * self.syy - 2 * a * b * self.smy + b * b * self.smm
        s4 = (
            a**4 * self.y4
            - 4 * a**3 * b * self.my3
            + 6 * a * a * b * b * self.m2y2
            - 4 * a * b**3 * self.m3y
            + b**4 * self.m4
        )
        return s2, s4

    def design_effect(self) -> float:
        """Design effect of the ratio ``Σy/Σm`` (see :func:`cluster_design_effect`)."""
        if self.sm == 0:
            return 1.0
        max_deff = max(1.0, self.smm / self.sm)  # all answers of a conversation alike
        if self.k <= 1 or self.sy in (0, self.sm):
            return max_deff
        s2, _ = self._residual_moments()
        # v_clu = k/(k−1) · Σe_c² / (Σm)⁴ (e scaled by Σm);  v_srs = r(1−r)/Σm;  deff = ratio.
        deff = (self.k / (self.k - 1)) * s2 / (self.sm * self.sy * (self.sm - self.sy))
        return min(max(deff, 1.0), max_deff)

    def degrees_of_freedom(self) -> float:
        """Degrees of freedom of the between-conversation variance (see
        :func:`cluster_design_effect`); 1 for a single conversation."""
        k = self.k
        if k <= 1:
            return 1.0
        if k == self.sm:  # one answer per conversation: no clustering to estimate
            return float(k - 1)
        s2, s4 = self._residual_moments()
        if s2 == 0:  # no variation: the conservative maximum design effect is used anyway
            return float(k - 1)
        return min(float(k - 1), max(1.0, 3.0 * (s2 * s2 / s4) - 2.0))


def _cluster_sums(sizes: Iterable[int], hits: Iterable[int]) -> ClusterSums:
    sums = ClusterSums()
    for m, y in zip(sizes, hits, strict=True):
        m = _count("size", m)
        y = _count("hits", y)
        if y > m:
            raise ValueError(f"hits ({y}) exceed size ({m}) of a conversation")
        sums.move((0, 0), (m, y))
    return sums


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
    return _cluster_sums(sizes, hits).design_effect()


def cluster_degrees_of_freedom(sizes: Iterable[int], hits: Iterable[int]) -> float:
    """Degrees of freedom of the between-conversation variance behind the design effect.

    ``k − 1`` for ``k`` conversations (Korn–Graubard), lowered when a few conversations carry the
    variance — typically a rare property whose hits sit in one or two conversations: then the
    design effect rests on those few and is itself very uncertain. The effective degrees of
    freedom of ``Σe_c²`` (``e_c = y_c − r·m_c``) are estimated as ``3·(Σe²)²/Σe⁴ − 2``, which is
    ``k`` for normal residuals (fourth moment ``3σ⁴``) and falls to 1 when one conversation
    carries all of it; the result is clipped to ``[1, k − 1]``. One answer per conversation (no
    clustering to estimate) or no variation at all gives ``k − 1``; one conversation gives 1.

    >>> cluster_degrees_of_freedom([10] * 5, [3, 2, 4, 3, 2])
    4.0
    >>> round(cluster_degrees_of_freedom([10] * 20, [6] + [0] * 19), 2)
    1.32
    """
    return _cluster_sums(sizes, hits).degrees_of_freedom()


class KornGraubard(NamedTuple):
    """A Korn–Graubard interval and the effective sample size it was computed on."""

    lower: float
    upper: float
    effective_n: float


def korn_graubard(
    hits: int,
    n: int,
    design_effect: float = 1.0,
    degrees_of_freedom: float | None = None,
    confidence: float = 0.95,
) -> KornGraubard:
    """Korn–Graubard interval for ``hits / n`` from a cluster sample.

    Clopper–Pearson on ``n*_df = n / deff · (t_{n−1} / t_df)²`` trials with ``hits · n*_df / n``
    successes. ``degrees_of_freedom`` is that of the variance behind the design effect: ``k − 1``
    for ``k`` conversations, or :func:`cluster_degrees_of_freedom`; None (answers independent) or
    ``n − 1`` leaves the factor at 1.

    >>> round(korn_graubard(20, 200, 2.0, 9).effective_n, 2)
    75.99
    >>> korn_graubard(7, 100)[:2] == clopper_pearson(7, 100)
    True
    """
    c = _confidence(confidence)
    if n <= 0 or not 0 <= hits <= n:
        raise ValueError(f"need 0 <= hits <= n and n > 0, got hits={hits!r}, n={n!r}")
    if not math.isfinite(design_effect) or design_effect < 1.0:
        raise ValueError(f"design_effect must be >= 1, got {design_effect!r}")
    n_eff = n / design_effect
    if degrees_of_freedom is not None:
        if not math.isfinite(degrees_of_freedom) or degrees_of_freedom < 1.0:
            raise ValueError(f"degrees_of_freedom must be >= 1, got {degrees_of_freedom!r}")
        if degrees_of_freedom < n - 1:
            from scipy.special import stdtrit  # lazily, as in clopper_pearson

            q = 1.0 - (1.0 - c) / 2
            n_eff *= (float(stdtrit(n - 1, q)) / float(stdtrit(degrees_of_freedom, q))) ** 2
    if n_eff == n:
        lo, hi = clopper_pearson(hits, n, c)
    else:
        lo, hi = clopper_pearson(min(n_eff, hits * n_eff / n), n_eff, c)
    return KornGraubard(lo, hi, n_eff)


@dataclass(frozen=True)
class _Part:
    """One sampled sub-stratum: its size, checks, hits, inclusion probability, design effect and
    the number of conversations its checks came from (None: answers taken as independent)."""

    population: int
    checked: int
    hits: int
    probability: float | None
    deff: float = 1.0
    conversations: int | None = None
    degrees_of_freedom: float | None = None


def _not_estimable(
    reason: NotEstimable,
    confidence: float,
    always: tuple[int, int, int],
    parts: Sequence[_Part],
) -> RateEstimate:
    n_a, c_a, x_a = always
    return RateEstimate(
        estimable=False,
        not_estimable=reason,
        estimate=None,
        lower=None,
        upper=None,
        confidence=confidence,
        method="not-estimable",
        population=n_a + sum(p.population for p in parts),
        checked=c_a + sum(p.checked for p in parts),
        hits=x_a + sum(p.hits for p in parts),
        always_population=n_a,
        always_checked=c_a,
        always_hits=x_a,
        sampled_population=sum(p.population for p in parts),
        sampled_checked=sum(p.checked for p in parts),
        sampled_hits=sum(p.hits for p in parts),
    )


def _combine(
    always_population: int,
    always_checked: int,
    always_hits: int,
    parts: Sequence[_Part],
    confidence: float,
) -> RateEstimate:
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

    always = (always_population, always_checked, always_hits)
    n_total = always_population + sum(p.population for p in parts)
    missing = always_population - always_checked
    if n_total == 0:
        return _not_estimable("no-answers", confidence, always, parts)
    if missing > 0 and always_checked == 0:
        return _not_estimable("unchecked-always", confidence, always, parts)
    if any(p.population > 0 and p.checked == 0 for p in parts):
        return _not_estimable("unchecked-stratum", confidence, always, parts)

    # always: a census when every answer was checked; unchecked ones are bounded, not guessed.
    lower = float(always_hits)
    upper = float(always_hits + missing)
    point = always_hits * always_population / always_checked if missing else float(always_hits)

    random_parts = [p for p in parts if 0 < p.checked < p.population]
    part_confidence = 1.0 - (1.0 - confidence) / max(1, len(random_parts))
    deff_used = 1.0
    widened = False
    n_eff: float | None = None
    conversations: int | None = None
    df: float | None = None
    for part in parts:
        if part.population == 0:
            continue
        share = part.hits / part.checked
        point += part.population * share
        if part.conversations is not None:
            conversations = (conversations or 0) + part.conversations
        if part.checked == part.population:
            lower += part.hits
            upper += part.hits
            continue
        deff = max(1.0, part.deff)
        deff_used = max(deff_used, deff)
        kg = korn_graubard(part.hits, part.checked, deff, part.degrees_of_freedom, part_confidence)
        widened = widened or kg.effective_n < part.checked
        if n_eff is None or kg.effective_n < n_eff:
            n_eff, df = kg.effective_n, part.degrees_of_freedom
        lower += max(float(part.hits), min(part.population * kg.lower, part.population * share))
        upper += min(
            float(part.population - (part.checked - part.hits)),
            max(part.population * kg.upper, part.population * share),
        )

    method: EstimateMethod
    if missing > 0 or random_parts:
        method = "korn-graubard" if widened else "clopper-pearson"
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

    estimate = rate(point)
    # guard the invariant lower <= estimate <= upper against floating-point noise
    low, high = min(rate(lower), estimate), max(rate(upper), estimate)
    return RateEstimate(
        estimable=True,
        estimate=estimate,
        lower=low,
        upper=high,
        confidence=confidence,
        method=method,
        population=n_total,
        checked=always_checked + sum(p.checked for p in parts),
        hits=always_hits + sum(p.hits for p in parts),
        horvitz_thompson=ht,
        design_effect=deff_used,
        conversations=conversations,
        degrees_of_freedom=df,
        effective_sample_size=n_eff,
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
    conversations: int | None = None,
    degrees_of_freedom: float | None = None,
) -> RateEstimate:
    """Post-stratified rate over all assistant answers with its confidence interval.

    ``always_n`` answers of the ``always`` stratum were all checked, ``always_hits`` of them have
    the property; of the ``population_sampled_stratum`` (``N_s``) other answers, ``sampled_n``
    (``n_s``) were checked, ``sampled_hits`` (``x_s``) have it. With ``N = always_n + N_s``::

        estimate = (always_hits + N_s · x_s / n_s) / N
        [lower, upper] = Clopper–Pearson(x_s, n_s) mapped by q ↦ (always_hits + N_s·q) / N

    (see the module docstring for the bounds, the edge cases and why the interval is exact).
    ``inclusion_probability`` (the sampling rate ``p``) only adds the Horvitz–Thompson estimate
    ``(always_hits + x_s/p) / N``. ``design_effect`` > 1, ``conversations`` (the number of
    conversations the ``n_s`` checks came from) and ``degrees_of_freedom`` (default
    ``conversations − 1``) give the Korn–Graubard interval (:func:`korn_graubard`). Not
    estimable (``estimable = False``, no numbers) when ``N = 0`` or ``n_s = 0 < N_s``. Raises
    ``ValueError`` on negative or non-integer counts, hits above checks, checks above the stratum
    size, conversations outside ``[1, n_s]``, degrees of freedom below 1, or a confidence outside
    ``(0, 1)``.

    >>> e = estimate_rate(30, 100, 7, 100, 900)
    >>> e.estimate, round(e.lower, 4), round(e.upper, 4), e.method
    (0.093, 0.0557, 0.155, 'clopper-pearson')
    >>> e = estimate_rate(30, 100, 0, 0, 900)
    >>> e.estimable, e.not_estimable, e.estimate, e.lower
    (False, 'unchecked-stratum', None, None)
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
    if conversations is not None:
        k = _count("conversations", conversations)
        if n_s and not 1 <= k <= n_s:
            raise ValueError(f"conversations must be in [1, sampled_n], got {k}")
        conversations = k if n_s else None
    if degrees_of_freedom is None and conversations is not None:
        degrees_of_freedom = float(max(1, conversations - 1))
    if degrees_of_freedom is not None:
        if isinstance(degrees_of_freedom, bool) or not isinstance(degrees_of_freedom, int | float):
            raise ValueError("degrees_of_freedom must be a number >= 1")
        if not math.isfinite(degrees_of_freedom) or degrees_of_freedom < 1.0:
            raise ValueError(f"degrees_of_freedom must be >= 1, got {degrees_of_freedom!r}")
    if p == 0.0 and n_s > 0:
        raise ValueError("inclusion_probability 0 but sampled answers were checked")
    part = _Part(big_n_s, n_s, x_s, p, float(design_effect), conversations, degrees_of_freedom)
    return _combine(n_a, n_a, x_a, [part], c)


@dataclass
class _Counts:
    """Counts of one (sub-)stratum; for the sampled one, the cluster sums of its conversations."""

    max_conversations: int = DEFAULT_MAX_CONVERSATIONS
    population: int = 0
    checked: int = 0
    hits: int = 0
    #: (answers, hits) of the checked answers of the most recently checked conversations, so a
    #: further answer updates its conversation's terms; the least recent are forgotten first
    #: (their terms stay in the sums: only a later answer of theirs would start a new cluster).
    conversations: OrderedDict[str, tuple[int, int]] = field(default_factory=OrderedDict)
    clusters: ClusterSums = field(default_factory=ClusterSums)

    def add_check(self, hit: bool, conversation_id: str | None) -> None:
        h = int(hit)
        self.checked += 1
        self.hits += h
        old = (0, 0)
        if conversation_id is not None:
            old = self.conversations.pop(conversation_id, (0, 0))
        new = (old[0] + 1, old[1] + h)
        self.clusters.move(old, new)
        if conversation_id is not None:
            self.conversations[conversation_id] = new
            if len(self.conversations) > self.max_conversations:
                self.conversations.popitem(last=False)


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
    conversations being sampled together (Korn–Graubard with the degrees-of-freedom correction).
    Without it every answer counts as independent. The tracker keeps two integers for each of the
    ``max_conversations`` most recently checked conversations (a bound on its memory); an answer
    of a conversation forgotten since counts as a new conversation, which slightly understates
    the clustering of conversations that span more than that many others.
    """

    def __init__(self, max_conversations: int = DEFAULT_MAX_CONVERSATIONS) -> None:
        if isinstance(max_conversations, bool) or not isinstance(max_conversations, int):
            raise ValueError("max_conversations must be an int")
        if max_conversations < 1:
            raise ValueError(f"max_conversations must be >= 1, got {max_conversations}")
        self.max_conversations = max_conversations
        self._always = _Counts(max_conversations)
        self._sampled: dict[float, _Counts] = {}
        self._ids = False

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
        if s == "sampled":
            self._ids = self._ids or conversation_id is not None
            bucket.add_check(hit, conversation_id)
        else:
            bucket.add_check(hit, None)

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
        bucket = self._sampled.get(p)
        if bucket is None:
            bucket = self._sampled[p] = _Counts(self.max_conversations)
        return bucket

    def estimate(self, confidence: float = 0.95) -> RateEstimate:
        """The current estimate (see :func:`estimate_rate`); not estimable before any answer."""
        c = _confidence(confidence)
        parts = [
            _Part(
                b.population,
                b.checked,
                b.hits,
                p,
                b.clusters.design_effect(),
                b.clusters.k if self._ids else None,
                b.clusters.degrees_of_freedom() if self._ids else None,
            )
            for p, b in sorted(self._sampled.items())
        ]
        a = self._always
        return _combine(a.population, a.checked, a.hits, parts, c)
