"""The evaluation-set stage of the dataflow (pure): accumulate, sample, publish cases.

Three parts, the same in ``vigil scan`` and in the worker (where they run on different
partitions; the design and its crash behaviour are in :mod:`services.evalsets.streaming`):

- **case side** (:meth:`EvalsetCore.observe`, :meth:`~EvalsetCore.on_decision`,
  :meth:`~EvalsetCore.on_label`), on the partition that owns the conversation: folds each event
  into the conversation's :class:`~services.evalsets.cases.CaseAccumulator`, sends the sampler a
  :class:`~services.evalsets.streaming.SampleIn` when what it knows of the conversation changed,
  and turns the sampler's decisions (and review labels) into published cases;
- **sampler** (:meth:`EvalsetCore.on_sample`, :meth:`~EvalsetCore.on_tick`): the one
  :class:`~services.evalsets.streaming.SamplerCore` of the stream, on partition 0;
- **end of a scan** (:meth:`EvalsetCore.finish`): close every period, retire the old ones, and
  publish the final cases.

Everything returns :class:`~services.dataflow.records.Effects` on the channels
``evalset.samples``, ``evalset.decisions``, ``evalset.cases`` and ``evalset.archive``; state is a
:class:`~services.dataflow.state.KeyedStore` (the case store of a partition, the sampler's
store). Deselecting writes state first and then sends an idempotent tombstone; archiving copies
first and deletes in the follow-up, after the broker acknowledged the copies.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Final, Literal, get_args

from schemas.evalset import EvalCase, SourceRef
from schemas.events import ChatEvent
from schemas.outputs import Category, Finding
from schemas.review import ReviewLabel
from schemas.verdicts import GroundingReport
from services.dataflow.records import Effects, Emit
from services.dataflow.state import KeyedStore, ObjectCache, StateSpec
from services.evalsets.bounds import CaseBound
from services.evalsets.cases import MAX_ANSWERS, CaseAccumulator, case_id
from services.evalsets.config import EvalsetConfig
from services.evalsets.labels import label_from_review
from services.evalsets.periods import period_of, period_start, periods_order_key
from services.evalsets.rotation import active_periods
from services.evalsets.sampler import summary_from_event
from services.evalsets.settings import EvalsetSettings
from services.evalsets.state import Selection
from services.evalsets.streaming import (
    Decision,
    SampleIn,
    SamplerCore,
    ShardMeta,
    acc_key,
    build_cases,
    case_digest,
    case_ids,
    decode_labels,
    encode_labels,
    label_key,
    meta_key,
    sel_key,
)

__all__ = [
    "ARCHIVE",
    "CASES",
    "DECISIONS",
    "SAMPLES",
    "SCRATCH_COMMIT_EVERY",
    "EvalsetCore",
    "evalset_specs",
]

SAMPLES = "evalset.samples"
DECISIONS = "evalset.decisions"
CASES = "evalset.cases"
ARCHIVE = "evalset.archive"

#: Decoded accumulators kept between events (each one conversation's case so far).
_ACCUMULATORS = 512
#: How an accumulator's encoding ends when it was stored whole, not shortened to fit its byte
#: ceiling (``trimmed`` is its last field): then the accumulator kept in memory is the value
#: the store holds, and a case is built from it without decoding what was just encoded.
_WHOLE: Final = b'"trimmed":false}'
#: Summaries between two commits of a sampler whose state is scratch (vigil scan, export):
#: each commit writes every stratum changed since the last, so one per summary rewrote a
#: stratum per summary; this bounds the writes staged in memory meanwhile.
SCRATCH_COMMIT_EVERY: Final = 512
#: What the case side remembers telling the sampler of a conversation, as bits of an int.
_CATEGORY_BITS: Final = {c: 1 << i for i, c in enumerate(get_args(Category))}
_LANGUAGE: Final = 1 << len(_CATEGORY_BITS)
_TENANT: Final = _LANGUAGE << 1
_WEEK = 7 * 24 * 3600.0
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def evalset_specs(es: EvalsetSettings) -> dict[str, StateSpec]:
    """Bounds and lifetimes of the evaluation-set state kinds."""
    period_s = _WEEK if es.period == "iso_week" else 24 * 3600.0
    ttl = es.state_ttl_seconds or (es.active_periods + 2) * period_s + es.grace_seconds
    return {
        "evalset-cases": StateSpec(
            kind="evalset-cases",
            max_entries=es.max_conversations,
            ttl_seconds=ttl,
            max_value_bytes=es.max_case_bytes,
            description="Per conversation and period: accumulators, selections, labels.",
            setting="VIGIL_EVALSET_MAX_CASE_BYTES",
        ),
        "evalset-sampler": StateSpec(
            kind="evalset-sampler",
            max_entries=es.max_members,
            ttl_seconds=ttl,
            max_value_bytes=es.max_sampler_bytes,
            description="The sampler: strata per period, members, checks in flight.",
            setting="VIGIL_EVALSET_MAX_SAMPLER_BYTES",
        ),
    }


class _LRU(OrderedDict[str, bytes]):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def put(self, key: str, value: bytes) -> None:
        self[key] = value
        self.move_to_end(key)
        if len(self) > self.size:
            self.popitem(last=False)


def _retired(meta: ShardMeta, period: str) -> ShardMeta:
    through = [p for p in (meta.retired_through, period) if p is not None]
    return meta.model_copy(
        update={
            "periods": [p for p in meta.periods if p != period],
            "closed": [p for p in meta.closed if p != period],
            "retired_through": max(through, key=period_start),
        }
    )


class EvalsetCore:
    """The evaluation-set stage (see the module docstring).

    ``live``: publish a case whenever what it is built from changes (the worker's compacted
    topic). ``vigil scan`` passes ``False`` and publishes once, in :meth:`finish`.
    """

    def __init__(
        self,
        es: EvalsetSettings,
        *,
        partitions: int,
        live: bool = True,
        config: EvalsetConfig | None = None,
        secret: bytes | None = None,
    ) -> None:
        self.es = es
        self.config: EvalsetConfig = config if config is not None else es.config()
        self.secret = secret if secret is not None else es.secret
        self.partitions = partitions
        self.live = live
        #: (period, conversation) -> what the sampler was told of it: a bit per category, one
        #: for a known language, one for a known tenant (an int: nothing for the garbage
        #: collector to walk, in a memo of up to ``memo_conversations`` entries).
        self._sent: OrderedDict[str, int] = OrderedDict()
        self._published: _LRU = _LRU(es.memo_conversations)
        #: Summaries folded since the last commit of a scratch sampler.
        self._uncommitted = 0
        #: Fits an accumulator under the state's byte ceiling as it is written.
        self.bound = CaseBound(es.max_case_bytes)
        self._accs = ObjectCache(
            CaseAccumulator.model_validate_json,
            self.bound.encode,
            size=_ACCUMULATORS,
            max_weight=es.cache_bytes,
        )
        self._metas = ObjectCache(
            ShardMeta.model_validate_json, lambda m: m.model_dump_json().encode(), size=256
        )

    def flush(self) -> None:
        """Write the accumulators and partition records changed since the last flush."""
        self._accs.flush()
        self._metas.flush()

    def new_sampler(self, store: KeyedStore, *, now: float) -> SamplerCore:
        """The sampler over its store (one per stream, on partition 0 in the worker)."""
        return SamplerCore(
            self.config,
            self.secret,
            store,
            partitions=self.partitions,
            grace_seconds=self.es.grace_seconds,
            idle_seconds=self.es.idle_seconds,
            check_wait_seconds=self.es.check_wait_seconds,
            now=now,
            journal_bytes=store.spec.max_value_bytes,
            journal=self.live,
        )

    def forget_caches(self) -> None:
        """After a rebalance or recovery: what was sent or published may have been lost, and
        the stores are the truth."""
        self._sent.clear()
        self._published.clear()
        self._accs.clear()
        self._metas.clear()

    # ------------------------------------------------------------------ case side

    def meta(self, st: KeyedStore, part: int) -> ShardMeta:
        found = self._metas.get(st, meta_key(part))
        return found if found is not None else ShardMeta()

    def _update_meta(
        self, st: KeyedStore, part: int, change: Callable[[ShardMeta], ShardMeta]
    ) -> None:
        found = self._metas.get(st, meta_key(part))
        meta = found if found is not None else ShardMeta()
        new = change(meta)
        if new != meta or found is None:
            self._metas.put(st, meta_key(part), new)

    def _note_period(self, st: KeyedStore, part: int, period: str) -> None:
        self._update_meta(
            st, part, lambda m: m.model_copy(update={"periods": sorted({*m.periods, period})})
        )

    def observe(
        self,
        event: ChatEvent,
        findings: Sequence[Finding],
        report: GroundingReport | None,
        source: SourceRef | None,
        st: KeyedStore,
        part: int,
        *,
        screened: bool = True,
        check: Literal["pending", "done"] | None = None,
    ) -> list[Emit]:
        """Fold one event in; the summary for the sampler (when it says something new) and, for
        a selected conversation, its updated case."""
        cid = event.conversation_id
        period = period_of(event.timestamp, self.config.period_kind)
        meta = self.meta(st, part)
        if meta.is_retired(period):
            return []
        closed = period in meta.closed
        # Whether it is selected matters only to a closed period's accumulator and to a live
        # case (vigil scan folds every event of an open period, and asks the store nothing).
        selected = (closed or self.live) and sel_key(part, period, cid) in st
        if not closed or selected:
            key = acc_key(part, period, cid)
            acc = self._accs.get(st, key)
            if acc is None:
                acc = CaseAccumulator(conversation_id=cid, period=period)
            acc.observe(event, findings, self.config, report)
            if screened and source is not None:
                acc.add_source(source, self.config.max_sources)
            self._accs.put(st, key, acc)
            if period not in meta.periods:
                self._note_period(st, part, period)
        out: list[Emit] = []
        told = (_LANGUAGE if event.language else 0) | (_TENANT if event.tenant is not None else 0)
        for f in findings:
            told |= _CATEGORY_BITS[f.category]
        if check is not None or self._news(f"{period}|{cid}", told):
            msg = SampleIn(
                kind="summary",
                summary=summary_from_event(event, findings, None, self.config, period=period),
                partition=part,
                timestamp=event.timestamp.timestamp(),
                event_id=event.event_id,
                check=check,
            )
            out.append(Emit(SAMPLES, cid.encode(), msg, 0))
        if selected and self.live:
            out += self._reconcile(st, part, [(period, cid)])
        return out

    def _news(self, key: str, told: int) -> bool:
        """Whether a summary saying ``told`` (bits of ``_CATEGORY_BITS``, ``_LANGUAGE``,
        ``_TENANT``) tells the sampler anything it was not told (a category, a first language or
        tenant); remembers it. Summaries merge by union and first-wins, so one that adds nothing
        changes nothing: not sending it saves a message per event (and building it). The memory
        is this process's only (a miss after a restart just sends again)."""
        sent = self._sent.get(key)
        if sent is not None and not told & ~sent:
            self._sent.move_to_end(key)
            return False
        self._sent[key] = told if sent is None else sent | told
        self._sent.move_to_end(key)
        if len(self._sent) > self.es.memo_conversations:
            self._sent.popitem(last=False)
        return True

    def _reconcile(
        self,
        st: KeyedStore,
        part: int,
        keys: Iterable[tuple[str, str]],
        written: Sequence[Selection] = (),
    ) -> list[Emit]:
        """The case of each selected ``(period, conversation)`` whose inputs changed.
        ``written``: selections just stored (:meth:`_put_selection`), not decoded again."""
        known = {(s.period, s.conversation_id): s for s in written}
        out: list[Emit] = []
        for period, cid in dict.fromkeys(keys):
            sel_raw = st.get(sel_key(part, period, cid))
            if sel_raw is None:
                continue
            key = acc_key(part, period, cid)
            acc_raw = self._accs.raw(st, key)
            label_raw = st.get(label_key(part, cid))
            digest = case_digest(sel_raw, acc_raw, label_raw)
            ident = case_id(period, cid)
            if self._published.get(ident) == digest:
                continue
            selection = known.get((period, cid)) or Selection.model_validate_json(sel_raw)
            cases = build_cases(
                selection,
                self._as_stored(st, key, acc_raw),
                label_raw,
                self.config,
            )
            out += [Emit(CASES, c.case_id.encode(), c) for c in cases]
            self._published.put(ident, digest)
        return out

    def _stored_acc(self, st: KeyedStore, key: str) -> CaseAccumulator | None:
        """The accumulator at ``key`` as the store will hold it after the next flush."""
        return self._as_stored(st, key, self._accs.raw(st, key))

    def _as_stored(self, st: KeyedStore, key: str, raw: bytes | None) -> CaseAccumulator | None:
        """The accumulator the store holds at ``key`` (encoded ``raw``, just written or read).

        Cases are built from what the store holds, so that a restarted worker builds the same
        ones. When the accumulator was stored whole, that is the one kept in memory (``raw`` was
        encoded from it, or it was decoded from ``raw``), and decoding ``raw`` again would only
        cost time; one shortened to fit its byte ceiling
        (:class:`~services.evalsets.bounds.CaseBound`) is decoded from ``raw``.
        """
        if raw is None:
            return None
        acc: CaseAccumulator | None = self._accs.get(st, key)
        if acc is None or acc.trimmed or not raw.endswith(_WHOLE):
            return CaseAccumulator.model_validate_json(raw)
        return acc

    def cases_for(self, st: KeyedStore, part: int, selection: Selection) -> list[EvalCase]:
        """The cases of a selected conversation from its accumulator and labels."""
        cid, period = selection.conversation_id, selection.period
        return build_cases(
            selection,
            self._stored_acc(st, acc_key(part, period, cid)),
            st.get(label_key(part, cid)),
            self.config,
        )

    def _case_ids(self, st: KeyedStore, part: int, period: str, cid: str) -> list[str]:
        """The ids of the cases published for a conversation (to tombstone them): from its
        accumulator, whether or not it is still selected. A deselection replayed after a
        crash (its state written, its tombstones lost) finds the selection already gone and
        must tombstone the answer cases all the same. An answer case whose answer the
        accumulator has since dropped is not among them."""
        return case_ids(period, cid, self._accs.raw(st, acc_key(part, period, cid)))

    def _keys(self, st: KeyedStore, prefix: str) -> list[str]:
        self.flush()
        return st.keys_with_prefix(prefix)

    def _selected(self, st: KeyedStore, part: int, period: str) -> set[str]:
        prefix = sel_key(part, period, "")
        return {k[len(prefix) :] for k in self._keys(st, prefix)}

    def _deselect(
        self,
        st: KeyedStore,
        part: int,
        period: str,
        cids: Iterable[str],
        selected: set[str] | None = None,
        ids: dict[str, list[str]] | None = None,
    ) -> list[Emit]:
        """Drop the selections and tombstone their cases (idempotent: a replay sends again).

        ``selected``: the conversations of ``period`` selected now (:meth:`_selected`, read
        since the last write of a selection): the others have no selection to drop, and those
        are deleted without a read (at a close, most of the period's conversations were never
        selected, and each read of the store is one more at the close's stall). ``ids``: the
        case ids of the conversations with an accumulator (:meth:`_period_case_ids`)."""
        out: list[Emit] = []
        for cid in sorted(set(cids)):
            if ids is None:
                names = self._case_ids(st, part, period, cid)
            else:
                names = ids[cid] if cid in ids else case_ids(period, cid, None)
            if selected is None:
                st.pop(sel_key(part, period, cid), None)
            elif cid in selected:
                st.delete_present(sel_key(part, period, cid))
            self._published.pop(case_id(period, cid), None)
            if self.live:
                out += [Emit(CASES, key.encode(), None) for key in names]
        return out

    def _period_case_ids(
        self, st: KeyedStore, part: int, period: str, cids: set[str]
    ) -> dict[str, list[str]]:
        """:meth:`_case_ids` of those of ``cids`` with an accumulator in ``period``, read in one
        pass over the period's accumulators in key order (at a close, all of them: a point
        read each cost ~300 µs in RocksDB once the period outgrew its block cache)."""
        self.flush()
        prefix = acc_key(part, period, "")
        found: dict[str, list[str]] = {}
        for key, raw in st.stream_prefix(prefix):
            cid = key[len(prefix) :]
            if cid in cids:
                found[cid] = case_ids(period, cid, raw)
        return found

    def _put_selection(self, st: KeyedStore, part: int, selection: Selection) -> None:
        key = sel_key(part, selection.period, selection.conversation_id)
        raw = selection.model_dump_json().encode()
        if st.get(key) != raw:
            st[key] = raw
        if selection.period not in self.meta(st, part).periods:
            self._note_period(st, part, selection.period)

    def on_decision(self, part: int, decision: Decision, st: KeyedStore) -> Effects:
        """Apply one decision of the sampler to this partition's cases."""
        meta = self.meta(st, part)
        if meta.is_retired(decision.period):
            return Effects()
        if decision.kind == "update":
            return Effects(self._apply_update(st, part, decision))
        if decision.kind == "sync":
            return self._apply_sync(st, part, decision, meta)
        return self._apply_retire(st, part, decision)

    def _apply_update(self, st: KeyedStore, part: int, d: Decision) -> list[Emit]:
        cid = d.conversation_id
        if cid is None:
            raise ValueError("update without a conversation")
        if not self.live:
            return []  # vigil scan applies the final selection only (finish)
        if d.selection is None:
            return self._deselect(st, part, d.period, [cid])
        self._put_selection(st, part, d.selection)
        return self._reconcile(st, part, [(d.period, cid)], [d.selection])

    def _apply_sync(self, st: KeyedStore, part: int, d: Decision, meta: ShardMeta) -> Effects:
        for selection in d.selections:
            self._put_selection(st, part, selection)
        out = (
            self._reconcile(
                st, part, [(d.period, s.conversation_id) for s in d.selections], d.selections
            )
            if self.live
            else []
        )
        if not d.last:
            return Effects(out)
        keep = set(d.keep or ())
        selected = self._selected(st, part, d.period)
        dropped = selected - keep
        closing = d.final and d.period not in meta.closed
        prefix = acc_key(part, d.period, "")
        ids: dict[str, list[str]] | None = None
        if closing and self.live:
            # At the close, every conversation of the period that is not kept gets its case
            # tombstoned, selected here or not: a selection dropped by an earlier sync whose
            # tombstone never reached the topic still has its accumulator here.
            # A tombstone of a key never written costs a few bytes and is compacted away.
            dropped |= {k[len(prefix) :] for k in self._keys(st, prefix)} - keep
            ids = self._period_case_ids(st, part, d.period, dropped)
        out += self._deselect(st, part, d.period, dropped, selected, ids)
        if not closing:
            return Effects(out)

        # The accumulators go only once the broker has the tombstones: they are what names a
        # conversation's answer cases, so a worker killed in between replays the decision
        # (the period not yet closed) and sends them again. Dropping them in the same step
        # lost them: an answer case stayed live with no state to remember it (scale-out test).
        # The selections go at once, so no case of a dropped conversation is built meanwhile.
        def close() -> Effects:
            for key in self._keys(st, prefix):
                if key[len(prefix) :] not in keep:
                    self._accs.delete(st, key, present=True)
            closed = d.period
            self._update_meta(
                st, part, lambda m: m.model_copy(update={"closed": sorted({*m.closed, closed})})
            )
            return Effects()

        return Effects(out, then=close)

    def _apply_retire(self, st: KeyedStore, part: int, d: Decision) -> Effects:
        archive: list[Emit] = []
        for selection in d.selections:
            for case in self.cases_for(st, part, selection):
                archive.append(Emit(ARCHIVE, case.case_id.encode(), case))
        if not d.last:
            return Effects(archive)
        # Archive and tombstones first; the state goes only once the broker has them, so a
        # crash in between replays the decision from intact state.
        selected = sorted(self._selected(st, part, d.period))
        tombstones = [
            Emit(CASES, key.encode(), None)
            for cid in selected
            for key in self._case_ids(st, part, d.period, cid)
        ]

        def drop() -> Effects:
            self._update_meta(st, part, lambda m: _retired(m, d.period))
            for cid in selected:
                st.pop(sel_key(part, d.period, cid), None)
                self._published.pop(case_id(d.period, cid), None)
            for key in self._keys(st, acc_key(part, d.period, "")):
                self._accs.delete(st, key, present=True)
            left = {
                k.split("|", 3)[3]
                for k in self._keys(st, f"{part}|A|") + self._keys(st, f"{part}|S|")
            }
            prefix = label_key(part, "")
            for key in self._keys(st, prefix):
                if key[len(prefix) :] not in left:
                    st.pop(key, None)
            return Effects()

        return Effects([*archive, *tombstones], then=drop)

    def on_label(self, part: int, review: ReviewLabel, st: KeyedStore) -> list[Emit]:
        """A reviewer's label: kept per conversation and answer judged (the latest wins, at
        most one per answer the case side keeps), cases re-published."""
        label = label_from_review(review)
        cid = label.conversation_id
        key = label_key(part, cid)
        old = st.get(key)
        kept = {lab.event_id: lab for lab in decode_labels(old)}
        prev = kept.get(label.event_id)
        if (
            prev is not None
            and prev.labeled_at
            and label.labeled_at
            and prev.labeled_at > label.labeled_at
        ):
            label = prev  # the latest review wins, whatever order they arrive in
        kept[label.event_id] = label
        ordered = sorted(kept.values(), key=lambda lab: lab.labeled_at or _EPOCH)
        raw = encode_labels(ordered[-(MAX_ANSWERS + 1) :])
        if raw != old:
            st[key] = raw
        periods = self.meta(st, part).periods
        selected = [p for p in periods if sel_key(part, p, cid) in st]
        return self._reconcile(st, part, [(p, cid) for p in selected]) if self.live else []

    # ------------------------------------------------------------------ sampler

    def on_sample(
        self,
        sampler: SamplerCore,
        msg: SampleIn,
        *,
        wall: float,
        mono: float,
        commit: bool = True,
    ) -> list[Emit]:
        """Fold one summary into the sampler; the decisions it causes. ``commit=False``: the
        caller commits once for a batch of summaries (the worker: one journal and one write of
        each changed stratum per batch, not per summary), before it sends their decisions.
        Without live cases (vigil scan, export: the sampler's state is scratch, and the end of
        the run commits), a commit is made once per :data:`SCRATCH_COMMIT_EVERY` summaries."""
        decisions = sampler.observe(msg, wall=wall, mono=mono)
        if commit:
            self._uncommitted += 1
            if self.live or self._uncommitted >= SCRATCH_COMMIT_EVERY:
                sampler.commit()
                self._uncommitted = 0
        return self._decision_emits(decisions)

    def _decision_emits(self, decisions: Iterable[Decision]) -> list[Emit]:
        return [
            Emit(
                DECISIONS,
                d.conversation_id.encode() if d.conversation_id else None,
                d,
                d.partition,
            )
            for d in decisions
        ]

    def on_tick(
        self, sampler: SamplerCore, *, wall: float, mono: float, resync: bool
    ) -> tuple[Effects, list[str], list[str]]:
        """Close and retire due periods (and re-send every selection when ``resync``).

        Returns the effects and the periods closed and retired. Retiring is a follow-up chain:
        the final decisions first; the period is forgotten once they are acknowledged.
        """
        plan = sampler.plan(wall=wall, mono=mono)
        effects = Effects()
        for period in plan.close:
            effects.emits += self._decision_emits(sampler.close(period))
            sampler.commit()
        retire = list(plan.retire)

        def retire_next() -> Effects:
            if not retire:
                return Effects()
            period = retire.pop(0)
            step = Effects(self._decision_emits(sampler.retire(period)))

            def forget() -> Effects:
                sampler.forget(period)
                sampler.commit()
                return retire_next()

            step.then = forget
            return step

        if retire:
            first = retire_next()
            effects.emits += first.emits
            effects.then = first.then
        if resync:
            effects.emits += self._decision_emits(sampler.resync())
        return effects, list(plan.close), list(plan.retire)

    # ------------------------------------------------------------------ end of a scan

    def finish(
        self,
        sampler: SamplerCore,
        st: KeyedStore,
        deliver: Callable[[Effects], None],
        part: int = 0,
        *,
        current: str | None = None,
    ) -> tuple[list[str], list[str]]:
        """``vigil scan``'s end: close every period, retire those before the last
        ``active_periods`` (up to the latest seen), publish the final cases. ``deliver`` routes
        effects (decisions back into :meth:`on_decision`, cases and archive to the files).
        Returns the active and the retired periods."""
        periods = sampler.periods()
        for period in periods:
            for d in sampler.close(period):
                deliver(self.on_decision(part, d, st))
            sampler.commit()
        if not periods:
            return [], []
        current = current or periods[-1]
        active = set(active_periods(periods, current, self.config.active_periods))
        start = periods_order_key(current)
        retired = [p for p in periods if p not in active and periods_order_key(p) < start]
        for period in retired:
            for d in sampler.retire(period):
                deliver(self.on_decision(part, d, st))
            sampler.forget(period)
            sampler.commit()
        live = [p for p in periods if p not in set(retired)]
        for period in live:
            cases: list[EvalCase] = []
            for cid in sorted(self._selected(st, part, period)):
                sel_raw = st.get(sel_key(part, period, cid))
                if sel_raw is None:
                    continue
                cases += self.cases_for(st, part, Selection.model_validate_json(sel_raw))
            deliver(Effects([Emit(CASES, c.case_id.encode(), c) for c in cases]))
        return sorted(active & set(periods), key=periods_order_key), retired
