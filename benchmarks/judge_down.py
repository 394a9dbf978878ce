"""Screening throughput with the claim judge absent, down, or healthy (issue 3 acceptance).

Measured side by side in one process, so the ratios mean more than the absolute figures on a
shared machine:

- the screening stage alone (decode + rules + memory), which never calls the judge, in the three
  judge configurations;
- ``vigil scan`` end to end (screening + sampled claim checks, judge asked inline for the sampled
  answers) in the three configurations. With the judge down the circuit breaker opens after a
  few failed calls and later checks say ``unverified`` at once.

Run: ``.venv/bin/python benchmarks/judge_down.py [--copies 40] [--write]``.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from services.pipeline import Pipeline  # noqa: E402
from services.scan import run_scan  # noqa: E402
from services.screening import MemoryStore  # noqa: E402
from services.settings import Settings  # noqa: E402
from tests.support.judge_server import JudgeServer  # noqa: E402

LOG = REPO_ROOT / "examples" / "chat-events.jsonl"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _events(copies: int, path: Path) -> int:
    lines = LOG.read_text(encoding="utf-8").splitlines()
    n = 0
    with path.open("w", encoding="utf-8") as out:
        for c in range(copies):
            for line in lines:
                ev = json.loads(line)
                ev["event_id"] = f"{ev['event_id']}-c{c}"
                ev["conversation_id"] = f"{ev['conversation_id']}-c{c}"
                out.write(json.dumps(ev, ensure_ascii=False) + "\n")
                n += 1
    return n


def _screen_only(settings: Settings, raws: list[bytes]) -> float:
    pipe = Pipeline(settings)
    store = MemoryStore(settings.memory_limits)
    t0 = time.perf_counter()
    for i, raw in enumerate(raws):
        ev = pipe.decode(raw, f"bench:{i}")
        out = pipe.screen(ev, store.get(ev.conversation_id))  # type: ignore[union-attr,arg-type]
        if out.memory is not None:
            store.put(ev.conversation_id, out.memory)  # type: ignore[union-attr]
    return len(raws) / (time.perf_counter() - t0)


def _scan(settings: Settings, path: Path, n: int) -> tuple[float, dict[str, int]]:
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        summary = run_scan(str(path), Path(out), settings)
        rate = n / (time.perf_counter() - t0)
        return rate, {"checks": summary.checks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=40, help="copies of the example log")
    parser.add_argument(
        "--write", action="store_true", help="save benchmarks/results/judge_down.json"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, JudgeServer() as healthy:
        path = Path(tmp) / "events.jsonl"
        n = _events(args.copies, path)
        raws = path.read_bytes().splitlines()
        configs = {
            "no judge": Settings(sample_rate=0.1),
            "judge down": Settings(
                sample_rate=0.1,
                judge_url=f"http://127.0.0.1:{_closed_port()}",
                judge_timeout_seconds=0.5,
            ),
            "judge healthy": Settings(sample_rate=0.1, judge_url=healthy.url),
        }
        rows = []
        for name, settings in configs.items():
            screen = max(_screen_only(settings, raws) for _ in range(2))
            scan, info = _scan(settings, path, n)
            rows.append({"judge": name, "screen_eps": screen, "scan_eps": scan, **info})
    base = rows[0]
    print(f"{n} events (example log x {args.copies}), sample rate 0.1\n")
    print("| judge | screening events/s | ratio | vigil scan events/s | ratio | checks |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['judge']} | {r['screen_eps']:,.0f} | {r['screen_eps'] / base['screen_eps']:.2f} "
            f"| {r['scan_eps']:,.0f} | {r['scan_eps'] / base['scan_eps']:.2f} | {r['checks']} |"
        )
    if args.write:
        out = REPO_ROOT / "benchmarks" / "results" / "judge_down.json"
        out.write_text(
            json.dumps(
                {
                    "command": f"python benchmarks/judge_down.py --copies {args.copies} --write",
                    "date": datetime.now(UTC).isoformat(timespec="seconds"),
                    "events": n,
                    "rows": rows,
                },
                indent=2,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
