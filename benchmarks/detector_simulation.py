"""False alarms and detection delay of the in-process spike detector (``services.alerting``).

Simulates assistant traffic window by window and feeds it to the real :class:`Detector`, through
its public API. In every window each series gets ``n ~ Poisson(volume)`` assistant messages, of
which ``k ~ Binomial(n, rate)`` carry a leak finding (so ``k`` alone is ``Poisson(volume·rate)``).
The Poisson test sees only ``k``; the binomial test sees ``k`` and ``n``.

- **False alarms**: quiet series (base rate 1%) for ``--windows`` windows after a full baseline;
  every ``firing`` event is a false alarm. Reported per 10,000 series-windows, with the exact 95%
  upper bound. A series alone in its family (one detector, many independent series, correction
  ``none`` — the same as one series per detector) is the worst case: Benjamini–Hochberg over a
  family of quiet series only lowers the rate, which the "family of 12" rows show.
- **Detection delay**: after a full baseline the rate of one series jumps to 2×, 3× or 5×; the
  delay is the number of spike windows up to and including the one that fires (1 = the first
  spike window). Missed = not fired within 10 windows.
- **Traffic swing**: the volume follows a daily cycle of ±50% (1,440 windows a day), which a
  Poisson test reads as a change of rate and a binomial test does not.

Deterministic for a given ``--seed``. Prints markdown; with ``--write FILE`` also replaces the
block of ``FILE`` between the ``simulation:begin``/``simulation:end`` markers::

    .venv/bin/python benchmarks/detector_simulation.py --write docs/alerting.md
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from schemas.alerts import DetectorSettings
from services.alerting import Detector, SeriesKey

BEGIN = "<!-- simulation:begin -->"
END = "<!-- simulation:end -->"
RATE = 0.01
VOLUMES = (50, 1000)
MULTIPLIERS = (2, 3, 5)
HORIZON = 10
_SKIPPED = -1
DAY_WINDOWS = 1440
T0 = datetime(2024, 1, 1, tzinfo=UTC)
SETTINGS = DetectorSettings()


@dataclass(frozen=True)
class Case:
    test: str  # poisson | binomial
    volume: int
    family: int = 1  # series per detector (multiple-testing family); 1 = correction "none"
    swing: float = 0.0  # relative amplitude of the daily traffic cycle
    burst: float = 0.0  # probability that a window carries 3× the traffic (same leak rate)
    settings: DetectorSettings = SETTINGS
    name: str = ""  # what differs from the defaults, for the trade-off table

    def label(self) -> str:
        if self.family == 1:
            fam = "alone"
        else:
            fam = f"family of {self.family} ({self.settings.correction})"
        if self.swing:
            fam += f", daily traffic cycle ±{self.swing:.0%}"
        if self.burst:
            fam += f", 3× traffic bursts in {self.burst:.0%} of windows"
        name = f"{self.name} | " if self.name else ""
        return f"{name}{self.test} | {self.volume:,} | {fam}"


def _detectors(case: Case, series: int) -> list[tuple[Detector, list[SeriesKey]]]:
    settings = case.settings
    if case.family == 1:
        settings = settings.model_copy(update={"correction": "none"})
        groups = [series]
    else:
        groups = [case.family] * max(1, series // case.family)
    out = []
    for g, size in enumerate(groups):
        keys = [
            SeriesKey(category="pii", tenant=f"g{g}s{i}", direction="leak") for i in range(size)
        ]
        out.append((Detector(settings), keys))
    return out


def _run(
    case: Case, series: int, windows: int, rng: np.random.Generator, spike: float = 1.0
) -> tuple[int, int, list[int | None]]:
    """(false alarms in quiet series, quiet series-windows decided, delays of spiking series).

    With ``spike`` > 1, the first series of every detector spikes from the first window after
    the baseline; the run stops after ``HORIZON`` spike windows.
    """
    detectors = _detectors(case, series)
    warm = case.settings.baseline_windows
    total = warm + (HORIZON if spike > 1 else windows)
    false_alarms, decided = 0, 0
    delays: list[int | None] = [None] * len(detectors)
    for t in range(total):
        ws = T0 + timedelta(seconds=case.settings.window_seconds * t)
        volume = case.volume * (1 + case.swing * math.sin(2 * math.pi * t / DAY_WINDOWS))
        for d_index, (detector, keys) in enumerate(detectors):
            if spike > 1 and t == warm:
                _skip_if_firing(detector, keys[0], delays, d_index)
            factor: float | np.ndarray = 1.0
            if case.burst:
                factor = np.where(rng.uniform(size=len(keys)) < case.burst, 3.0, 1.0)
            n = rng.poisson(volume * factor, len(keys))
            rates = np.full(len(keys), RATE)
            if spike > 1 and t >= warm:
                rates[0] = RATE * spike
            k = rng.binomial(n, rates)
            for key, count, messages in zip(keys, k.tolist(), n.tolist(), strict=True):
                detector.observe(key, ws, count, messages if case.test == "binomial" else None)
            for alert in detector.close_window(ws):
                if alert.state != "firing":
                    continue
                spiking = spike > 1 and alert.tenant == keys[0].tenant
                if spiking and delays[d_index] is None:
                    delays[d_index] = t - warm + 1
                elif not spiking and t >= warm:
                    false_alarms += 1
            if t >= warm:
                decided += len(keys) - (1 if spike > 1 else 0)
    return false_alarms, decided, delays


def _skip_if_firing(
    detector: Detector, key: SeriesKey, delays: list[int | None], index: int
) -> None:
    """A series still firing from a false alarm in its warm-up cannot show a delay: drop it."""
    state = detector.series(key)
    if state is not None and state.status == "firing":
        delays[index] = _SKIPPED


def _upper(x: int, n: int) -> float:
    """Exact 95% upper bound of a Poisson rate, per 10,000."""
    return float(stats.chi2.ppf(0.975, 2 * (x + 1)) / 2 / n * 1e4)


def false_alarm_rows(
    cases: list[Case], series: int, windows: int, seed: int, salt: int = 1
) -> list[str]:
    rows = []
    for i, case in enumerate(cases):
        rng = np.random.default_rng([seed, salt, i])
        alarms, decided, _ = _run(case, series, windows, rng)
        rows.append(
            f"| {case.label()} | {decided:,} | {alarms} | "
            f"{alarms / decided * 1e4:.2f} | {_upper(alarms, decided):.2f} |"
        )
    return rows


def delay_rows(
    cases: list[Case], reps: int, seed: int, named: bool = False, salt: int = 2
) -> list[str]:
    head = "| settings " if named else ""
    rows = [
        f"{head}| test | msgs/window | family | spike | caught in 1 | within 2 | within 5 "
        "| median delay | missed (10) |",
        f"{'|---' if named else ''}|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for i, case in enumerate(cases):
        for j, mult in enumerate(MULTIPLIERS):
            rng = np.random.default_rng([seed, salt + 10, i, j])
            series = reps if case.family == 1 else reps * case.family
            if case.family == 1:
                # One detector of independent series, all spiking: the same as `reps` runs.
                delays = _spike_alone(case, reps, rng, mult)
            else:
                _, _, delays = _run(case, series, 0, rng, spike=mult)
            delays = [d for d in delays if d != _SKIPPED]
            got = [d for d in delays if d is not None]
            within = [sum(1 for d in got if d <= h) / len(delays) for h in (1, 2, 5)]
            median = f"{np.median([d if d is not None else HORIZON + 1 for d in delays]):g}"
            if len(got) * 2 <= len(delays):
                median = f"> {HORIZON}"
            rows.append(
                f"| {case.label()} | {mult}× | {within[0]:.0%} | {within[1]:.0%} | "
                f"{within[2]:.0%} | {median} | {1 - len(got) / len(delays):.0%} |"
            )
    return rows


def _spike_alone(case: Case, reps: int, rng: np.random.Generator, mult: float) -> list[int | None]:
    settings = case.settings.model_copy(update={"correction": "none"})
    detector = Detector(settings)
    keys = [SeriesKey(category="pii", tenant=f"s{i}", direction="leak") for i in range(reps)]
    index = {k.tenant: i for i, k in enumerate(keys)}
    warm = settings.baseline_windows
    delays: list[int | None] = [None] * reps
    for t in range(warm + HORIZON):
        if t == warm:
            for i, key in enumerate(keys):
                _skip_if_firing(detector, key, delays, i)
        ws = T0 + timedelta(seconds=settings.window_seconds * t)
        n = rng.poisson(case.volume, reps)
        k = rng.binomial(n, RATE * (mult if t >= warm else 1.0))
        for key, count, messages in zip(keys, k.tolist(), n.tolist(), strict=True):
            detector.observe(key, ws, count, messages if case.test == "binomial" else None)
        for alert in detector.close_window(ws):
            i = index[alert.tenant]
            if alert.state == "firing" and t >= warm and delays[i] is None:  # not _SKIPPED
                delays[i] = t - warm + 1
    return delays


def render(series: int, windows: int, reps: int, seed: int) -> str:
    started = time.perf_counter()
    s = SETTINGS
    base = [Case(test, volume) for volume in VOLUMES for test in ("poisson", "binomial")]
    traffic = [Case(t, 1000, swing=0.5) for t in ("poisson", "binomial")]
    traffic += [Case(t, 1000, burst=0.01) for t in ("poisson", "binomial")]
    families = [Case("binomial", volume, family=12) for volume in VOLUMES]
    sweep = [
        Case("binomial", 1000, settings=s.model_copy(update=u), name=name)
        for name, u in (
            ("alpha=1e-3", {"alpha": 1e-3}),
            ("alpha=1e-5", {"alpha": 1e-5}),
            ("alpha=1e-3, fire_windows=2", {"alpha": 1e-3, "fire_windows": 2}),
        )
    ]
    # 50 messages a minute, counted in 10-minute windows: 500 messages per window.
    sweep.append(
        Case(
            "binomial",
            500,
            settings=s.model_copy(update={"window_seconds": 600}),
            name="600 s windows",
        )
    )
    lines = [
        f"Defaults: window {s.window_seconds} s, baseline {s.baseline_windows} windows "
        f"(decisions from {s.min_baseline_windows}), alpha {s.alpha:g} with {s.correction} "
        f"correction, floor {s.floor}, fire after {s.fire_windows}, resolve after "
        f"{s.resolve_windows}, prior {s.prior_count:g}. Base leak rate {RATE:.0%} of assistant "
        f"messages; seed {seed}; {series} quiet series × {windows:,} windows per false-alarm "
        f"row, {reps} spikes per delay row.",
        "",
        "**False alarms per 10,000 baseline windows** (per series; 95% upper bound exact):",
        "",
        "| test | msgs/window | family | series-windows | false alarms | per 10,000 | 95% upper |",
        "|---|---:|---|---:|---:|---:|---:|",
        *false_alarm_rows([*base, *traffic, *families], series, windows, seed),
        "",
        "**Detection of a spike** (share of spikes fired within 1, 2, 5 windows of their start):",
        "",
        *delay_rows([*base, families[1]], reps, seed),
        "",
        "**Trade-offs** (binomial, alone; only the named settings differ from the defaults):",
        "",
        "| settings | test | msgs/window | family | series-windows | false alarms | per 10,000 "
        "| 95% upper |",
        "|---|---|---:|---|---:|---:|---:|---:|",
        *false_alarm_rows(sweep, series, windows, seed, salt=3),
        "",
        *delay_rows(sweep, reps, seed, named=True, salt=3),
    ]
    print(f"simulated in {time.perf_counter() - started:.0f} s", file=sys.stderr)
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
    parser.add_argument("--windows", type=int, default=10_000, help="windows per quiet series")
    parser.add_argument("--reps", type=int, default=1000, help="spikes per delay row")
    parser.add_argument("--quick", action="store_true", help="a tenth of the work, for a look")
    parser.add_argument("--write", type=Path, help="replace the generated block of this file")
    args = parser.parse_args(argv)
    if args.quick:
        args.windows, args.reps = args.windows // 10, args.reps // 5
    block = render(args.series, args.windows, args.reps, args.seed)
    print(block)
    if args.write:
        write_block(args.write, block)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
