"""What the integration tests compare: ``vigil scan``'s outputs and the worker's.

Both run the screening stage and the sampled claim checks, so every finding and every verdict
is compared. :data:`NOT_IN_WORKER` stays as the one place to exclude rule ids from the
comparisons, should a stage ever run in only one of the two paths; it is empty.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from schemas import DeadLetter, Finding, GroundingReport
from services.scan import ScanSummary, run_scan
from services.settings import Settings
from tests.support.kafka_io import findings_by_rule_direction

#: Rule ids that ``vigil scan`` emits and the worker does not: none.
NOT_IN_WORKER: frozenset[str] = frozenset()

#: A finding's identity across the two paths (SPEC §10, issue 2 item 10).
Key = tuple[str, str, int, int]


def key_of(f: Finding) -> Key:
    return (f.event_id, f.rule_id, f.start, f.end)


class ScanResult:
    """``vigil scan`` over a file with the default settings (``VIGIL_*`` from the environment)."""

    def __init__(self, path: Path, out_dir: Path) -> None:
        self.summary: ScanSummary = run_scan(str(path), out_dir, Settings())
        with open(out_dir / "findings.jsonl", encoding="utf-8") as fh:
            every = [Finding.model_validate_json(line) for line in fh]
        self.findings = [f for f in every if f.rule_id not in NOT_IN_WORKER]
        with open(out_dir / "verdicts.jsonl", encoding="utf-8") as fh:
            self.verdicts = [GroundingReport.model_validate_json(line) for line in fh]
        with open(out_dir / "dead_letters.jsonl", encoding="utf-8") as fh:
            self.dead_letters = [DeadLetter.model_validate_json(line) for line in fh]
        self.metrics_text = (out_dir / "metrics.prom").read_text(encoding="utf-8")
        self.directions: dict[Key, str] = {key_of(f): f.direction for f in self.findings}
        assert len(self.directions) == len(self.findings), "scan wrote a finding twice"

    def for_events(self, event_ids: set[str]) -> dict[Key, str]:
        return {k: d for k, d in self.directions.items() if k[0] in event_ids}


def findings_of(records: list[Any]) -> list[Finding]:
    """The findings in ``vigil.findings`` records, without the rules in :data:`NOT_IN_WORKER`."""
    parsed = (Finding.model_validate_json(r.value) for r in records)
    return [f for f in parsed if f.rule_id not in NOT_IN_WORKER]


def compared_findings_counts(metrics_text: str) -> Counter[tuple[str, ...]]:
    """``vigil_findings_total`` by (rule, direction), without the rules in :data:`NOT_IN_WORKER`."""
    counts = findings_by_rule_direction(metrics_text)
    return Counter({k: v for k, v in counts.items() if k[0] not in NOT_IN_WORKER})


def compare(got: dict[Key, str], want: dict[Key, str], what: str) -> str | None:
    """A readable description of how two ``{key: direction}`` maps differ, or ``None``."""
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    wrong = sorted(k for k in set(want) & set(got) if want[k] != got[k])
    if not (missing or extra or wrong):
        return None
    lines = [
        f"{what}: {len(missing)} missing, {len(extra)} unexpected, {len(wrong)} with another "
        f"direction (of {len(want)} expected)"
    ]
    lines += [f"  missing {k} ({want[k]})" for k in missing[:10]]
    lines += [f"  unexpected {k} ({got[k]})" for k in extra[:10]]
    lines += [f"  direction {k}: worker {got[k]}, scan {want[k]}" for k in wrong[:10]]
    return "\n".join(lines)
