"""The byte ceiling of eval-set case accumulators (``services/evalsets/bounds.py``) and the one
startup check of every state kind's ceiling, broker-free."""

from __future__ import annotations

import json
import re
from functools import cache

import pytest

from schemas.evalset import FileSource
from schemas.events import ChatEvent
from schemas.outputs import Finding
from services.dataflow.flow import Dataflow
from services.dataflow.state import (
    RECORD_ROOM,
    MemoryStore,
    StateCeilingError,
    check_ceilings,
)
from services.evalsets.bounds import CaseBound
from services.evalsets.cases import MAX_ANSWERS, CaseAccumulator
from services.evalsets.core import EvalsetCore, evalset_specs
from services.evalsets.settings import EvalsetSettings
from services.evalsets.state import ConversationSummary
from services.evalsets.streaming import JOURNAL, SampleIn, SamplerCore, acc_key
from services.settings import Settings
from tests.support.long_conversation import email_of, long_conversation
from tests.unit.test_evalset_cases import CFG, finding, report, selection

LIMIT = EvalsetSettings().max_case_bytes
CID = "conv-vi-huge-es-01"
PERIOD = "2026-W45"
MARKER = re.compile(r"\n… ([\d,]+) characters …\n")
#: A sentence of every answer that the test makes a critical, checked claim of.
DOSE = "Không dùng hai loại thuốc có cùng hoạt chất trong một ngày."
EMAIL_MASK = "n***@***.vn"


@cache
def _events() -> list[ChatEvent]:
    raw = long_conversation(CID, answers=20, passage_bytes=8000)
    return [ChatEvent.model_validate_json(json.dumps(e)) for e in raw]


def _fold() -> CaseAccumulator:
    """Twenty 55 KB answers with eight 8 KB passages: every answer leaks an e-mail address, and
    every fourth one is checked with an ungrounded, critical dose claim."""
    acc = CaseAccumulator(conversation_id=CID, period=PERIOD)
    for n, ev in enumerate(_events()):
        own: list[Finding] = []
        rep = None
        if ev.role == "assistant":
            own.append(finding(ev, email_of(n // 2), evidence=EMAIL_MASK))
            if (n // 2) % 4 == 0:
                crit = finding(ev, DOSE, category="medical", evidence=DOSE, entity="DOSE")
                own.append(crit.model_copy(update={"severity": "critical"}))
                rep = report(ev, [(DOSE, "dose", False)])
        acc.observe(ev, own, CFG, rep)
        acc.add_source(FileSource(file="huge.jsonl", line=n + 1), CFG.max_sources)
    return acc


def test_a_long_conversation_stays_under_the_ceiling_with_every_case() -> None:
    acc = _fold()
    whole = len(acc.model_dump_json().encode())
    assert whole > 1_000_000  # one Kafka record could not hold it
    fitted, raw = CaseBound(LIMIT).fit(acc)
    assert len(raw) <= LIMIT and fitted.trimmed
    assert CaseAccumulator.model_validate_json(raw) == fitted
    # Nothing a case keeps is left out: answers, findings, verdicts, critical answers' cases.
    assert len(fitted.answers) == len(acc.answers) == MAX_ANSWERS
    assert fitted.findings == acc.findings and fitted.critical_dropped == acc.critical_dropped
    assert [a.report for a in fitted.answers] == [a.report for a in acc.answers]
    assert fitted.case_ids() == acc.case_ids() and len(fitted.case_ids()) > 1
    cases = fitted.to_cases(selection(CID, "medical|vi|saigon-clinic"), CFG)
    assert [c.case_id for c in cases] == acc.case_ids()
    for case, answer in zip(cases, [fitted.target(), *fitted.extra_answers()], strict=True):
        assert case.trimmed and answer is not None and case.answer == answer.answer
        assert case.answer is not None and EMAIL_MASK in case.answer  # its finding in view
        assert case.unit == "conversation" or DOSE in case.answer
        assert MARKER.search(case.answer) and MARKER.search(case.question or "")
    for a in fitted.answers:  # masked on the way in, still masked; every leak in view
        assert EMAIL_MASK in a.answer and not any(email_of(n) in a.answer for n in range(20))
        original = next(e for e in _events() if e.event_id == a.event_id)
        omitted = sum(g.omitted - (g.end - g.start) for g in a.answer_gaps)
        assert len(a.answer) + omitted == len(original.content) - len(email_of(0)) + len(EMAIL_MASK)
        assert all(
            a.answer[g.start : g.end] == f"\n… {g.omitted:,} characters …\n" for g in a.answer_gaps
        )


def test_a_value_under_the_ceiling_is_left_as_it_is() -> None:
    acc = CaseAccumulator(conversation_id=CID, period=PERIOD)
    for ev in _events()[:2]:
        acc.observe(ev, [], CFG)
    fitted, raw = CaseBound(LIMIT).fit(acc)
    assert fitted is acc and not fitted.trimmed and raw == acc.model_dump_json().encode()


def test_shortened_again_keeps_its_markers_whole_and_counts_the_original() -> None:
    acc = _fold()
    once, _ = CaseBound(LIMIT).fit(acc)
    twice, raw = CaseBound(LIMIT // 2).fit(once)
    assert len(raw) <= LIMIT // 2
    for before, after in zip(acc.answers, twice.answers, strict=True):
        assert EMAIL_MASK in after.answer
        omitted = sum(g.omitted - (g.end - g.start) for g in after.answer_gaps)
        assert len(after.answer) + omitted == len(before.answer)
        found = [int(m.group(1).replace(",", "")) for m in MARKER.finditer(after.answer)]
        assert found == [g.omitted for g in after.answer_gaps]


def test_the_oldest_sources_go_last_and_are_counted() -> None:
    acc = CaseAccumulator(conversation_id=CID, period=PERIOD)
    acc.observe(_events()[0], [], CFG)
    for n in range(64):
        acc.add_source(FileSource(file="x" * 240 + ".jsonl", line=n + 1), 64)
    size = len(acc.model_dump_json().encode())
    fitted, raw = CaseBound(size // 2).fit(acc)
    assert len(raw) <= size // 2 and fitted.trimmed
    kept = len(fitted.sources)
    assert 0 < kept < 64 and fitted.sources_dropped == 64 - kept
    assert fitted.sources == acc.sources[64 - kept :]  # the newest kept


def test_the_core_writes_every_accumulator_under_the_ceiling() -> None:
    es = EvalsetSettings()
    core = EvalsetCore(es, partitions=1, live=False)
    store = MemoryStore(evalset_specs(es)["evalset-cases"])  # refuses a value over the bound
    for n, ev in enumerate(_events()):
        own = [finding(ev, email_of(n // 2), evidence=EMAIL_MASK)] if ev.role == "assistant" else []
        store.now = ev.timestamp.timestamp()
        core.observe(ev, own, None, FileSource(file="h.jsonl", line=n + 1), store, 0)
        core.flush()
    stored = CaseAccumulator.model_validate_json(store[acc_key(0, PERIOD, CID)])
    assert stored.trimmed and len(stored.answers) == MAX_ANSWERS
    assert len(store[acc_key(0, PERIOD, CID)]) <= es.max_case_bytes


def test_every_state_kind_is_checked_once_against_the_producer() -> None:
    flow = Dataflow(Settings(), clock="wall")
    kinds = set(flow.specs)
    assert {"memory", "review-items", "evalset-cases", "evalset-sampler"} <= kinds
    assert {"alerts-window-counts", "alerts-detector"} <= kinds
    check_ceilings(flow.specs.values(), 1_000_000)  # every default fits the producer's default
    for spec in flow.specs.values():
        assert spec.setting, spec.kind


@pytest.mark.parametrize(
    ("env", "kind"),
    [
        ("VIGIL_EVALSET_MAX_CASE_BYTES", "evalset-cases"),
        ("VIGIL_EVALSET_MAX_SAMPLER_BYTES", "evalset-sampler"),
        ("VIGIL_ALERTS_MAX_VALUE_BYTES", "alerts-detector"),
    ],
)
def test_a_ceiling_over_the_producer_names_its_setting(
    env: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(env, str(1_000_000 - RECORD_ROOM + 1))
    flow = Dataflow(Settings(), clock="wall")
    with pytest.raises(StateCeilingError, match=rf"{kind}: .*max_request_size.*{env}"):
        check_ceilings(flow.specs.values(), 1_000_000)


@pytest.mark.parametrize(("limit", "journaled"), [(None, True), (64 * 1024, True), (64, False)])
def test_a_sampler_commit_over_its_ceiling_goes_without_a_journal(
    limit: int | None, journaled: bool
) -> None:
    raw: dict[str, bytes] = {}
    core = SamplerCore(
        CFG,
        b"key",
        raw,
        partitions=1,
        grace_seconds=0.0,
        idle_seconds=1.0,
        check_wait_seconds=0.0,
        now=0.0,
        journal_bytes=limit,
    )
    summary = ConversationSummary(conversation_id=CID, period=PERIOD, language="vi")
    msg = SampleIn(kind="summary", summary=summary, partition=0, timestamp=0.0, event_id="e1")
    core.observe(msg, wall=0.0, mono=0.0)
    assert core.commit() > 0
    assert (JOURNAL in raw) is journaled
    assert limit is None or len(raw.get(JOURNAL, b"")) <= limit
    assert any(k.startswith("M|") for k in raw) and any(k.startswith("S|") for k in raw)
