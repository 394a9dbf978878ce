"""Figures and report of the streaming benchmark: rates, the RSS curve, the issue's targets with
pass/miss, and the markdown table. Pure functions of the result dict (tested in
``tests/unit/test_streaming_bench.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

__all__ = [
    "RSS_MARKS",
    "TARGETS",
    "Target",
    "evaluate",
    "marginal_rate",
    "markdown",
    "rates",
    "ratio",
    "screened_total",
    "steady_rate",
    "value_at",
    "verdict",
    "worst",
]

MIB = 1024 * 1024
RSS_MARKS = (50_000, 100_000, 200_000, 300_000)


def screened_total(metrics_text: str) -> float:
    """The sum of ``vigil_events_total`` over its labels in a Prometheus text exposition."""
    total = 0.0
    for line in metrics_text.splitlines():
        if line.startswith("vigil_events_total{") or line.startswith("vigil_events_total "):
            total += float(line.rsplit(" ", 1)[1])
    return total


def value_at(samples: Sequence[Mapping[str, Any]], events: int, key: str) -> float | None:
    """``key`` of the first sample whose ``events`` (committed input offsets) reached ``events``;
    ``None`` if the run never got there."""
    for s in samples:
        if s["events"] >= events and s.get(key) is not None:
            return float(s[key])
    return None


def steady_rate(
    samples: Sequence[Mapping[str, Any]], total: int, lo: float = 0.1, hi: float = 0.9
) -> float | None:
    """Events per second between the samples where the committed input first reached ``lo`` and
    ``hi`` of ``total`` (startup and the final drain left out)."""
    a = next((s for s in samples if s["events"] >= lo * total), None)
    b = next((s for s in samples if s["events"] >= hi * total), None)
    if a is None or b is None or b["t"] <= a["t"]:
        return None
    return (b["events"] - a["events"]) / (b["t"] - a["t"])


def marginal_rate(n1: int, cpu1: float, n2: int, cpu2: float) -> float | None:
    """Events per CPU-second of the extra ``n2 - n1`` events (startup cancels out)."""
    if n2 <= n1 or cpu2 <= cpu1:
        return None
    return (n2 - n1) / (cpu2 - cpu1)


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def rates(events: int, wall: float, cpu: float) -> dict[str, float | None]:
    return {
        "events_per_s": events / wall if wall > 0 else None,
        "events_per_cpu_s": events / cpu if cpu > 0 else None,
        "cpu_us_per_event": cpu / events * 1e6 if events else None,
        "cpu_share": cpu / wall if wall > 0 else None,
    }


@dataclass(frozen=True)
class Target:
    key: str
    text: str
    op: str  # ">=" or "<="
    limit: float


TARGETS = (
    Target("worker_vs_bare_examples", "one worker ≥ 25 % of the bare rate, ~100 B mix", ">=", 0.25),
    Target("worker_eps_rag", "one worker ≥ 2,000 events/s, 1 KiB RAG mix", ">=", 2000),
    Target("secondary_lag", "secondary lag 0 at the end (every run)", "<=", 0),
    Target("rss_300k_over_50k", "worker RSS at 300k ≤ 1.15 × at 50k", "<=", 1.15),
    Target("rss_300k_mib", "worker RSS at 300k ≤ 400 MiB", "<=", 400),
    Target("scan_rss_40k_over_10k", "`vigil scan` RSS at 40k ≤ 1.10 × at 10k", "<=", 1.10),
    Target(
        "scan_marginal_eps", "`vigil scan` ≥ 3,000 events/CPU-s marginal, example mix", ">=", 3000
    ),
    Target("scan_1gb_rss_mib", "`vigil scan` of a 1 GB RAG file ≤ 250 MiB", "<=", 250),
    Target("two_over_one", "two workers ≥ 1.6 × one worker", ">=", 1.6),
    Target("start_to_ready_s", "start-to-ready ≤ 10 s", "<=", 10),
)


def verdict(target: Target, value: float | None) -> str:
    if value is None:
        return "not measured"
    ok = value >= target.limit if target.op == ">=" else value <= target.limit
    return "pass" if ok else "miss"


def worst(values: Sequence[float | None], op: str) -> float | None:
    """The value that decides a target measured more than once (the smallest for ``>=``)."""
    got = [v for v in values if v is not None]
    if not got:
        return None
    return min(got) if op == ">=" else max(got)


def evaluate(result: dict[str, Any]) -> list[dict[str, Any]]:
    mixes = result["mixes"]
    scan = result.get("scan", {})

    def get(mix: str, *path: str) -> Any:
        node: Any = mixes.get(mix)
        for p in path:
            node = None if node is None else node.get(p)
        return node

    values: dict[str, list[tuple[str, float | None]]] = {t.key: [] for t in TARGETS}
    if "examples" in mixes:
        values["worker_vs_bare_examples"].append(("examples", get("examples", "worker_vs_bare")))
    if "rag" in mixes:
        values["worker_eps_rag"].append(("rag", get("rag", "one_worker", "events_per_s")))
    for mix in mixes:
        for run, path in (
            ("one_worker", ("one_worker",)),
            ("scale/one_worker", ("scale", "one_worker")),
            ("scale/two_workers", ("scale", "two_workers")),
        ):
            r = get(mix, *path)
            if r is not None:
                lag = r["secondary_lag_at_end"] if r["status"] == "done" else None
                values["secondary_lag"].append((f"{mix}/{run}", lag))
        r = get(mix, "one_worker") or {}
        if (get(mix, "produce", "events") or 0) >= RSS_MARKS[-1]:  # a topic long enough
            a, b = r.get("rss_mib_at_50k"), r.get("rss_mib_at_300k")
            values["rss_300k_over_50k"].append((mix, b / a if a and b else None))
            values["rss_300k_mib"].append((mix, b))
        values["two_over_one"].append((mix, get(mix, "two_over_one")))
        values["start_to_ready_s"].append((mix, r.get("ready_s")))
    for mix, s in scan.items():
        if mix == "rag_gb":
            values["scan_1gb_rss_mib"].append(("rag", s["peak_rss_mib"]))
            continue
        values["scan_rss_40k_over_10k"].append((mix, s["rss_ratio"]))
        if mix == "examples":
            values["scan_marginal_eps"].append((mix, s["marginal_events_per_cpu_s"]))
    rows = []
    for t in TARGETS:
        got = values[t.key]
        decisive = worst([v for _, v in got], t.op)
        rows.append(
            {
                "target": t.text,
                "key": t.key,
                "limit": t.limit,
                "values": dict(got),
                "value": decisive,
                # a value missing from one run (a timeout) is a miss, not a pass of the rest
                "verdict": "miss"
                if got and any(v is None for _, v in got) and decisive is not None
                else verdict(t, decisive),
            }
        )
    return rows


def _f(x: Any, spec: str = ",.0f") -> str:
    return "—" if x is None else format(x, spec)


def _restart(res: dict[str, Any] | None) -> str:
    """A restart's start-to-ready, or that it was not ready within the run's limit."""
    if res is not None and res.get("status") == "not ready":
        return f"not ready within {_f(res.get('timeout_s'))} s"
    return f"{_f((res or {}).get('ready_s'), '.2f')} s"


def _load(pair: Sequence[Sequence[float]]) -> str:
    return f"{pair[0][0]:.1f}→{pair[1][0]:.1f}"


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [
        f"# `benchmarks/streaming.py` — {result['date']}",
        "",
        f"`{result['command']}` · git `{m['git']}` · {m['nproc']} CPUs ({m['cpu_model']}) · "
        f"broker: {result['broker']} · partitions {result['partitions']} · sample rate "
        f"{result['sample_rate']} · pinned: {result['pinning']}",
        "",
        f"Load average (1, 5, 15 min) at start {result['loadavg_start']}, at end "
        f"{result['loadavg_end']}; each row gives the 1-min load average before → after it.",
        "",
    ]
    if result.get("complete") is False:
        lines += ["**Partial result**: written after a part of the run; the rest is missing.", ""]
    for mix, r in result["mixes"].items():
        lines += [
            f"## {mix}: {r['produce']['events']:,} events, "
            f"{r['produce']['bytes'] / r['produce']['events']:,.0f} B per event",
            "",
        ]
        rows = []
        scale = r.get("scale") or {}
        k = (scale.get("produce") or {}).get("events")
        for x, name in (
            (r.get("bare_1"), "bare aiokafka + json.loads #1"),
            (r.get("faust_agent"), "Faust agent (`take_events`) + json.loads"),
            (r.get("faust_route"), "Faust batch route (`BatchConsumer`) + json.loads"),
            (r.get("one_worker"), "one `vigil worker`"),
            (r.get("bare_2"), "bare aiokafka + json.loads #2"),
            (scale.get("one_worker"), f"scale-out topic ({_f(k)} events): one worker"),
            (scale.get("two_workers"), "scale-out topic: two workers, one group"),
        ):
            if not x:
                continue
            rows.append(
                [
                    name,
                    x.get("status", "done"),
                    f"{x['events']:,}",
                    _f(x["wall_s"], ".1f"),
                    _f(x["events_per_s"]),
                    _f(x.get("steady_events_per_s")),
                    _f(x["cpu_s"], ".1f"),
                    _f(x["cpu_us_per_event"], ",.1f"),
                    _f(x["cpu_share"], ".2f"),
                    _load(x["loadavg"]),
                ]
            )
        lines.append(
            C.md_table(
                [
                    "run",
                    "status",
                    "events",
                    "wall s",
                    "events/s",
                    "steady events/s",
                    "CPU s",
                    "CPU µs/event",
                    "CPU share",
                    "load",
                ],
                rows,
            )
        )
        one = r.get("one_worker") or {}
        lines += [
            "",
            f"Worker ÷ bare (wall): **{_f(r.get('worker_vs_bare'), '.3f')}**; per CPU-second: "
            f"{_f(r.get('worker_vs_bare_cpu'), '.3f')}. Two workers ÷ one: "
            f"**{_f(r.get('two_over_one'), '.2f')}**.",
            "",
            f"Start-to-ready: **{_f(one.get('ready_s'), '.2f')} s** (web up "
            f"{_f(one.get('web_up_s'), '.2f')} s, first event screened "
            f"{_f(one.get('first_event_s'), '.2f')} s, first committed offset "
            f"{_f(one.get('first_commit_s'), '.1f')} s); after a restart with its data dir "
            f"{_restart(r.get('restart_warm'))}, with an empty data dir (changelog recovery) "
            f"{_restart(r.get('restart_cold'))}.",
            "",
            _split_md(one),
            "",
            f"Input committed to its end after {_f(one.get('input_done_s'), '.1f')} s "
            f"({_f(one.get('input_events_per_s'))} events/s), every consumed topic after "
            f"{_f(one.get('wall_s'), '.1f')} s; largest backlog seen on the secondary topics: "
            f"{one.get('peak_secondary_lag') or 'none'}.",
            "",
            f"Lag at the end: {one.get('lag_at_end')}; topics watched: "
            f"{', '.join(one.get('consumed_topics') or [])} (assigned beyond "
            f"`copartitioned_topics`: {one.get('assigned_beyond_copartitioned') or 'none'}). "
            f"Log: {one.get('log_warnings')}.",
            "",
        ]
        curve = _thin(one.get("samples") or [], 12)
        if curve:
            lines.append(
                C.md_table(
                    ["t s", "events committed", "RSS MiB", "CPU s"],
                    [
                        [f"{s['t']:.0f}", f"{s['events']:,}", f"{s['rss_mib']:.0f}", s["cpu_s"]]
                        for s in curve
                    ],
                )
            )
            lines += [
                "",
                "RSS at "
                + ", ".join(
                    f"{k // 1000}k: {_f(one.get(f'rss_mib_at_{k // 1000}k'), '.0f')} MiB"
                    for k in RSS_MARKS
                )
                + f"; peak {one.get('peak_rss_mib')} MiB.",
                "",
            ]
        lines += _py_spy_md(r.get("profile_py-spy"), one)
        lines += _cprofile_md(r.get("profile_cprofile"), one)
    scan = result.get("scan") or {}
    if scan:
        lines += ["## `vigil scan` on the same generator's files", ""]
        rows = []
        for mix, s in scan.items():
            for run in s.get("runs", [s]):
                rows.append(
                    [
                        mix,
                        f"{run['events']:,}",
                        f"{run['input_bytes'] / MIB:,.1f}",
                        _f(run["cpu_s"], ".1f"),
                        _f(run["events_per_cpu_s"]),
                        _f(run["peak_rss_mib"], ".1f"),
                        _load(run["loadavg"]),
                    ]
                )
        lines.append(
            C.md_table(
                ["mix", "events", "MiB", "CPU s", "events/CPU-s", "peak RSS MiB", "load"], rows
            )
        )
        lines.append("")
        for mix, s in scan.items():
            if "runs" in s:
                lines.append(
                    f"- {mix}: RSS 40k ÷ 10k = {s['rss_ratio']:.3f}; marginal "
                    f"{_f(s['marginal_events_per_cpu_s'])} events per CPU-second"
                )
        lines.append("")
    lines += ["## Targets (issue 9)", ""]
    lines.append(
        C.md_table(
            ["target", "measured", "decisive", "verdict"],
            [
                [
                    t["target"],
                    "; ".join(f"{k}: {_f(v, ',.3g')}" for k, v in t["values"].items()) or "—",
                    _f(t["value"], ",.3g"),
                    f"**{t['verdict']}**",
                ]
                for t in result["targets"]
            ],
        )
    )
    return "\n".join(lines) + "\n"


def _py_spy_md(prof: Mapping[str, Any] | None, one: Mapping[str, Any]) -> list[str]:
    if not prof or "contexts" not in prof:
        return [f"(py-spy: {prof.get('error')})", ""] if prof else []
    total = prof["samples"] or 1
    run = prof.get("run") or {}
    split = run.get("cpu_split") or {}
    lines = [
        f"### Where the worker's CPU goes (py-spy, {prof['events']:,} events, "
        f"{prof['samples']:,} samples at {prof['rate']} Hz, every thread)",
        "",
        f"The profiled run used {_f(prof.get('us_per_event'), ',.0f')} µs CPU per event "
        f"(the unprofiled run: {_f(one.get('cpu_us_per_event'), ',.0f')}); py-spy saw "
        f"{_f(prof.get('sampled_us_per_event'), ',.0f')} µs of running-or-ready threads per "
        f"event (run-queue wait of the process: {_f(split.get('runqueue_wait_s'), ',.1f')} s "
        f"against {_f(run.get('cpu_s'), ',.1f')} s CPU). µs/event below = share of samples × "
        "the CPU per event.",
        "",
    ]
    gper = prof.get("groups_us_per_event") or {}
    lines.append(
        C.md_table(
            ["group", "µs/event", "share"],
            [
                [g, _f(gper.get(g), ",.0f"), f"{100 * n / total:.1f} %"]
                for g, n in (prof.get("groups") or {}).items()
            ],
        )
    )
    lines += ["", "By agent or timer, and inside each:", ""]
    per = prof.get("contexts_us_per_event") or {}
    parts = prof.get("parts") or {}
    parts_per = prof.get("parts_us_per_event") or {}
    rows = []
    for ctx, n in prof["contexts"].items():
        rows.append([ctx, _f(per.get(ctx), ",.0f"), f"{100 * n / total:.1f} %"])
        inner, inner_per = parts.get(ctx), parts_per.get(ctx) or {}
        if ctx.startswith("main thread outside"):
            inner, inner_per = prof["libraries"], prof.get("libraries_us_per_event") or {}
        for name, m in (inner or {}).items():
            rows.append(
                [
                    f"&nbsp;&nbsp;&nbsp;&nbsp;{name}",
                    _f(inner_per.get(name), ",.0f"),
                    f"{100 * m / total:.1f} %",
                ]
            )
    lines.append(C.md_table(["where", "µs/event", "share of samples"], rows))
    leaves = ", ".join(f"`{k}` {100 * v / total:.1f} %" for k, v in prof["top_leaves"].items())
    return [*lines, "", f"Top frames by own samples: {leaves}.", ""]


def _cprofile_md(prof: Mapping[str, Any] | None, one: Mapping[str, Any]) -> list[str]:
    if not prof or not prof.get("points"):
        return [f"(cProfile: {prof.get('error')})", ""] if prof else []
    rows = [
        [
            "&nbsp;&nbsp;" * p["depth"] + p["what"],
            f"{p['calls']:,}",
            _f(p["us_per_event"], ",.0f"),
            _f(None if p["share"] is None else 100 * p["share"], ".1f") + " %",
        ]
        for p in prof["points"]
    ]
    rows.append(
        [
            "rest (Faust, aiokafka, mode, timers, web)",
            "",
            _f(prof["other_us_per_event"], ",.0f"),
            _f(100 * prof["other_s"] / (prof["main_thread_cpu_s"] or 1), ".1f") + " %",
        ]
    )
    return [
        f"### Call counts and main-thread CPU (cProfile, {prof['events']:,} events)",
        "",
        f"{_f(prof['us_per_event_total'], ',.0f')} µs per event of main-thread CPU under the "
        f"profiler (its overhead included; the unprofiled run: "
        f"{_f(one.get('cpu_us_per_event'), ',.0f')} µs per event, all threads).",
        "",
        C.md_table(["where", "calls", "µs/event", "share of main thread"], rows),
        "",
    ]


def _split_md(run: Mapping[str, Any]) -> str:
    """One sentence on :func:`_procs.thread_split` of a run, per event."""
    sp, n = run.get("cpu_split"), run.get("events")
    if not sp or not n:
        return "CPU split: —."
    us = {k: v / n * 1e6 for k, v in sp.items()}
    return (
        f"CPU per event by thread: main {us['main_s']:,.0f} µs, others (Faust's consumer "
        f"thread) {us['threads_s']:,.0f} µs; user {us['user_s']:,.0f} µs, system "
        f"{us['sys_s']:,.0f} µs. Run-queue wait (ready, CPU busy elsewhere): "
        f"{sp['runqueue_wait_s']:,.1f} s against {sp['main_s'] + sp['threads_s']:,.1f} s CPU."
    )


def _thin(samples: Sequence[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    if len(samples) <= n:
        return list(samples)
    step = (len(samples) - 1) / (n - 1)
    return [samples[round(i * step)] for i in range(n)]
