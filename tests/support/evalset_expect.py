"""What the eval-set sampler of ``vigil scan`` selects from a stream, and the worker's cases
read back from their compacted topic: the expectations of the integration tests that run the
sampler in workers (``test_evalset_worker.py``, ``test_worker_scaleout.py``).

Three days of events (day periods, timestamps spread evenly) with :data:`EVALSET`'s sampler
settings: day 1 retires, day 2 closes, day 3 stays open.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from schemas.evalset import EvalCase, FileSource, KafkaSource
from schemas.outputs import DeadLetter, Finding
from schemas.verdicts import GroundingReport, MedicalContext
from services.evalsets import EvalsetCollector
from services.evalsets.sampler import summary_from_event
from services.evalsets.settings import EvalsetSettings
from services.evalsets.streaming import SampleIn, partition_for
from services.pipeline import Pipeline
from services.screening import ConversationMemory
from services.settings import Settings

__all__ = [
    "DAY1",
    "DAYS",
    "EVALSET",
    "Expected",
    "converges_to",
    "diff",
    "input_positions",
    "live",
    "spread",
    "view",
    "worker_view",
]

DAY1 = datetime(2026, 11, 2, tzinfo=UTC)
DAYS = ("2026-11-02", "2026-11-03", "2026-11-04")
#: Sampler settings shared by the workers (as VIGIL_EVALSET_*) and the in-process collector.
EVALSET = {
    "period": "day",
    "capacity": "2",
    # Every stratum keeps all its members as candidates: no stratum degrades to a threshold
    # sample when members move up to a higher flag, so the sample does not depend on arrival
    # order (the worker's sampler sees the partitions interleaved, scan sees the file's order).
    "reserve": "60",
    "active_periods": "2",
    "grace_seconds": "0",
    "tick_seconds": "0.5",
    "idle_seconds": "30",
    "check_wait_seconds": "60",
    "key": "it-evalset-secret",
}


def spread(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Timestamps evenly over three days, in stream order."""
    step = 3 * 86400 / len(events)
    for i, ev in enumerate(events):
        ev["timestamp"] = (DAY1 + timedelta(seconds=i * step)).isoformat().replace("+00:00", "Z")
    return events


class Expected:
    """What ``vigil scan``'s sampler selects on the whole file (screening, checks, collector)."""

    def __init__(
        self, events: list[dict[str, Any]], es: EvalsetSettings, partitions: int = 4
    ) -> None:
        settings = Settings()
        pipe = Pipeline(settings)
        store: dict[str, ConversationMemory] = {}
        #: Per conversation, the drugs and population of each user turn that names any (as
        #: the dataflow keeps them for the answers' checks: services/dataflow/questions.py).
        asked: dict[str, dict[int, MedicalContext]] = {}
        self.collector = EvalsetCollector(es.config(), es.secret)
        self.line_event: dict[int, str] = {}
        #: Every message the worker's hooks send to the sampler, in stream order.
        self.samples: list[SampleIn] = []
        for number, obj in enumerate(events, start=1):
            event = pipe.decode(json.dumps(obj).encode(), f"whole.jsonl:{number}")
            assert not isinstance(event, DeadLetter), event
            self.line_event[number] = event.event_id
            out = pipe.screen(event, store.get(event.conversation_id))
            if out.memory is not None:
                store[event.conversation_id] = out.memory
            findings: list[Finding] = list(out.findings)
            if event.role == "user":
                said = pipe.checker.medical_context(event)
                if said.drugs or said.populations or said.age_min_years is not None:
                    asked.setdefault(event.conversation_id, {})[event.turn_index] = said
            decision = pipe.decide(event, out.findings)
            report: GroundingReport | None = None
            part = partition_for(event.conversation_id, partitions)
            sampled = decision is not None and decision.sampled
            self.samples.append(self._sample(event, findings, part, "pending" if sampled else None))
            if decision is not None and decision.sampled:
                turns = asked.get(event.conversation_id, {})
                before = [t for t in turns if t < event.turn_index]
                context = turns[max(before)] if before else None
                checked = pipe.check(event, decision, None, out.findings, context)
                report, findings = checked.report, findings + checked.findings
                self.samples.append(self._sample(event, findings, part, "done"))
            self.collector.observe(event, findings, FileSource(file="whole", line=number), report)
        self.collector.close_all()
        sampler = self.collector.sampler.sampler
        self.bounded = [
            f"{p}/{key}"
            for p in sampler.periods()
            for key, stratum in sampler.state(p).strata.items()  # type: ignore[union-attr]
            if stratum.bound is not None
        ]
        rotation = self.collector.rotate()
        self.active = {c.case_id: c for c in rotation.active}
        self.retired = {c.case_id: c for c in rotation.retired}
        self.config = es.config()

    def _sample(self, event: Any, findings: list[Finding], part: int, check: Any) -> SampleIn:
        return SampleIn(
            kind="summary",
            summary=summary_from_event(event, findings, None, self.collector.config),
            partition=part,
            timestamp=event.timestamp.timestamp(),
            event_id=event.event_id,
            check=check,
        )

    def sources(self, case: EvalCase) -> list[str]:
        return sorted(self.line_event[s.line] for s in case.sources if isinstance(s, FileSource))


def view(case: EvalCase, sources: list[str], final: bool) -> dict[str, Any]:
    """What must agree between the worker's case and scan's: everything but where the events
    were read (compared as event ids) and, while the worker's period is open, π and N."""
    data = case.model_dump(mode="json", exclude={"sources"})
    data["findings"] = sorted(data["findings"], key=lambda f: f["finding_id"])
    data["sources"] = sources
    if not final:
        for key in ("inclusion_probability", "stratum_population", "inclusion_final"):
            data.pop(key)
    return data


def live(records: list[Any]) -> dict[str, EvalCase]:
    """Last value per key of a compacted topic's records, tombstones applied."""
    out: dict[str, EvalCase] = {}
    for r in records:
        key = r.key.decode()
        if r.value is None:
            out.pop(key, None)
        else:
            case = EvalCase.model_validate_json(r.value)
            assert case.case_id == key, f"record keyed {key} holds case {case.case_id}"
            out[key] = case
    return out


def diff(got: dict[str, Any], want: dict[str, Any], what: str) -> str | None:
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    wrong = sorted(k for k in set(got) & set(want) if got[k] != want[k])
    if not (missing or extra or wrong):
        return None
    lines = [f"{what}: {len(missing)} missing, {len(extra)} extra, {len(wrong)} differ"]
    lines += [f"  missing {k}" for k in missing[:8]]
    lines += [f"  extra {k}" for k in extra[:8]]
    for k in wrong[:4]:
        fields = sorted(f for f in want[k] if got[k].get(f) != want[k].get(f))
        lines.append(f"  {k} differs in {fields}")
        for f in fields[:3]:
            lines.append(
                f"    worker {str(got[k].get(f))[:300]}\n    scan   {str(want[k].get(f))[:300]}"
            )
    return "\n".join(lines)


def worker_view(found: dict[str, EvalCase], position: dict[tuple[int, int], str]) -> dict[str, Any]:
    """:func:`view` of the worker's cases, their Kafka sources as event ids (``position``:
    ``(partition, offset) -> event_id`` of the input topic); day 3 is still open."""
    out = {}
    for k, c in found.items():
        srcs = sorted(
            position.get((s.partition, s.offset), "?")
            for s in c.sources
            if isinstance(s, KafkaSource)
        )
        out[k] = view(c, srcs, c.period != DAYS[2])
    return out


def input_positions(records: list[Any]) -> dict[tuple[int, int], str]:
    """``(partition, offset) -> event_id`` of the input topic's records."""
    return {(r.partition, r.offset): json.loads(r.value)["event_id"] for r in records}


def converges_to(
    want: dict[str, Any], position: dict[tuple[int, int], str]
) -> Callable[[list[Any]], bool]:
    """``done(records)`` for :meth:`~tests.support.kafka_io.TopicReader.read_until`: the live
    cases of a case topic read so far match ``want``."""

    def done(records: list[Any]) -> bool:
        return worker_view(live(records), position) == want

    return done
