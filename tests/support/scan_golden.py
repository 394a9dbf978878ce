"""Digests of ``vigil scan``'s outputs, to show that a change of the runtime leaves them unchanged.

:func:`digest_outputs` reads an output folder and returns, per output file, the number of records
and a SHA-256 over its records in a canonical form: JSON records sorted, with the fields that
depend on the wall clock removed (a dead letter's ``received_at``), and in ``metrics.prom`` the
lines that are timings or creation times left out. ``python -m tests.support.scan_golden DIR``
prints the digests of a folder as JSON (``tests/data/scan-golden.json`` was made this way).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["JSONL_OUTPUTS", "digest_outputs"]

#: The record files compared; a missing file counts as empty.
JSONL_OUTPUTS = (
    "findings.jsonl",
    "verdicts.jsonl",
    "review.jsonl",
    "evalset.jsonl",
    "evalset-archive.jsonl",
    "dead_letters.jsonl",
)
_WALL_CLOCK_FIELDS = {"dead_letters.jsonl": ("received_at",)}
_METRIC_SKIP = ("_created", "vigil_processing_seconds", "_seconds_bucket", "_seconds_sum")


def _canonical_jsonl(path: Path, drop: tuple[str, ...]) -> list[str]:
    if not path.is_file():
        return []
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            obj: Any = json.loads(line)
            for name in drop:
                obj.pop(name, None)
            out.append(json.dumps(obj, sort_keys=True, ensure_ascii=False))
    return sorted(out)


def _canonical_metrics(path: Path) -> list[str]:
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return sorted(
        line
        for line in lines
        if line and not line.startswith("#") and not any(s in line for s in _METRIC_SKIP)
    )


def _digest(lines: list[str]) -> dict[str, Any]:
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8"))
        h.update(b"\n")
    return {"records": len(lines), "sha256": h.hexdigest()}


def digest_outputs(out_dir: Path) -> dict[str, dict[str, Any]]:
    """Per output file: ``{"records": n, "sha256": ...}`` of its canonical form."""
    result = {
        name: _digest(_canonical_jsonl(out_dir / name, _WALL_CLOCK_FIELDS.get(name, ())))
        for name in JSONL_OUTPUTS
    }
    result["metrics.prom"] = _digest(_canonical_metrics(out_dir / "metrics.prom"))
    return result


if __name__ == "__main__":
    print(json.dumps(digest_outputs(Path(sys.argv[1])), indent=2, sort_keys=True))
