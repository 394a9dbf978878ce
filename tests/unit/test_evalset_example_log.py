"""The evaluation set of the bundled example log, built with the real screening and checks: no
personal value or secret that screening found survives into the cases, and the set runs
through ``run_eval``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas.evalset import FileSource
from schemas.outputs import DeadLetter, Finding
from services.evalrun import run_eval
from services.evalsets import (
    EvalsetCollector,
    EvalsetConfig,
    ModelMapping,
    load_cases,
    write_scan_evalset,
)
from services.evalsets.sampler import (
    ConversationSummary,
    EvalsetSampler,
    MemberRecord,
    PeriodState,
)
from services.pipeline import Pipeline
from services.scan import iter_lines
from services.screening import ConversationMemory
from services.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "examples" / "chat-events.jsonl"
MASKED = {"pii", "secret", "prompt_leak"}


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], EvalsetCollector]:
    settings = Settings()
    pipe = Pipeline(settings)
    store: dict[str, ConversationMemory] = {}
    config = EvalsetConfig(capacities={"unflagged": 8, "medical": 4, "pii": 4})
    collector = EvalsetCollector(config, b"example-secret")
    raw_values: list[str] = []
    with LOG.open("rb") as fh:
        for number, raw in iter_lines(fh):
            if not raw.strip():
                continue
            event = pipe.decode(raw, f"{LOG.name}:{number}")
            if isinstance(event, DeadLetter):
                continue
            out = pipe.screen(event, store.get(event.conversation_id))
            if out.memory is not None:
                store[event.conversation_id] = out.memory
            findings: list[Finding] = list(out.findings)
            decision = pipe.decide(event, out.findings)
            report = None
            if decision is not None and decision.sampled:
                checked = pipe.check(event, decision, None, out.findings)
                report, findings = checked.report, findings + checked.findings
            raw_values += [
                event.content[f.start : f.end]
                for f in findings
                if f.category in MASKED and f.end - f.start >= 6
            ]
            collector.observe(event, findings, FileSource(file=LOG.name, line=number), report)
    out_dir = tmp_path_factory.mktemp("scan")
    written = write_scan_evalset(collector, out_dir)
    assert written.active.written > 0 and written.archive is None
    return out_dir, raw_values, collector


def test_no_found_value_survives_into_the_cases(
    scanned: tuple[Path, list[str], EvalsetCollector],
) -> None:
    out_dir, raw_values, _ = scanned
    text = (out_dir / "evalset.jsonl").read_text(encoding="utf-8")
    assert len(raw_values) > 20
    leaked = sorted({v for v in raw_values if v in text})
    assert leaked == []


def test_example_evalset_is_stratified_and_evaluable(
    scanned: tuple[Path, list[str], EvalsetCollector],
) -> None:
    out_dir, _, _ = scanned
    cases = load_cases(out_dir / "evalset.jsonl")
    flags = {c.flag_stratum for c in cases}
    assert {"medical", "pii", "unflagged"} <= flags
    for c in cases:
        assert c.inclusion_final and 0 < c.inclusion_probability <= 1
        assert c.sources and all(isinstance(s, FileSource) for s in c.sources)
    report = run_eval(cases)
    assert report.cases == len(cases)
    assert report.overall.counts["faithfulness"] > 0
    # The example log has ungrounded dose claims: the gate metric sees them.
    assert report.overall.values["ungrounded_dose_claims"]
    first = json.loads((out_dir / "evalset.jsonl").read_text().splitlines()[0])
    assert first["case_id"].startswith(first["period"] + ":")


def test_state_in_a_raw_table_gives_the_same_sample(
    scanned: tuple[Path, list[str], EvalsetCollector],
) -> None:
    """The sampler on ModelMapping views of byte-valued tables (as Faust tables are) draws the
    same sample as on dicts."""
    _, _, collector = scanned
    raw_states: dict[str, bytes | str] = {}
    raw_members: dict[str, bytes | str] = {}
    twin = EvalsetSampler(
        collector.config,
        b"example-secret",
        states=ModelMapping(raw_states, PeriodState),
        members=ModelMapping(raw_members, MemberRecord),
    )
    for key, record in collector.sampler.sampler.members.items():
        period, conv = key.split("|", 1)
        twin.add(
            ConversationSummary(
                conversation_id=conv,
                period=period,
                categories=frozenset(record.categories),
                language=record.language,
                tenant=record.tenant,
                sources=record.sources,
            )
        )
    for period in collector.periods():
        twin.close(period)
        assert twin.selection(period) == collector.sampler.selection(period)
    assert all(isinstance(v, bytes) for v in raw_states.values())
