"""CPU per checked answer: this tree's claim check beside an earlier commit's, on the same answers.

Run pinned to one core, e.g. ``taskset -c 1 .venv/bin/python benchmarks/grounding_cost.py
--baseline eded159``. Two answer sets, built from the bundled example log:

- **example log**: every assistant answer of ``examples/chat-events.jsonl`` as it is;
- **1 KiB RAG**: answers of one language joined until they reach 1 KiB, with the union of
  their retrieved passages (at most 5), as a long RAG answer.

Each side runs in its own process (the baseline from a ``git worktree`` of the given commit, with
this tree's virtual environment) through :class:`services.checking.ClaimChecker` — the entry point
``vigil scan`` and the worker share — warm (one pass first), then ``--repeat`` timed passes; the
sides alternate ``--rounds`` times and the best pass of each side is reported (CPU seconds of the
process, ``time.process_time``). Results go to ``benchmarks/results/grounding_cost.json``; the
figures and the command are in ``docs/grounding.md``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "examples" / "chat-events.jsonl"


def answer_sets() -> dict[str, list[dict[str, Any]]]:
    rows = [json.loads(line) for line in LOG.read_text(encoding="utf-8").splitlines() if line]
    answers = [r for r in rows if r["role"] == "assistant"]
    rag: list[dict[str, Any]] = []
    for language in ("en", "nl", "vi"):
        pool = [a for a in answers if a.get("language") == language and a.get("retrieval")]
        i = 0
        while i < len(pool):
            text: list[str] = []
            passages: dict[str, dict[str, Any]] = {}
            start = i
            while i < len(pool) and len(" ".join(text).encode()) < 1024:
                text.append(pool[i]["content"])
                for p in pool[i]["retrieval"]:
                    if len(passages) < 5:
                        passages.setdefault(p["doc_id"], p)
                i += 1
            if len(" ".join(text).encode()) >= 1024:
                rag.append(
                    {
                        **pool[start],
                        "event_id": f"rag-{language}-{start}",
                        "content": " ".join(text),
                        "retrieval": list(passages.values()),
                    }
                )
    return {"example log": answers, "1 KiB RAG": rag}


def inner(repeat: int) -> dict[str, Any]:
    """Measure in this process (run with the tree under test first on ``sys.path``)."""
    from schemas.events import ChatEvent
    from services.checking import ClaimChecker
    from services.sampling import SampleDecision
    from services.settings import Settings

    checker = ClaimChecker(Settings())
    decision = SampleDecision(sampled=True, stratum="always", inclusion_probability=1.0)
    out: dict[str, Any] = {}
    for name, rows in answer_sets().items():
        events = [ChatEvent.model_validate_json(json.dumps(r)) for r in rows]
        for e in events:  # warm: lexicons, caches
            checker.check(e, decision)
        best = float("inf")
        for _ in range(repeat):
            t0 = time.process_time()
            for e in events:
                checker.check(e, decision)
            best = min(best, time.process_time() - t0)
        out[name] = {"answers": len(events), "ms_per_answer": 1000 * best / len(events)}
    return out


def _run_side(tree: Path, repeat: int) -> dict[str, Any]:
    code = (
        f"import sys, json; sys.path.insert(0, {str(tree)!r}); "
        f"sys.path.insert(1, {str(ROOT / 'benchmarks')!r}); "
        f"import grounding_cost as g; print(json.dumps(g.inner({repeat})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, check=True
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--baseline", default="eded159", help="commit to compare with")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="vigil-base-") as tmp:
        base = Path(tmp) / "tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(base), args.baseline],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        try:
            sides: dict[str, list[dict[str, Any]]] = {"baseline": [], "this tree": []}
            for _ in range(args.rounds):
                sides["baseline"].append(_run_side(base, args.repeat))
                sides["this tree"].append(_run_side(ROOT, args.repeat))
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False
            )
    result: dict[str, Any] = {"baseline_commit": args.baseline, "command": " ".join(sys.argv)}
    for side, runs in sides.items():
        result[side] = {
            name: {
                "answers": runs[0][name]["answers"],
                "ms_per_answer": round(min(r[name]["ms_per_answer"] for r in runs), 4),
            }
            for name in runs[0]
        }
    for name in result["this tree"]:
        b = result["baseline"][name]["ms_per_answer"]
        t = result["this tree"][name]["ms_per_answer"]
        print(f"{name}: baseline {b:.3f} ms, this tree {t:.3f} ms per answer (x{b / t:.2f})")
    out = ROOT / "benchmarks" / "results" / "grounding_cost.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
