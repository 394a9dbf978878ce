"""The case side of the worker builds a selected conversation's cases from the accumulator it
keeps in memory, not by decoding the encoding it has just written: the cases must be those
built from what the store holds, whole or shortened to its byte ceiling (broker-free)."""

from __future__ import annotations

from typing import Any

from schemas.evalset import FileSource
from schemas.review import ReviewLabel
from services.dataflow.records import Emit
from services.dataflow.state import MemoryStore
from services.evalsets.cases import CaseAccumulator
from services.evalsets.core import CASES, EvalsetCore, evalset_specs
from services.evalsets.settings import EvalsetSettings
from services.evalsets.state import Selection
from services.evalsets.streaming import Decision, acc_key, build_cases, label_key, sel_key
from tests.unit.test_evalset_bounds import CID, DOSE, _events
from tests.unit.test_evalset_cases import CFG, T0, W, conversation, finding, report, selection


def _core(**settings: Any) -> tuple[EvalsetCore, MemoryStore]:
    es = EvalsetSettings(**settings)
    return EvalsetCore(es, partitions=1), MemoryStore(evalset_specs(es)["evalset-cases"])


def _select(core: EvalsetCore, st: MemoryStore, sel: Selection) -> list[Emit]:
    update = Decision(
        kind="update",
        period=sel.period,
        partition=0,
        conversation_id=sel.conversation_id,
        selection=sel,
    )
    return core.on_decision(0, update, st).emits


def _cases(emits: list[Emit]) -> list[str]:
    return [e.value.model_dump_json() for e in emits if e.channel == CASES and e.value is not None]


def _from_store(core: EvalsetCore, st: MemoryStore, period: str, conv: str) -> list[str]:
    """The cases as built before: decoded from the store's bytes after the batch's flush."""
    core.flush()
    sel = Selection.model_validate_json(st[sel_key(0, period, conv)])
    acc, labels = st.get(acc_key(0, period, conv)), st.get(label_key(0, conv))
    return [c.model_dump_json() for c in build_cases(sel, acc, labels, CFG)]


def _label(conv: str) -> ReviewLabel:
    return ReviewLabel.model_validate(
        {
            "label_id": "l1",
            "item_id": f"{conv}:1",
            "conversation_id": conv,
            "round": 1,
            "reviewer": "ana",
            "labeled_at": T0.isoformat(),
            "priority": 90,
            "admission": "admitted",
            "inclusion_probability": 1.0,
            "reasons": [],
            "findings": [],
            "claims": [],
            "answer_event_id": f"{conv}-e1",
            "note": "fine",
        }
    )


def test_each_event_of_a_selected_conversation_publishes_the_cases_its_stored_state_gives() -> None:
    """Masked texts, findings, a late verdict, sources, a label: after every event and label
    the cases published are, byte for byte, those decoded from the store."""
    core, st = _core()
    events, fs, reps = conversation()
    by_event = {e.event_id: [f for f in fs if f.event_id == e.event_id] for e in events}
    verdict = {r.event_id: r for r in reps}
    _select(core, st, selection())
    published = 0
    for line, ev in enumerate(events, start=1):
        out = core.observe(
            ev,
            by_event[ev.event_id],
            verdict.get(ev.event_id),
            FileSource(file="f", line=line),
            st,
            0,
        )
        assert _cases(out) == _from_store(core, st, W, "c1")
        published += len(_cases(out))
    labelled = core.on_label(0, _label("c1"), st)
    assert _cases(labelled) == _from_store(core, st, W, "c1")
    assert published == len(events) and '"note":"fine"' in _cases(labelled)[0]


def test_a_conversation_over_the_ceiling_publishes_the_shortened_state_not_the_one_in_memory() -> (
    None
):
    """The accumulator kept in memory is whole; the store holds it shortened (``trimmed``):
    the case published is the shortened one, as a restarted worker would build it."""
    core, st = _core(max_case_bytes=64 * 1024)
    sel = selection(CID, "medical|vi|saigon-clinic")
    _select(core, st, sel)
    out: list[Emit] = []
    for n, ev in enumerate(_events()[:8]):
        own = []
        rep = None
        if ev.role == "assistant":
            own.append(finding(ev, DOSE, category="medical", evidence=DOSE, entity="DOSE"))
            rep = report(ev, [(DOSE, "dose", False)])
        out = core.observe(ev, own, rep, FileSource(file="huge", line=n + 1), st, 0)
    cases = _cases(out)
    assert cases == _from_store(core, st, W, CID)
    assert all('"trimmed":true' in c for c in cases)
    kept = core._accs.get(st, acc_key(0, W, CID))
    assert isinstance(kept, CaseAccumulator) and not kept.trimmed
    assert len(st[acc_key(0, W, CID)]) <= 64 * 1024 < len(kept.model_dump_json())


def test_the_ids_read_from_a_stored_accumulator_are_those_it_names() -> None:
    """A tombstone's ids are read from the stored bytes without decoding the accumulator:
    the conversation's case, then each other checked answer with a critical finding (a
    conversation with none, one with several, one shortened to its ceiling)."""
    from services.evalsets.bounds import CaseBound
    from services.evalsets.cases import stored_case_ids
    from tests.unit.test_evalset_bounds import _fold

    events, fs, reps = conversation()
    plain = CaseAccumulator(conversation_id="c1", period=W)
    for ev in events:
        plain.observe(ev, fs, CFG, next((r for r in reps if r.event_id == ev.event_id), None))
    long = _fold()
    fitted, raw = CaseBound(64 * 1024).fit(long)
    for acc, stored in (
        (plain, plain.model_dump_json().encode()),
        (long, long.model_dump_json().encode()),
        (fitted, raw),
    ):
        assert stored_case_ids(acc.period, acc.conversation_id, stored) == acc.case_ids()
    assert len(long.case_ids()) > 2 and plain.case_ids() == [f"{W}:c1"]


def test_a_scratch_sampler_commits_in_runs_without_a_journal_and_decides_the_same() -> None:
    """vigil scan's sampler (no live cases: its state is a scratch file) writes no journal and
    commits once per SCRATCH_COMMIT_EVERY summaries; the worker's commits every summary it is
    asked to, behind its journal. Both decide the same."""
    from services.evalsets.core import SCRATCH_COMMIT_EVERY
    from services.evalsets.state import ConversationSummary
    from services.evalsets.streaming import JOURNAL, SampleIn

    es = EvalsetSettings()
    spec = evalset_specs(es)["evalset-sampler"]
    runs = {}
    for live in (True, False):
        core = EvalsetCore(es, partitions=1, live=live)
        store = MemoryStore(spec)
        sampler = core.new_sampler(store, now=0.0)
        decided = []
        written = []
        for n in range(SCRATCH_COMMIT_EVERY + 3):
            msg = SampleIn(
                kind="summary",
                summary=ConversationSummary(conversation_id=f"c{n}", period=W, language="en"),
            )
            decided += [e.value for e in core.on_sample(sampler, msg, wall=0.0, mono=0.0)]
            written.append(len(store))
        runs[live] = (decided, written, JOURNAL in store)
        sampler.commit()
        # members, their stratum, the period's flags, the journal (live only)
        assert len(store) == SCRATCH_COMMIT_EVERY + 3 + 2 + live
    assert runs[True][0] == runs[False][0]
    assert runs[True][2] and not runs[False][2]
    assert runs[False][1][SCRATCH_COMMIT_EVERY - 2] == 0 < runs[False][1][SCRATCH_COMMIT_EVERY - 1]


def test_the_summaries_sent_are_those_of_before_in_deferred_mode_too() -> None:
    """A summary with a claim check to report (``pending`` / ``done``) is always sent and is
    not remembered as told: the next plain event of the conversation sends its summary again;
    after that, an event that adds nothing sends nothing, and a new category is sent."""
    from services.evalsets.core import SAMPLES

    core, st = _core()
    events, fs, _ = conversation()
    u0, a1, u2, a3 = events

    def sent(ev: Any, findings: list[Any], check: Any = None) -> int:
        out = core.observe(ev, findings, None, None, st, 0, check=check)
        return sum(e.channel == SAMPLES for e in out)

    assert sent(a1, [], "pending") == 1
    assert sent(a1, [], "done") == 1
    assert sent(u0, []) == 1  # the check summaries were not remembered
    assert sent(u2, []) == 0
    assert sent(a3, [f for f in fs if f.event_id == a3.event_id]) == 1  # abstention: new
    assert sent(a3, [f for f in fs if f.event_id == a3.event_id]) == 0


class _CountingStore(MemoryStore):
    """A memory store that counts reads of one key (``get``, ``[]``, ``in``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reads = 0

    def get(self, key: str, default: Any = None) -> Any:
        self.reads += 1
        return super().get(key, default)

    def __getitem__(self, key: str) -> bytes:
        self.reads += 1
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.reads += 1
        return super().__contains__(key)


def test_a_close_reads_each_dropped_accumulator_once_and_tombstones_every_conversation() -> None:
    """At the close every conversation of the period with an accumulator is tombstoned, most of
    them never selected. The close read each accumulator twice and probed a selection that
    was not there (three point reads per conversation: ~100 s of one worker with RocksDB at
    100k conversations); now one pass in key order gives the ids, and the deletions read
    nothing."""
    es = EvalsetSettings()
    core = EvalsetCore(es, partitions=1)
    st = _CountingStore(evalset_specs(es)["evalset-cases"])
    events, fs, reps = conversation()
    verdict = {r.event_id: r for r in reps}
    for conv in [f"c{i}" for i in range(6)]:
        for ev in events:
            own = [f for f in fs if f.event_id == ev.event_id]
            ev = ev.model_copy(update={"conversation_id": conv})
            core.observe(ev, own, verdict.get(ev.event_id), None, st, 0)
    _select(core, st, selection("c1"))
    _select(core, st, selection("c2"))
    core.flush()
    expected = {
        key.encode()
        for conv in ("c0", "c1", "c3", "c4", "c5")
        for key in CaseAccumulator.model_validate_json(st[acc_key(0, W, conv)]).case_ids()
    }
    close = Decision(kind="sync", period=W, partition=0, keep=["c2"], final=True)
    core.forget_caches()
    st.reads = 0
    effects = core.on_decision(0, close, st)
    assert {e.key for e in effects.emits if e.channel == CASES and e.value is None} == expected
    # the partition record only: the accumulators are read in one pass over the period
    # (stream_prefix), the selection dropped is known from the scan of the selections
    assert st.reads == 1
    assert sel_key(0, W, "c1") not in st and sel_key(0, W, "c2") in st
    st.reads = 0
    assert effects.then is not None
    effects.then()
    core.flush()
    assert st.keys_with_prefix(acc_key(0, W, "")) == [acc_key(0, W, "c2")]
    assert core.meta(st, 0).closed == [W]
    assert st.reads <= 1  # the partition record, at most
