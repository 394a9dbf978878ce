"""``make bench``: the quick variants of every performance benchmark; ``--full`` for the long ones.

    python benchmarks/run.py            # engine choice (4 KiB, 64 KiB, 1 MiB) + throughput --quick
    python benchmarks/run.py --full     # every size, bigger batches, 200k-event scan, ~1 GB scan,
                                        # and streaming.py through the broker (hours)

Each benchmark prints markdown tables and writes its raw JSON to ``benchmarks/results/``. Timings
are never asserted: this is a measurement, not a test. Extra arguments after ``--`` (such as
``--rules PATH``) are passed to every benchmark.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--full", action="store_true", help="full variants, including the ~1 GB scan")
    ap.add_argument("extra", nargs="*", help="arguments for every benchmark (after --)")
    args = ap.parse_args()
    quick = [] if args.full else ["--quick"]
    plan = [
        ["engine_choice.py", *quick],
        ["throughput.py", *quick, *(["--full", "--profile"] if args.full else [])],
    ]
    if args.full:  # starts a local broker (deploy/kafka/launcher.py) unless one is given
        plan.append(["streaming.py", "--profile"])
    failed = 0
    for script, *opts in plan:
        cmd = [sys.executable, str(HERE / script), *opts, *args.extra]
        print(f"\n$ {' '.join(['python', f'benchmarks/{script}', *opts, *args.extra])}\n")
        t0 = time.perf_counter()
        rc = subprocess.call(cmd)
        print(f"\n({script}: exit {rc}, {time.perf_counter() - t0:.0f} s)")
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
