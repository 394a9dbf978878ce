"""The sampler tells who joined and who left the selection from what one summary changed (the
stratum a conversation entered and the one it left), not by comparing the two strata's whole
selections before and after: the same answers as that comparison, on random streams of
summaries that admit, push out, move up and repeat (small capacities, with and without a
reserve)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from services.evalsets.config import EvalsetConfig
from services.evalsets.sampler import (
    AddResult,
    ConversationSummary,
    EvalsetSampler,
    KeptEntry,
    _merge,
)
from services.evalsets.state import PeriodState, member_key

SECRET = b"moves-test-secret"
W = "2026-W45"
CATEGORIES = ("medical", "secret", "pii", "abstention")


class Compared(EvalsetSampler):
    """The sampler as it was: ``admitted`` / ``evicted`` from the selections of the touched
    strata before and after the move."""

    def add(self, summary: ConversationSummary) -> AddResult:
        period, cid = summary.period, summary.conversation_id
        state = self.states.get(period) or PeriodState(period=period)
        record = self.members.get(member_key(period, cid))
        prio = record.priority if record else self.priority(period, cid)
        merged = _merge(record, summary, prio, self.config)
        if merged is record or (record is not None and record.stratum == merged.stratum):
            return super().add(summary)
        self.members[member_key(period, cid)] = merged
        entry = KeptEntry(priority=prio, conversation_id=cid)
        touched = {merged.stratum} | ({record.stratum} if record else set())
        before = {
            k: {e.conversation_id for e in self._stratum(state, k).selected()} for k in touched
        }
        if record is not None:
            self._stratum(state, record.stratum).remove(entry)
        self._stratum(state, merged.stratum).insert(entry)
        after = {k: {e.conversation_id for e in state.strata[k].selected()} for k in touched}
        old = set().union(*before.values())
        new = set().union(*after.values())
        self.states[period] = state
        return AddResult(
            period=period,
            conversation_id=cid,
            accepted=True,
            changed=True,
            stratum=merged.stratum,
            previous_stratum=record.stratum if record else None,
            admitted=sorted(new - old),
            evicted=sorted(old - new),
        )


summaries = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=24),
        st.sets(st.sampled_from(CATEGORIES), max_size=2),
        st.sampled_from(["nl", "en"]),
    ),
    max_size=120,
)


@settings(max_examples=150, deadline=None)
@given(
    stream=summaries,
    capacity=st.integers(min_value=0, max_value=4),
    reserve=st.sampled_from([0, 1, 3, None]),
)
def test_who_joins_and_leaves_is_what_comparing_whole_selections_gives(
    stream: list[tuple[int, set[str], str]], capacity: int, reserve: int | None
) -> None:
    config = EvalsetConfig(
        capacities=dict.fromkeys(("medical", "secret", "pii", "abstention", "unflagged"), capacity),  # type: ignore[arg-type]
        reserve=reserve,
    )
    fast, compared = EvalsetSampler(config, SECRET), Compared(config, SECRET)
    for n, cats, lang in stream:
        s = ConversationSummary(
            conversation_id=f"c{n}",
            period=W,
            categories=frozenset(cats),  # type: ignore[arg-type]
            language=lang,
        )
        assert fast.add(s) == compared.add(s)
    assert {p: s.model_dump() for p, s in fast.states.items()} == {
        p: s.model_dump() for p, s in compared.states.items()
    }
    assert dict(fast.members) == dict(compared.members)
