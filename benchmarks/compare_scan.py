"""``vigil scan`` of one file by two source trees, side by side: CPU time and peak RSS.

For a change in the per-event path (the dataflow, the screening stage), run from the repo root::

    git archive main | tar -x -C /tmp/base
    python benchmarks/compare_scan.py --base /tmp/base --events 20000 --rounds 3

The file is the example log cycled to ``--events`` events with unique ids over several weeks
(``tests/support/example_cycle.py``, the scan-parity file). Each tree runs ``python -m
services.cli scan`` from its own folder (``PYTHONPATH`` set to it) under ``taskset -c 1`` and
GNU ``/usr/bin/time -v``, the two trees alternating round by round so a busy neighbour hurts
both; the best CPU time (user + system) of the rounds is reported. Both trees use this
interpreter and its installed packages. ``--memory`` also times the parse of a conversation
memory with 10 remembered values in each tree (``timeit``, best of 5 × 50,000, pinned).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.example_cycle import write_cycled_example  # noqa: E402


def run(tree: Path, source: Path, out: Path) -> tuple[float, float]:
    """(CPU seconds, peak RSS MiB) of one scan by ``tree``."""
    cmd = [
        "taskset", "-c", "1", "/usr/bin/time", "-v",
        sys.executable, "-m", "services.cli", "scan", str(source), "--out", str(out),
        "--no-progress",
    ]  # fmt: skip
    res = subprocess.run(
        cmd, cwd=tree, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if res.returncode not in (0, 1):
        raise SystemExit(f"{tree}: scan failed ({res.returncode}):\n{res.stderr[-2000:]}")

    def field(name: str) -> float:
        found = re.search(rf"{name}: ([0-9.]+)", res.stderr)
        assert found, name
        return float(found.group(1))

    cpu = field(r"User time \(seconds\)") + field(r"System time \(seconds\)")
    return cpu, field(r"Maximum resident set size \(kbytes\)") / 1024


#: Run in each tree: the parse time of a memory with 10 values, in µs (either memory format).
_MEMORY_PARSE = """
import json, timeit
from services.screening.memory import ConversationMemory, MemoryLimits
if hasattr(ConversationMemory, "load"):
    values = [(f"{i:032x}", "pii.email") for i in range(10)]
    raw = ConversationMemory().remember(values, 1.8e9, MemoryLimits(), 3).model_dump_json().encode()
    parse = lambda: ConversationMemory.load(raw)
else:
    raw = json.dumps({"seen": {f"{i:032x}": 1.8e9 for i in range(10)}}).encode()
    parse = lambda: ConversationMemory.model_validate_json(raw)
print(min(timeit.repeat(parse, number=50_000, repeat=5)) / 50_000 * 1e6)
"""


def memory_parse_us(tree: Path) -> float:
    res = subprocess.run(
        ["taskset", "-c", "1", sys.executable, "-c", _MEMORY_PARSE],
        cwd=tree, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return round(float(res.stdout.strip()), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--base", type=Path, required=True, help="the tree to compare against")
    ap.add_argument("--head", type=Path, default=ROOT, help="the tree measured (default: this)")
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--memory", action="store_true", help="also time a memory parse per tree")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="vigil-compare-") as tmp:
        work = Path(tmp)
        source = write_cycled_example(
            work / "cycled.jsonl", args.events, shift=timedelta(days=2), invalid_every=997
        )
        best: dict[str, tuple[float, float]] = {}
        for _ in range(args.rounds):
            for name, tree in (("base", args.base), ("head", args.head)):
                cpu, rss = run(tree.resolve(), source, work / f"out-{name}")
                old = best.get(name)
                best[name] = (min(cpu, old[0]), max(rss, old[1])) if old else (cpu, rss)
        result = {
            name: {
                "cpu_seconds": round(cpu, 2),
                "events_per_cpu_second": round(args.events / cpu),
                "peak_rss_mib": round(rss, 1),
            }
            for name, (cpu, rss) in best.items()
        }
        result["head_cpu_over_base"] = round(best["head"][0] / best["base"][0], 3)  # type: ignore[assignment]
        if args.memory:
            for name, tree in (("base", args.base), ("head", args.head)):
                result[name]["memory_parse_us"] = memory_parse_us(tree.resolve())
        print(json.dumps({"events": args.events, "rounds": args.rounds, **result}, indent=2))


if __name__ == "__main__":
    main()
