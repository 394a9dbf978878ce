"""Throughput and memory of the screening stage and of ``vigil scan``, against the issue's targets.

(a) in-process, one core, 1 KiB messages, every rule loaded: the engine alone, the screening
    stage (``Screener``: engine + findings + conversation memory), ``Pipeline.screen`` (+ metrics)
    and ``Pipeline.decode`` + ``Pipeline.screen`` (+ JSON decoding and validation);
(b) cost against message size, 256 B to 64 KiB (µs per event and per KiB; a linear fit);
(c) ``vigil scan`` end to end in a subprocess on a generated file, with peak RSS;
(d) with ``--full``: ``vigil scan`` of a ~1 GB file (streaming: peak RSS must stay ≤ 200 MiB).

    python benchmarks/throughput.py [--rules PATH] [--quick] [--full] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

KIB = 1024
MIB = 1024 * KIB
SIZES = [256, KIB, 4 * KIB, 16 * KIB, 64 * KIB]
TARGET_SCREEN_EPS = 20_000
TARGET_SCAN_EPS = 10_000
TARGET_PEAK_MIB = 200


def _pipeline(rules: C.RulesChoice) -> Any:
    from services.pipeline import Pipeline
    from services.settings import Settings

    return Pipeline(Settings(rules_dir=rules.path, prompts_file=C.DEFAULT_PROMPTS))


def _raw_lines(n: int, size: int, seed: int = 7, mix: str = "default") -> list[bytes]:
    return [
        json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        for e in C.make_events(n, size, seed=seed, mix=mix)
    ]


_NUMBER = re.compile(r"\d+")


# --------------------------------------------------------------------------- (a) and (b)


def _stage_runs(pipe: Any, raws: list[bytes]) -> dict[str, Any]:
    """Closures over one batch, each screening every event once (memory threaded per
    conversation, as ``vigil scan`` does)."""
    from schemas.events import ChatEvent

    events = [pipe.decode(r, "bench") for r in raws]
    bad = [e for e in events if not isinstance(e, ChatEvent)]
    if bad:
        raise SystemExit(f"generated events were rejected: {bad[0]}")
    engine, screener = pipe.engine, pipe.screener

    def run_engine() -> int:
        return sum(len(engine.scan(e.content, e.role, e.base_language)) for e in events)

    def run_screener() -> int:
        mem: dict[str, Any] = {}
        n = 0
        for e in events:
            out = screener(e, mem.get(e.conversation_id))
            if out.memory is not None:
                mem[e.conversation_id] = out.memory
            n += len(out.findings)
        return n

    def run_pipeline() -> int:
        mem: dict[str, Any] = {}
        n = 0
        for e in events:
            out = pipe.screen(e, mem.get(e.conversation_id))
            if out.memory is not None:
                mem[e.conversation_id] = out.memory
            n += len(out.findings)
        return n

    def run_decode_pipeline() -> int:
        mem: dict[str, Any] = {}
        n = 0
        for r in raws:
            e = pipe.decode(r, "bench")
            out = pipe.screen(e, mem.get(e.conversation_id))
            if out.memory is not None:
                mem[e.conversation_id] = out.memory
            n += len(out.findings)
        return n

    return {
        "events": events,
        "RuleEngine.scan only": run_engine,
        "screening stage (Screener)": run_screener,
        "Pipeline.screen (+ metrics)": run_pipeline,
        "Pipeline.decode + screen (+ JSON)": run_decode_pipeline,
    }


def in_process(pipe: Any, raws: list[bytes], repeat: int, mix: str) -> dict[str, Any]:
    runs = _stage_runs(pipe, raws)
    events = runs.pop("events")
    roles = {r: sum(e.role == r for e in events) for r in ("user", "assistant")}
    size = sum(len(e.content.encode("utf-8")) for e in events) / len(events)
    numbers = sum(len(_NUMBER.findall(e.content)) for e in events) / len(events)
    rows = {}
    for name, fn in runs.items():
        best, median, findings = C.best_of(fn, repeat)
        rows[name] = {
            "events": len(events),
            "best_s": best,
            "median_s": median,
            "events_per_s": len(events) / best,
            "events_per_s_median": len(events) / median,
            "us_per_event": best / len(events) * 1e6,
            "findings_per_event": findings / len(events),
        }
    # the same per role, for the screening stage: assistant turns carry the prompt-overlap check
    by_role = {}
    for role in ("user", "assistant"):
        sub = [r for r, e in zip(raws, events, strict=True) if e.role == role]
        if not sub:
            continue
        fn = _stage_runs(pipe, sub)["screening stage (Screener)"]
        best, _, _ = C.best_of(fn, repeat)
        by_role[role] = {"events": len(sub), "us_per_event": best / len(sub) * 1e6}
    return {
        "mix": mix,
        "content_bytes_mean": size,
        "digit_runs_per_event": numbers,
        "roles": roles,
        "stages": rows,
        "screener_by_role": by_role,
    }


def example_lines(pipe: Any, n: int) -> list[bytes]:
    """The bundled example log's valid events, cycled to ``n`` lines (``[]`` if absent)."""
    from schemas.events import ChatEvent

    path = C.REPO_ROOT / "examples" / "chat-events.jsonl"
    if not path.exists():
        return []
    lines = [ln.rstrip(b"\r\n") for ln in path.read_bytes().splitlines() if ln.strip()]
    good = [ln for ln in lines if isinstance(pipe.decode(ln, "examples"), ChatEvent)]
    return [good[i % len(good)] for i in range(n)] if good else []


def profile_stage(pipe: Any, n: int, top: int = 25) -> str:
    runs = _stage_runs(pipe, _raw_lines(n, KIB, seed=8))
    prof = cProfile.Profile()
    prof.enable()
    runs["Pipeline.decode + screen (+ JSON)"]()
    prof.disable()
    buf = io.StringIO()
    st = pstats.Stats(prof, stream=buf)
    st.sort_stats("cumulative").print_stats(top)
    st.sort_stats("tottime").print_stats(top)
    text = buf.getvalue()
    return re.sub(r"/[^\s:]*/site-packages/", "", text.replace(str(C.REPO_ROOT) + "/", ""))


def profile_scan(rules: C.RulesChoice, n: int, top: int = 30) -> tuple[str, float]:
    """cProfile of ``run_scan`` in this process over ``n`` generated 1 KiB events: where the
    end-to-end time goes (screening, claim checks, JSON output). Returns (text, events/s)."""
    from services.scan import run_scan
    from services.settings import Settings

    tmp = Path(tempfile.mkdtemp(prefix="vigil-bench-prof-"))
    try:
        file = tmp / "events.jsonl"
        C.write_events_file(file, n, KIB)
        settings = Settings(rules_dir=rules.path, prompts_file=C.DEFAULT_PROMPTS)
        prof = cProfile.Profile()
        t0 = time.process_time()
        prof.enable()
        run_scan(str(file), tmp / "out", settings)
        prof.disable()
        eps = n / (time.process_time() - t0)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(top)
    text = buf.getvalue()
    return re.sub(r"/[^\s:]*/site-packages/", "", text.replace(str(C.REPO_ROOT) + "/", "")), eps


def size_sweep(pipe: Any, budget_bytes: int, repeat: int) -> dict[str, Any]:
    rows = []
    for size in SIZES:
        n = max(120, min(20_000, budget_bytes // size))
        n -= n % 6  # whole conversations
        raws = _raw_lines(n, size, seed=size)
        runs = _stage_runs(pipe, raws)
        events = runs["events"]
        content_kib = sum(len(e.content.encode("utf-8")) for e in events) / len(events) / KIB
        row: dict[str, Any] = {"size": size, "events": n, "content_kib": content_kib}
        for key, name in (
            ("screener", "screening stage (Screener)"),
            ("decode_screen", "Pipeline.decode + screen (+ JSON)"),
        ):
            best, _, findings = C.best_of(runs[name], repeat)
            us = best / n * 1e6
            row[key] = {"us_per_event": us, "us_per_kib": us / content_kib}
            row["findings_per_event"] = findings / n
        rows.append(row)
    # least-squares fit  µs/event = a + b·KiB  (linear cost: a small a, a stable b, R² ≈ 1)
    fits = {}
    for key in ("screener", "decode_screen"):
        xs = [r["content_kib"] for r in rows]
        ys = [r[key]["us_per_event"] for r in rows]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
        a = my - b * mx
        ss_res = sum((y - (a + b * x)) ** 2 for x, y in zip(xs, ys, strict=True))
        ss_tot = sum((y - my) ** 2 for y in ys)
        fits[key] = {"fixed_us": a, "us_per_kib": b, "r2": 1 - ss_res / ss_tot}
    return {"rows": rows, "fit": fits}


# --------------------------------------------------------------------------- (c) and (d)


def run_vigil_scan(
    file: Path,
    out_dir: Path,
    rules: C.RulesChoice,
    pin: bool,
    *,
    cpu: int = 0,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run ``vigil scan`` in a child process (pinned to ``cpu`` when ``pin``; ``env`` added to
    its environment); wall time, CPU time and peak RSS of the child.

    Peak RSS comes from GNU ``/usr/bin/time -v`` when present, else from
    ``getrusage(RUSAGE_CHILDREN).ru_maxrss`` (the largest child so far: an upper bound)."""
    vigil = Path(sys.executable).with_name("vigil")
    cmd: list[str] = []
    if pin and shutil.which("taskset"):
        cmd += ["taskset", "-c", str(cpu)]
    gnu_time = Path("/usr/bin/time")
    if gnu_time.exists():
        cmd += [str(gnu_time), "-v"]
    cmd += [str(vigil), "scan", str(file), "--out", str(out_dir), "--no-progress"]
    cmd += ["--rules", str(rules.path)]
    # the child imports this tree's ``services`` (a patched copy of the repository included)
    env = {**os.environ, **(env or {}), "PYTHONPATH": str(C.REPO_ROOT)}
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise SystemExit(f"vigil scan failed ({res.returncode}):\n{res.stderr[-3000:]}")
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", res.stderr)
    if m:
        peak_kib, how = float(m.group(1)), "/usr/bin/time -v"
    else:
        peak_kib, how = float(ru1.ru_maxrss), "getrusage(RUSAGE_CHILDREN) (upper bound)"
    summary = json.loads((out_dir / "summary.json").read_text())
    shown = [C.rel(c) if c.startswith("/") else c for c in cmd]
    return {
        "command": " ".join(shown),
        "measured_with": how,
        "wall_s": wall,
        "cpu_s": cpu,
        "events": summary["events"],
        "dead_letters": summary["dead_letters"],
        "findings": summary["findings"],
        "events_per_s": summary["events"] / wall,
        "events_per_cpu_s": summary["events"] / cpu if cpu > 0 else None,
        "peak_rss_mib": peak_kib / 1024,
        "input_bytes": file.stat().st_size,
        "input_mib_per_s": file.stat().st_size / MIB / wall,
        "output_bytes": sum(f.stat().st_size for f in out_dir.iterdir()),
    }


def scan_end_to_end(
    rules: C.RulesChoice,
    n: int,
    size: int,
    pin: bool,
    examples: bool = False,
    min_bytes: int = 0,
) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="vigil-bench-scan-"))
    try:
        file = tmp / "events.jsonl"
        t0 = time.perf_counter()
        if examples:
            nbytes = C.write_example_file(file, n)
        else:
            # characters undercount bytes (UTF-8), so ``min_bytes`` of characters is enough
            nbytes = C.write_events_file(file, n, size, min_bytes=min_bytes)
        gen_s = time.perf_counter() - t0
        # startup (imports, pack compilation) measured on a one-line file, reported apart
        one = tmp / "one.jsonl"
        with open(file, "rb") as src:
            one.write_bytes(src.readline())
        startup = run_vigil_scan(one, tmp / "out-one", rules, pin)
        res = run_vigil_scan(file, tmp / "out", rules, pin)
        res["startup_wall_s"] = startup["wall_s"]
        res["startup_peak_rss_mib"] = startup["peak_rss_mib"]
        steady = res["wall_s"] - startup["wall_s"]
        res["events_per_s_excl_startup"] = res["events"] / steady if steady > 0 else None
        res["generate_s"] = gen_s
        res["message_bytes"] = size
        res["file_mib"] = nbytes / MIB
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------- (e) memory bound


def memory_per_value(conversations: int = 2000, values: int = 120) -> dict[str, Any]:
    """Bytes that the conversation memory state holds per remembered value (tracemalloc, the
    encoded values in the shared dataflow's bounded in-memory store, as ``vigil scan`` keeps
    them), and the worst case its bounds allow (entries × largest value)."""
    import gc
    import tracemalloc

    from services.dataflow.flow import Dataflow
    from services.dataflow.state import MemoryStore
    from services.screening.memory import ConversationMemory, value_hash
    from services.settings import Settings

    settings = Settings()
    limits = settings.memory_limits
    spec = Dataflow.memory_spec(settings)
    store = MemoryStore(spec)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for c in range(conversations):
        mem: ConversationMemory | None = None
        for t in range(3):
            given = [
                (value_hash(f"u{c}t{t}v{k}@example.com", b"k"), "pii.email")
                for k in range(values // 3)
            ]
            mem = (mem or ConversationMemory()).remember(given, 1.8e9 + t, limits, turn=t)
        assert mem is not None
        store[f"conv-{c:08d}"] = mem.model_dump_json().encode()
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    per_value = used / (conversations * min(values, limits.max_values))
    return {
        "bytes_per_value": per_value,
        "max_conversations": spec.max_entries,
        "max_values_per_conversation": limits.max_values,
        "max_value_bytes": spec.max_value_bytes,
        "worst_case_mib": spec.max_entries * spec.max_value_bytes / MIB,
    }


def write_memory_stress_file(path: Path, conversations: int, per_turn: int, turns: int) -> int:
    """User turns that each give ``per_turn`` distinct e-mail addresses: every one is a finding
    and a remembered value, the worst case for the conversation memory."""
    with open(path, "w", encoding="utf-8") as fh:
        i = 0
        for c in range(conversations):
            for t in range(turns):
                emails = " ".join(f"u{c}t{t}v{k}@ex{c % 97}.com" for k in range(per_turn))
                ev = {
                    "schema_version": 1,
                    "event_id": f"mem-{i:010d}",
                    "conversation_id": f"conv-{c:09d}",
                    "turn_index": t,
                    "timestamp": f"2026-11-02T08:{t // 60:02d}:{t % 60:02d}+00:00",
                    "role": "user",
                    "content": f"my addresses: {emails}",
                    "language": "en",
                }
                fh.write(json.dumps(ev, separators=(",", ":")) + "\n")
                i += 1
    return path.stat().st_size


def write_hostile_file(path: Path, n: int) -> int:
    """``n`` user turns of 64 KiB (the default content limit) of random digits and separators:
    the input that drives the RE2 Set's DFA into resetting its cache (engine_choice.py)."""
    import random

    rng = random.Random(13)
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            ev = {
                "schema_version": 1,
                "event_id": f"noise-{i:08d}",
                "conversation_id": f"noise-{i:08d}",
                "turn_index": 0,
                "timestamp": "2026-11-02T08:00:00+00:00",
                "role": "user",
                "content": "".join(rng.choices("0123456789 -.", k=64 * KIB)),
                "language": "en",
            }
            fh.write(json.dumps(ev, separators=(",", ":")) + "\n")
    return path.stat().st_size


def hostile_scan(rules: C.RulesChoice, n: int, pin: bool) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="vigil-bench-hostile-"))
    try:
        file = tmp / "events.jsonl"
        nbytes = write_hostile_file(file, n)
        res = run_vigil_scan(file, tmp / "out", rules, pin)
        res["file_mib"] = nbytes / MIB
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def memory_stress(rules: C.RulesChoice, conversations: int, pin: bool) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="vigil-bench-mem-"))
    try:
        file = tmp / "events.jsonl"
        nbytes = write_memory_stress_file(file, conversations, per_turn=100, turns=2)
        res = run_vigil_scan(file, tmp / "out", rules, pin)
        res["conversations"] = conversations
        res["values_per_conversation"] = 200
        res["file_mib"] = nbytes / MIB
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------- main


def _fmt(x: float | None, spec: str = ",.0f") -> str:
    return "—" if x is None else format(x, spec)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rules", help="pack folder or file (default: the Settings default)")
    ap.add_argument("--quick", action="store_true", help="smaller batches and scan file")
    ap.add_argument("--full", action="store_true", help="also scan a ~1 GB file (minutes)")
    ap.add_argument(
        "--only",
        choices=["gb", "memory", "examples", "hostile"],
        help="only the ~1 GB scan (d), the memory section (e) with its stress scan, the scan of "
        "the example log cycled (c2), or the scan of 64 KiB digit-noise messages (f)",
    )
    ap.add_argument("--gb", type=float, default=1.0, help="size of the big file in GB (1e9 B)")
    ap.add_argument("--scan-events", type=int, help="events in the (c) file (default 200000)")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of decode+screen")
    ap.add_argument(
        "--memory-stress",
        type=int,
        metavar="CONVERSATIONS",
        help="also scan a file of CONVERSATIONS × 200 distinct e-mails (worst case for the "
        "conversation memory; --full uses 10000)",
    )
    ap.add_argument("--no-pin", action="store_true", help="do not pin to CPU 0")
    args = ap.parse_args(argv)
    pin = not args.no_pin
    pinned = C.pin_to_one_core(0) if pin else False
    rules = C.resolve_rules(args.rules)
    result: dict[str, Any] = {"pinned_one_core": pinned}
    print(f"# Throughput — rules from {rules.source}: {rules.files}; pinned: {pinned}\n")

    if args.only is None:
        pipe = _pipeline(rules)
        n_rules = len(pipe.engine.rules)
        result["rules_loaded"] = n_rules
        repeat = 3
        n = 1000 if args.quick else 5000

        print(f"## (a) In-process, one core, 1 KiB messages, {n_rules} rules\n")
        result["in_process"] = {}
        batches = {mix: _raw_lines(n, KIB, mix=mix) for mix in C.MIXES}
        ex = example_lines(pipe, n)
        if ex:
            batches["examples/chat-events.jsonl"] = ex
        rows = []
        for mix, raws in batches.items():
            a = in_process(pipe, raws, repeat, mix)
            result["in_process"][mix] = a
            for name, r in a["stages"].items():
                rows.append(
                    [
                        f"{mix} ({a['content_bytes_mean']:.0f} B, "
                        f"{a['digit_runs_per_event']:.0f} numbers/msg)",
                        name,
                        _fmt(r["events_per_s"]),
                        _fmt(r["events_per_s_median"]),
                        f"{r['us_per_event']:.1f}",
                        f"{r['findings_per_event']:.2f}",
                    ]
                )
        heads = ["mix", "path", "events/s (best)", "events/s (median)", "µs/event", "findings/ev"]
        print(C.md_table(heads, rows))
        print(
            f"\ntarget ≥ {TARGET_SCREEN_EPS:,} events/s = ≤ {1e6 / TARGET_SCREEN_EPS:.0f} µs/event"
        )
        for mix, a in result["in_process"].items():
            by = a["screener_by_role"]
            per = ", ".join(f"{r} {v['us_per_event']:.1f} µs/event" for r, v in by.items())
            print(f"screening stage by role ({mix}): {per}")
        print()

        print("## (b) Cost vs message size (screening stage; decode + screen)\n")
        b = size_sweep(pipe, (1 if args.quick else 4) * MIB, repeat)
        result["size_sweep"] = b
        rows = []
        for r in b["rows"]:
            label = f"{r['size']} B" if r["size"] < KIB else f"{r['size'] // KIB} KiB"
            rows.append(
                [
                    label,
                    r["events"],
                    f"{r['findings_per_event']:.1f}",
                    f"{r['screener']['us_per_event']:,.1f}",
                    f"{r['screener']['us_per_kib']:.1f}",
                    f"{r['decode_screen']['us_per_event']:,.1f}",
                    f"{r['decode_screen']['us_per_kib']:.1f}",
                ]
            )
        heads = ["size", "events", "findings/ev", "stage µs/ev", "stage µs/KiB"]
        heads += ["decode+stage µs/ev", "decode+stage µs/KiB"]
        print(C.md_table(heads, rows))
        for key in ("screener", "decode_screen"):
            per_kib = [r[key]["us_per_kib"] for r in b["rows"] if r["size"] >= KIB]
            b["fit"][key]["us_per_kib_max_over_min_1k_64k"] = max(per_kib) / min(per_kib)
        for key, fit in b["fit"].items():
            print(
                f"\n{key}: µs/KiB from 1 KiB to 64 KiB varies by ×"
                f"{fit['us_per_kib_max_over_min_1k_64k']:.2f} (max/min)",
                end="",
            )
            print(
                f"\nfit {key}: µs/event = {fit['fixed_us']:.1f} + {fit['us_per_kib']:.1f}·KiB "
                f"(R² = {fit['r2']:.4f})"
            )
        print()

        if args.profile:
            text = profile_stage(pipe, 3000)
            result["profile"] = text
            print("## Profile of decode + screen (cProfile, 3000 events of 1 KiB)\n")
            print("```\n" + text.strip() + "\n```\n")
            text, eps = profile_scan(rules, 5000)
            result["profile_scan"] = text
            print("## Profile of `run_scan` in process (cProfile, 5000 events of 1 KiB)\n")
            print(f"({eps:,.0f} events per CPU-second under the profiler)\n")
            print("```\n" + text.strip() + "\n```\n")

        n_scan = args.scan_events or (10_000 if args.quick else 200_000)
        print(f"## (c) `vigil scan` end to end, {n_scan:,} events of 1 KiB\n")
        c = scan_end_to_end(rules, n_scan, KIB, pin)
        result["scan"] = c
        _print_scan(c)

    if args.only in (None, "examples") and (C.REPO_ROOT / "examples").is_dir():
        n_ex = 10_000 if args.quick else 100_000
        print(f"## (c2) `vigil scan` of the example log cycled to {n_ex:,} events\n")
        c2 = scan_end_to_end(rules, n_ex, 0, pin, examples=True)
        result["scan_examples"] = c2
        _print_scan(c2)

    if (args.full and args.only is None) or args.only == "gb":
        print(f"## (d) `vigil scan` of a {args.gb:g} GB file (≥ {args.gb * 1e9:,.0f} bytes)\n")
        d = scan_end_to_end(rules, 0, KIB, pin, min_bytes=int(args.gb * 1e9))
        result["scan_1gb"] = d
        _print_scan(d)

    if args.only in (None, "memory"):
        print("## (e) Conversation memory: bytes per remembered value, worst case of the bounds\n")
        e = memory_per_value()
        result["memory_bound"] = e
        print(
            C.md_table(
                ["bytes/value", "max conversations", "max values each", "largest value", "worst"],
                [
                    [
                        f"{e['bytes_per_value']:.0f}",
                        f"{e['max_conversations']:,}",
                        e["max_values_per_conversation"],
                        f"{e['max_value_bytes']:,} B",
                        f"{e['worst_case_mib']:,.0f} MiB",
                    ]
                ],
            )
        )
        print()
        stress = args.memory_stress or (10_000 if args.full or args.only == "memory" else 0)
        if stress:
            print(f"### `vigil scan` of {stress:,} conversations × 200 distinct e-mails\n")
            m = memory_stress(rules, stress, pin)
            result["memory_stress"] = m
            rows = [
                ["input", f"{m['file_mib']:,.1f} MiB, {m['events']:,} events"],
                ["remembered values", f"{m['conversations'] * m['values_per_conversation']:,}"],
                ["wall time", f"{m['wall_s']:.1f} s"],
                ["peak RSS", f"{m['peak_rss_mib']:.1f} MiB ({m['measured_with']})"],
            ]
            print(C.md_table(["", "value"], rows))
            print(f"\ncommand: `{m['command']}`\n")

    if args.only == "hostile" or (args.full and args.only is None):
        n_h = 200
        print(f"## (f) `vigil scan` of {n_h} user turns of 64 KiB random digits and separators\n")
        h = hostile_scan(rules, n_h, pin)
        result["scan_hostile"] = h
        rows = [
            ["input", f"{h['file_mib']:,.1f} MiB, {h['events']:,} events"],
            [
                "CPU time",
                f"{h['cpu_s']:.1f} s ({h['cpu_s'] / max(1, h['events']) * 1e3:.1f} ms/event)",
            ],
            ["events per CPU-second", _fmt(h["events_per_cpu_s"], ",.1f")],
            ["findings", f"{h['findings']:,}"],
            ["peak RSS", f"{h['peak_rss_mib']:.1f} MiB ({h['measured_with']})"],
        ]
        print(C.md_table(["", "value"], rows))
        print(f"\ncommand: `{h['command']}`\n")

    name = "throughput" + ("_quick" if args.quick else "") + (f"_{args.only}" if args.only else "")
    path = C.save_result(name, result, rules)
    print(f"raw results: {path.relative_to(C.REPO_ROOT)}")
    return result


def _print_scan(c: dict[str, Any]) -> None:
    rows = [
        ["input", f"{c['file_mib']:,.1f} MiB, {c['events']:,} events, {c['dead_letters']} dead"],
        ["wall time", f"{c['wall_s']:.1f} s (of which startup {c['startup_wall_s']:.2f} s)"],
        ["CPU time (user + sys)", f"{c['cpu_s']:.1f} s"],
        ["events/s end to end (wall)", _fmt(c["events_per_s"])],
        ["events/s per CPU-second", _fmt(c["events_per_cpu_s"])],
        ["events/s excluding startup (wall)", _fmt(c["events_per_s_excl_startup"])],
        ["input MiB/s (wall)", f"{c['input_mib_per_s']:.2f}"],
        ["findings", f"{c['findings']:,} ({c['output_bytes'] / MIB:,.0f} MiB of output)"],
        ["peak RSS", f"{_fmt(c['peak_rss_mib'], '.1f')} MiB ({c['measured_with']})"],
        ["peak RSS of a 1-event scan", f"{_fmt(c['startup_peak_rss_mib'], '.1f')} MiB"],
    ]
    print(C.md_table(["", "value"], rows))
    print(f"\ncommand: `{c['command']}`\n")


if __name__ == "__main__":
    main()
