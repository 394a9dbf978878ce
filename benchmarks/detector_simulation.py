"""False alarms and detection delay of the spike detector (``services.alerting``) on real-looking
traffic, against an oracle CUSUM that knows the baseline.

Every series is fed window by window to the real :class:`Detector` through its public API (one
detector holds many independent series with correction ``none``: the same as one detector per
series, the worst case for false alarms; Benjamini–Hochberg over a family only lowers them). In a
window a series gets ``n ~ Poisson(volume)`` assistant messages, of which ``k ~ Binomial(n, r)``
carry a leak finding; ``r`` is the window's rate. Traffic kinds (``TRAFFIC``):

- ``steady``: ``r`` constant;
- ``drift``: ``r`` moves linearly from half to twice the base rate over 2,000 windows;
- ``day/night``: the volume follows a daily cycle (1,440 windows) from ×1/√5 to ×√5 of its
  geometric mean (×5 between night and day), the rate constant;
- ``overdispersed``: ``r`` varies from window to window by a factor ~ Gamma with mean 1 and a
  coefficient of variation of 10 % (or 30 %), independently (or AR(1) with ρ = 0.9, persistent);
- the same, with the binomial test's denominator hidden (``poisson`` series: counts only).

**False alarms**: after a warm-up (``--warm`` windows), every ``firing`` event in a quiet series is
a false alarm; reported per 10,000 series-windows with an exact 95 % interval (Poisson).

**Detection**: after the warm-up the rate of every series jumps to ×3 (×2, ×5) and stays; the
delay is the number of spike windows up to and including the one that fires (1 = the first spike
window). A series already firing when the spike starts is left out. The **oracle** is a Poisson
CUSUM on the same counts that knows the base mean ``volume·r`` and the ×3 rise, with the
threshold that gives exactly one false alarm per 10,000 windows (its average run length computed
by a Markov chain on a fine grid, Brook & Evans 1972): the best delay any detector meeting the
false-alarm target can have at that volume.

Deterministic for a given ``--seed``. Prints markdown; with ``--write FILE`` replaces the block of
``FILE`` between the ``simulation:begin``/``simulation:end`` markers::

    nice -n 10 .venv/bin/python benchmarks/detector_simulation.py --write docs/alerting.md
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from schemas.alerts import DetectorSettings
from services.alerting import Detector, SeriesKey

BEGIN = "<!-- simulation:begin -->"
END = "<!-- simulation:end -->"
T0 = datetime(2024, 1, 1, tzinfo=UTC)
DAY = 1440
DRIFT_WINDOWS = 2000
HORIZON = 120
ORACLE_ARL = 10_000.0
SETTINGS = DetectorSettings()


@dataclass(frozen=True)
class Traffic:
    """How a quiet series' traffic behaves (see the module docstring)."""

    name: str
    volume: int
    rate: float
    drift: bool = False
    day_night: float = 1.0  # ratio of day to night volume
    cv: float = 0.0  # window-to-window coefficient of variation of the rate
    ar: float = 0.0  # AR(1) coefficient of that variation (0: independent windows)
    counts_only: bool = False  # poisson series: the detector is not given the messages

    def label(self) -> str:
        test = "poisson" if self.counts_only else "binomial"
        return f"{self.name} | {test} | {self.rate:.1%} | {self.volume:,}"


@dataclass
class Source:
    """Generates the windows of ``series`` independent series of one traffic kind."""

    traffic: Traffic
    series: int
    rng: np.random.Generator
    level: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.level = np.zeros(self.series)

    def window(self, t: int, start: int, multiplier: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """(messages, findings) of window ``t``; ``start``: first window after the warm-up."""
        tr, rng = self.traffic, self.rng
        volume = float(tr.volume)
        if tr.day_night != 1.0:
            volume *= tr.day_night ** (0.5 * math.sin(2 * math.pi * t / DAY))
        rate = np.full(self.series, tr.rate)
        if tr.drift:
            progress = min(1.0, max(0.0, (t - start) / DRIFT_WINDOWS))
            rate *= 0.5 + 1.5 * progress
        if tr.cv > 0:
            # log-normal factor with mean 1 and the given CV; AR(1) on its log when persistent
            sigma = math.sqrt(math.log1p(tr.cv * tr.cv))
            shock = rng.normal(0.0, sigma, self.series)
            if tr.ar > 0:
                self.level = tr.ar * self.level + math.sqrt(1 - tr.ar * tr.ar) * shock
            else:
                self.level = shock
            rate *= np.exp(self.level - sigma * sigma / 2)
        n = rng.poisson(volume, self.series)
        k = rng.binomial(n, np.minimum(1.0, rate * multiplier))
        return n, k


def _keys(count: int) -> list[SeriesKey]:
    return [SeriesKey(category="pii", tenant=f"s{i}", direction="leak") for i in range(count)]


def _feed(
    detector: Detector,
    keys: list[SeriesKey],
    t: int,
    n: np.ndarray,
    k: np.ndarray,
    counts_only: bool,
) -> list[tuple[int, str]]:
    ws = T0 + timedelta(seconds=detector.settings.window_seconds * t)
    if counts_only:
        for key, count in zip(keys, k.tolist(), strict=True):
            detector.observe(key, ws, count)
    else:
        for key, count, messages in zip(keys, k.tolist(), n.tolist(), strict=True):
            detector.observe(key, ws, count, messages)
    return [(int(a.tenant[1:]), a.state, a.fired_by) for a in detector.close_window(ws)]


def _settings(settings: DetectorSettings) -> DetectorSettings:
    return settings.model_copy(update={"correction": "none"})


def false_alarms(
    traffic: Traffic, series: int, windows: int, warm: int, seed: int, settings: DetectorSettings
) -> tuple[dict[str, int], int]:
    """(false alarms by the test that fired, series-windows after the warm-up)."""
    rng = np.random.default_rng([seed, zlib.crc32(traffic.label().encode())])
    source = Source(traffic, series, rng)
    detector = Detector(_settings(settings))
    keys = _keys(series)
    alarms = {"window": 0, "cusum": 0, "both": 0}
    for t in range(warm + windows):
        n, k = source.window(t, warm)
        for _, state, fired_by in _feed(detector, keys, t, n, k, traffic.counts_only):
            if t >= warm and state == "firing":
                alarms[fired_by] += 1
    return alarms, series * windows


@dataclass
class Delays:
    detector: list[float]  # inf: not within the horizon
    oracle: list[float]
    skipped: int


def detection(
    traffic: Traffic,
    multiplier: float,
    reps: int,
    warm: int,
    seed: int,
    settings: DetectorSettings,
) -> Delays:
    rng = np.random.default_rng([seed, 7, zlib.crc32(f"{traffic.label()} {multiplier}".encode())])
    source = Source(traffic, reps, rng)
    detector = Detector(_settings(settings))
    keys = _keys(reps)
    mu0 = traffic.volume * traffic.rate
    h = oracle_threshold(mu0, 3.0)
    s_oracle = np.zeros(reps)
    got = np.full(reps, np.inf)
    oracle = np.full(reps, np.inf)
    skip = np.zeros(reps, dtype=bool)
    for t in range(warm + HORIZON):
        spike = t >= warm
        if t == warm:
            for i, key in enumerate(keys):
                state = detector.series(key)
                skip[i] = state is not None and state.status == "firing"
            s_oracle[:] = np.where(s_oracle >= h, 0.0, s_oracle)
        n, k = source.window(t, warm, multiplier if spike else 1.0)
        for i, state, _ in _feed(detector, keys, t, n, k, traffic.counts_only):
            if spike and state == "firing" and not np.isfinite(got[i]):
                got[i] = t - warm + 1
        s_oracle = np.maximum(0.0, s_oracle + k * math.log(3.0) - 2.0 * mu0)
        alarm = s_oracle >= h
        if spike:
            oracle = np.where(alarm & ~np.isfinite(oracle), t - warm + 1, oracle)
        else:
            s_oracle[alarm] = 0.0
    keep = ~skip
    return Delays(got[keep].tolist(), oracle[keep].tolist(), int(skip.sum()))


_ORACLE: dict[tuple[float, float], float] = {}


def oracle_arl(mu0: float, ratio: float, h: float, step: float = 0.01) -> float:
    """Average run length under the base mean of a Poisson CUSUM ``S ← max(0, S + k·ln R −
    μ₀(R−1))`` with threshold ``h``: a Markov chain on a grid of ``step`` nats."""
    m = math.ceil(h / step)
    grid = np.arange(m) * step
    kmax = int(stats.poisson.ppf(1 - 1e-15, mu0)) + 5
    ks = np.arange(kmax + 1)
    pk = stats.poisson.pmf(ks, mu0)
    inc = ks * math.log(ratio) - mu0 * (ratio - 1.0)
    trans = np.zeros((m, m))
    for k, p in zip(ks.tolist(), pk.tolist(), strict=True):
        nxt = np.maximum(0.0, grid + inc[k])
        inside = nxt < h
        j = np.minimum(np.round(nxt[inside] / step).astype(int), m - 1)
        np.add.at(trans, (np.flatnonzero(inside), j), p)
    arl = np.linalg.solve(np.eye(m) - trans, np.ones(m))
    return float(arl[0])


def oracle_threshold(mu0: float, ratio: float) -> float:
    """The threshold with an average run length of :data:`ORACLE_ARL` windows (bisection)."""
    key = (round(mu0, 9), ratio)
    if key not in _ORACLE:
        lo, hi = 0.5, 20.0
        while hi - lo > 0.01:
            mid = (lo + hi) / 2
            if oracle_arl(mu0, ratio, mid) < ORACLE_ARL:
                lo = mid
            else:
                hi = mid
        _ORACLE[key] = hi
    return _ORACLE[key]


# ------------------------------------------------------------------------------ tables


def _interval(x: int, n: int) -> tuple[float, float]:
    """Exact 95 % interval of a Poisson rate, per 10,000."""
    lo = 0.0 if x == 0 else stats.chi2.ppf(0.025, 2 * x) / 2
    hi = stats.chi2.ppf(0.975, 2 * (x + 1)) / 2
    return float(lo / n * 1e4), float(hi / n * 1e4)


def _median(values: list[float]) -> float:
    return float(np.median(np.asarray(values)))


def _fmt(value: float) -> str:
    return f"> {HORIZON}" if not math.isfinite(value) else f"{value:g}"


FALSE_ALARM_HEAD = [
    "| traffic | test | base rate | msgs/window | series-windows | false alarms "
    "| by window / CUSUM / both | per 10,000 | 95 % interval |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|",
]
DETECTION_HEAD = [
    "| traffic | test | base rate | msgs/window | spike | caught in 1 | within 2 | within 5 "
    "| median delay | oracle median | ratio |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
]


def false_alarm_rows(
    cases: list[Traffic],
    series: int,
    windows: int,
    warm: int,
    seed: int,
    settings: DetectorSettings,
    progress: Callable[[str], None],
) -> tuple[list[str], float]:
    rows, worst = [], 0.0
    for tr in cases:
        by, n = false_alarms(tr, series, windows, warm, seed, settings)
        x = sum(by.values())
        lo, hi = _interval(x, n)
        worst = max(worst, x / n * 1e4)
        rows.append(
            f"| {tr.label()} | {n:,} | {x} | {by['window']} / {by['cusum']} / {by['both']} "
            f"| {x / n * 1e4:.2f} | {lo:.2f} – {hi:.2f} |"
        )
        progress(rows[-1])
    return rows, worst


def detection_rows(
    cases: list[tuple[Traffic, float]],
    reps: int,
    warm: int,
    seed: int,
    settings: DetectorSettings,
    progress: Callable[[str], None],
) -> list[str]:
    rows = []
    for tr, mult in cases:
        d = detection(tr, mult, reps, warm, seed, settings)
        arr = np.asarray(d.detector)
        within = [float(np.mean(arr <= h)) for h in (1, 2, 5)]
        med = _median(d.detector)
        steady = not (tr.drift or tr.cv or tr.day_night != 1.0)
        if mult == 3.0 and steady:
            omed = _median(d.oracle)
            ratio = f"{med / omed:.2f}" if math.isfinite(med) else "—"
            oracle = _fmt(omed)
        else:
            oracle, ratio = "—", "—"
        rows.append(
            f"| {tr.label()} | {mult:g}× | {within[0]:.0%} | {within[1]:.0%} | {within[2]:.0%} "
            f"| {_fmt(med)} | {oracle} | {ratio} |"
        )
        progress(rows[-1])
    return rows


TRADEOFF_THRESHOLDS = (7.5, 10.0)
TRADEOFF_TRAFFIC = [
    Traffic("steady", 100, 0.002),
    Traffic("steady", 1_000, 0.002),
    Traffic("steady", 100, 0.01),
]


def traffic_kinds() -> list[Traffic]:
    steady = [Traffic("steady", v, r) for r in (0.002, 0.01) for v in (20, 100, 1_000, 10_000)]
    return [
        *steady,
        Traffic("drift r/2 → 2r", 10_000, 0.01, drift=True),
        Traffic("drift r/2 → 2r", 10_000, 0.002, drift=True),
        Traffic("day/night ×5", 1_000, 0.01, day_night=5.0),
        Traffic("day/night ×5", 1_000, 0.01, day_night=5.0, counts_only=True),
        Traffic("day/night ×5", 100, 0.01, day_night=5.0),
        Traffic("10 % rate variation", 1_000, 0.01, cv=0.1),
        Traffic("10 % rate variation", 10_000, 0.01, cv=0.1),
        Traffic("10 % rate variation", 10_000, 0.01, cv=0.1, counts_only=True),
        Traffic("30 % rate variation", 10_000, 0.01, cv=0.3),
        Traffic("10 % variation, persistent (AR 0.9)", 10_000, 0.01, cv=0.1, ar=0.9),
    ]


def detection_cases() -> list[tuple[Traffic, float]]:
    cases: list[tuple[Traffic, float]] = []
    for r in (0.002, 0.01):
        for v in (20, 100, 1_000):
            cases.append((Traffic("steady", v, r), 3.0))
    cases += [
        (Traffic("steady", 1_000, 0.01), 2.0),
        (Traffic("steady", 1_000, 0.01), 5.0),
        (Traffic("day/night ×5", 1_000, 0.01, day_night=5.0), 3.0),
        (Traffic("10 % rate variation", 1_000, 0.01, cv=0.1), 3.0),
        (Traffic("10 % rate variation", 10_000, 0.01, cv=0.1), 2.0),
    ]
    return cases


def render(
    series: int, windows: int, reps: int, warm: int, seed: int, settings: DetectorSettings
) -> str:
    started = time.perf_counter()

    def progress(line: str) -> None:
        print(f"[{time.perf_counter() - started:6.0f} s] {line}", file=sys.stderr, flush=True)

    fa, worst = false_alarm_rows(traffic_kinds(), series, windows, warm, seed, settings, progress)
    det = detection_rows(detection_cases(), reps, warm, seed, settings, progress)
    trade_fa: list[str] = []
    trade_det: list[str] = []
    for h in TRADEOFF_THRESHOLDS:
        other = settings.model_copy(update={"cusum_threshold": h})
        rows, _ = false_alarm_rows(TRADEOFF_TRAFFIC, series, windows, warm, seed, other, progress)
        trade_fa += [f"| {h:g} {row}" for row in rows]
        rows = detection_rows(
            [(t, 3.0) for t in TRADEOFF_TRAFFIC], reps, warm, seed, other, progress
        )
        trade_det += [f"| {h:g} {row}" for row in rows]
    s = settings
    lines = [
        f"Settings: the defaults — window {s.window_seconds} s, baseline half-life "
        f"{s.baseline_half_life:g} windows or {s.baseline_events:g} expected findings (trend "
        f"{'on' if s.trend else 'off'}), decisions from "
        f"{s.min_baseline_windows} windows, guard {s.guard_windows} windows, dispersion half-life "
        f"{s.dispersion_half_life:g} windows, window test at alpha {s.alpha:g}, CUSUM for ×"
        f"{s.cusum_ratio:g} at {s.cusum_threshold:g} nats, floor {s.floor}, fire after "
        f"{s.fire_windows}, resolve after {s.resolve_windows}. Seed {seed}; {series} series × "
        f"{windows:,} windows per false-alarm row after a warm-up of {warm:,} windows; {reps} "
        f"spikes per detection row. Simulated in {time.perf_counter() - started:.0f} s.",
        "",
        "**False alarms per 10,000 baseline windows** (per series, alone; exact 95 % interval). "
        f"Highest: **{worst:.2f}**.",
        "",
        *FALSE_ALARM_HEAD,
        *fa,
        "",
        "**Detection of a sustained spike** (share of spikes fired within 1, 2, 5 windows of "
        f"their start; delays in windows, > {HORIZON}: not within {HORIZON}; *oracle*: the "
        "CUSUM that knows the base rate, at one false alarm per 10,000 windows; *ratio*: "
        "median delay over the oracle's):",
        "",
        *DETECTION_HEAD,
        *det,
        "",
        "**Trade-off of the CUSUM threshold** (the same rows with only `cusum_threshold` "
        "changed; the false-alarm rows and the detection rows of each threshold):",
        "",
        "| threshold " + FALSE_ALARM_HEAD[0],
        "|---:" + FALSE_ALARM_HEAD[1],
        *trade_fa,
        "",
        "| threshold " + DETECTION_HEAD[0],
        "|---:" + DETECTION_HEAD[1],
        *trade_det,
    ]
    return "\n".join(lines) + "\n"


def write_block(path: Path, block: str) -> None:
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{path}: no {BEGIN} ... {END} block")
    path.write_text(pattern.sub(lambda _: f"{BEGIN}\n{block}{END}", text), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seed", type=int, default=20240501)
    parser.add_argument("--series", type=int, default=200, help="quiet series per row")
    parser.add_argument("--windows", type=int, default=5_000, help="windows per quiet series")
    parser.add_argument("--warm", type=int, default=600, help="warm-up windows")
    parser.add_argument("--reps", type=int, default=400, help="spikes per detection row")
    parser.add_argument("--quick", action="store_true", help="a tenth of the work, for a look")
    parser.add_argument("--write", type=Path, help="replace the generated block of this file")
    args = parser.parse_args(argv)
    if args.quick:
        args.windows, args.reps = args.windows // 10, args.reps // 4
    block = render(args.series, args.windows, args.reps, args.warm, args.seed, SETTINGS)
    print(block)
    if args.write:
        write_block(args.write, block)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
