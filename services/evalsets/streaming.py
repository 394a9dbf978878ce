"""The evaluation sets in the streaming workers, as pure parts (no Faust, no clock of its own):
the messages, the sampler's state machine (:class:`SamplerCore`) and the keys of the per-partition
case state. The Faust wiring is ``services/streaming/features/evalsets.py``.

One sampler for the whole stream
    A stratum's capacity is a capacity of the stream, as in ``vigil scan``: one sampler per input
    partition would draw ``k`` per stratum *and partition*, with inclusion probabilities of a
    partition. So every screened (and every checked) event sends a small :class:`SampleIn` to
    partition 0 of ``<app>-evalset-samples``; the one agent there runs :class:`SamplerCore`
    around the same :class:`~services.evalsets.sampler.EvalsetSampler` as scan and answers with
    decisions (:class:`Decision`) on ``<app>-evalset-decisions``, sent to the partition that
    holds the conversation's events (Kafka's default partitioner on the conversation id, as
    ``vigil replay`` keys them). There the conversation's
    :class:`~services.evalsets.cases.CaseAccumulator` becomes the case published to
    ``vigil.evalset``. Summaries are a few hundred bytes; the
    sampler handles thousands per second.

Crashes
    Delivery is at least once. The sampler is idempotent per summary, and a decision is a level
    ("this conversation's selection is now X"), never an edge. A message's table writes land
    together (:meth:`SamplerCore.commit` writes a journal first); a decision lost in a crash is
    repaired by the whole selection the worker re-sends after recovery (and every ``resync``
    interval). Only retirement waits for the broker: its decisions are acknowledged before the
    period is forgotten. The writes are staged
    (:class:`~services.evalsets.tables.StagedMapping`) so a failure drops them all.

State
    The sampler's period states (:class:`PeriodState`) stay in memory and are persisted per stratum
    (``S|<period>|<stratum>``), so a new conversation rewrites one stratum, not the period; members
    are ``M|<period>|<conversation>``, claim checks in flight ``K|<event_id>``, period flags
    ``P|<period>``, retirement ``R``. Case state is keyed ``<partition>|A|...`` (accumulators),
    ``|S|`` (selections), ``|B|`` (digest of the last published case), ``|L|`` (labels) and
    ``|M`` (:class:`ShardMeta`).

Closing and rotation
    Event time drives both. The watermark is the smallest newest-event time over the input
    partitions that sent something in the last ``idle_seconds`` (an idle partition does not hold
    it back). A period closes when the watermark has passed its end by ``grace_seconds`` and no
    claim check of its answers is still in flight (at most ``check_wait_seconds``); periods older
    than the last ``active_periods`` (calendar periods up to the watermark's) retire: their final
    cases go to the archive, then their tombstones to ``vigil.evalset``, then the state is dropped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Container, Iterable, Mapping, MutableMapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.evalset import EvalCase, EvalLabel
from services.dataflow.partitioning import partition_of
from services.evalsets.cases import CaseAccumulator, case_id, stored_case_ids
from services.evalsets.config import EvalsetConfig
from services.evalsets.periods import period_end, period_of, period_start, shift_period
from services.evalsets.sampler import EvalsetSampler
from services.evalsets.state import (
    ConversationSummary,
    MemberRecord,
    PeriodState,
    Selection,
    StratumState,
    select,
)
from services.evalsets.tables import ModelMapping, PrefixedMapping, StagedMapping

__all__ = [
    "CHUNK",
    "MEMBER_MEMO",
    "MEMBER_MEMO_BYTES",
    "PARTITION_MEMO",
    "Decision",
    "PendingCheck",
    "SampleIn",
    "SamplerCore",
    "ShardMeta",
    "TickPlan",
    "Watermarks",
    "acc_key",
    "build_cases",
    "case_digest",
    "case_ids",
    "decode_labels",
    "encode_labels",
    "label_key",
    "meta_key",
    "partition_for",
    "pub_key",
    "sel_key",
]

#: Selections per decision message (a message stays well below Kafka's 1 MB default).
CHUNK: Final = 500
#: Key of the sampler's journal record, and the most writes a journaled commit holds.
JOURNAL: Final = "J"
JOURNAL_MAX: Final = 512
#: Order of a commit's writes by key prefix: retirement mark, period flags, strata, checks, members.
_WRITE_ORDER: Final = {"R": 0, "P|": 1, "S|": 2, "K|": 3, "M|": 4}
#: Member records the sampler keeps decoded (a conversation's next summary reads its record
#: again, and the selection sent for it reads it once more), and the most bytes of their
#: encodings (a record holds up to ``max_sources`` sources, a few KiB).
MEMBER_MEMO: Final = 4096
MEMBER_MEMO_BYTES: Final = 4 * 1024 * 1024
#: Conversations whose partition :func:`partition_for` remembers: murmur2 in Python costs
#: more than the rest of an update. Ids are at most 256 characters (``Ident``), so this
#: bounds the memory as well (under 3 MiB).
PARTITION_MEMO: Final = 8192


class _Msg(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SampleIn(_Msg):
    """A message to the sampler: one event's summary, or a tick of a worker's timer."""

    kind: Literal["summary", "tick"]
    summary: ConversationSummary | None = None
    #: Input partition the event was read from, and its event time (epoch seconds).
    partition: int | None = Field(default=None, ge=0)
    timestamp: float | None = None
    event_id: str | None = None
    #: ``pending``: screening asked for a claim check of this answer; ``done``: it ran.
    check: Literal["pending", "done"] | None = None


class Decision(_Msg):
    """A message to a case partition.

    ``update``: one conversation's selection in a period (``None``: not selected). ``sync``: this
    partition's whole selection of a period, in chunks; the last chunk lists every selected
    conversation (``keep``) so others are dropped; ``final`` once the period closed. ``retire``:
    archive these cases; the last chunk also tombstones and drops the period.
    """

    kind: Literal["update", "sync", "retire"]
    period: str
    partition: int = Field(ge=0)
    conversation_id: str | None = None
    selection: Selection | None = None
    selections: list[Selection] = Field(default_factory=list)
    last: bool = True
    keep: list[str] | None = None
    final: bool = False


class PendingCheck(_Msg):
    period: str
    at: float = Field(description="Wall-clock time (epoch seconds) the check was requested.")


class _PeriodFlags(_Msg):
    closed: bool = False
    late_after_close: int = 0


class _SamplerMeta(_Msg):
    retired_through: str | None = None


class TickPlan(_Msg):
    close: list[str]
    retire: list[str]


@lru_cache(maxsize=PARTITION_MEMO)
def partition_for(conversation_id: str, partitions: int) -> int:
    """Kafka's default partition of a message keyed by ``conversation_id`` (murmur2)."""
    return partition_of(conversation_id, partitions)


def _text(value: bytes | str | None) -> str | None:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _is_retired(period: str, retired_through: str | None) -> bool:
    return retired_through is not None and period_start(period) <= period_start(retired_through)


class Watermarks:
    """Event-time watermark over the input partitions, ignoring idle ones (in memory only: a
    restarted sampler waits for every partition, or ``idle_seconds``, before it closes)."""

    def __init__(self, partitions: int, idle_seconds: float, now: float) -> None:
        self.partitions = partitions
        self.idle_seconds = idle_seconds
        self._since = now
        self._seen: dict[int, tuple[float, float]] = {}

    def observe(self, partition: int, event_time: float, now: float) -> None:
        newest, _ = self._seen.get(partition, (event_time, now))
        self._seen[partition] = (max(newest, event_time), now)

    def closing(self, now: float) -> float | None:
        """The watermark, or ``None`` while a partition not heard from may still be busy."""
        unheard = any(p not in self._seen for p in range(self.partitions))
        if unheard and now - self._since < self.idle_seconds:
            return None
        active = [w for w, last in self._seen.values() if now - last < self.idle_seconds]
        if active:
            return min(active)
        return max((w for w, _ in self._seen.values()), default=None)


def _selections_of(
    state: PeriodState,
    members: Mapping[str, MemberRecord],
    strata: Iterable[str],
    only: Container[str],
) -> dict[str, Selection]:
    """The selections of conversations ``only`` within ``strata`` (not the whole strata: each
    new member would otherwise cost a selection per member)."""
    return {s.conversation_id: s for s in select(state, members, strata=strata, only=only)}


class SamplerCore:
    """The global sampler over a raw table (``str -> bytes``), with staged writes.

    Call :meth:`observe` per summary, :meth:`plan` / :meth:`close` / :meth:`retire` /
    :meth:`forget` on ticks, then send the decisions and :meth:`commit` once they are
    acknowledged (or :meth:`invalidate` to drop what is staged and reload).
    """

    def __init__(
        self,
        config: EvalsetConfig,
        secret: bytes,
        raw: MutableMapping[str, Any],
        *,
        partitions: int,
        grace_seconds: float,
        idle_seconds: float,
        check_wait_seconds: float,
        now: float,
        journal_bytes: int | None = None,
        journal: bool = True,
    ) -> None:
        self.config = config
        #: The largest journal record (the store's value bound); a larger commit goes without.
        self.journal_bytes = journal_bytes
        #: Whether a commit writes its journal first. ``False`` for state that nothing ever
        #: reloads after a crash (vigil scan's scratch file): the journal would only cost time.
        self.journaled = journal
        self._secret = secret
        self._raw = raw
        self._staged: StagedMapping[bytes | str] = StagedMapping(raw)
        self.partitions = partitions
        self.grace_seconds = grace_seconds
        self.check_wait_seconds = check_wait_seconds
        self.watermarks = Watermarks(partitions, idle_seconds, now)
        #: What :meth:`observe` did with the last summary: ``accepted``, ``late`` (its period had
        #: closed), ``repeat`` (a re-delivery after close) or ``retired`` (its period is gone).
        self.last_outcome: Literal["accepted", "late", "repeat", "retired"] = "accepted"
        self._loaded = False
        self._dirty: set[tuple[str, str]] = set()
        self._dirty_flags: set[str] = set()
        self.pending: dict[str, PendingCheck] = {}
        self._meta = _SamplerMeta()
        self.sampler = EvalsetSampler(config, secret)

    def __repr__(self) -> str:
        return f"SamplerCore(partitions={self.partitions}, loaded={self._loaded})"

    # ------------------------------------------------------------------ state

    def invalidate(self) -> None:
        """Drop staged writes and reload from the table at next use (after a failed send, or
        when the table was recovered after a rebalance)."""
        self._staged.discard()
        self._loaded = False

    def _ensure(self) -> None:
        if self._loaded:
            return
        self._staged.discard()
        journal = self._raw.get(JOURNAL)
        if journal:
            # The last small commit may have landed only in part: finish it (see commit()).
            for key, value in json.loads(journal).items():
                if value is None:
                    self._staged.pop(key, None)
                else:
                    self._staged[key] = value.encode("utf-8")
        states: dict[str, PeriodState] = {}
        pending: dict[str, PendingCheck] = {}
        meta = _SamplerMeta()
        members: list[str] = []
        for key in list(self._staged):
            value = self._staged.get(key)
            if value is None:
                continue
            if key.startswith("S|"):
                _, period, stratum = key.split("|", 2)
                state = states.setdefault(period, PeriodState(period=period))
                state.strata[stratum] = StratumState.model_validate_json(value)
            elif key.startswith("P|"):
                period = key[2:]
                flags = _PeriodFlags.model_validate_json(value)
                state = states.setdefault(period, PeriodState(period=period))
                state.closed = flags.closed
                state.late_after_close = flags.late_after_close
            elif key.startswith("K|"):
                pending[key[2:]] = PendingCheck.model_validate_json(value)
            elif key == "R":
                meta = _SamplerMeta.model_validate_json(value)
            elif key.startswith("M|"):
                members.append(key)
        for key in members:  # left over by a retirement that was cut short
            if _is_retired(key.split("|", 2)[1], meta.retired_through):
                self._staged.pop(key, None)
        view = ModelMapping(
            PrefixedMapping(self._staged, "M|"),
            MemberRecord,
            memo=MEMBER_MEMO,
            memo_bytes=MEMBER_MEMO_BYTES,
        )
        self.sampler = EvalsetSampler(self.config, self._secret, states=states, members=view)
        self.pending = pending
        self._meta = meta
        self._dirty.clear()
        self._dirty_flags.clear()
        self._loaded = True

    def commit(self) -> int:
        """Write the changed strata and flags, then every staged write, to the table.

        A message's writes must land together: a member record without its stratum (or the
        reverse) would make the replayed message count the conversation never (or twice). The
        changelog keeps the order of one partition, so a small commit first writes all its
        changes as one journal record (``J``), which a reload finishes; a large one (a
        retirement, or a journal over ``journal_bytes``, the largest changelog record) drops the
        journal, then writes the retirement mark and the period's state before its members,
        whose leftovers a reload deletes.
        """
        self._ensure()
        states = self.sampler.states
        for period in self._dirty_flags:
            state = states.get(period)
            key = f"P|{period}"
            if state is None:
                self._staged.pop(key, None)
            else:
                flags = _PeriodFlags(closed=state.closed, late_after_close=state.late_after_close)
                self._staged[key] = flags.model_dump_json().encode()
        for period, stratum in self._dirty:
            state = states.get(period)
            found = state.strata.get(stratum) if state is not None else None
            key = f"S|{period}|{stratum}"
            if found is None:
                self._staged.pop(key, None)
            else:
                self._staged[key] = found.model_dump_json().encode()
        self._dirty.clear()
        self._dirty_flags.clear()
        changes = self._staged.changes()
        self._staged.discard()
        if not changes:
            return 0
        if self.journaled:
            self._journal(changes)
        for key, value in sorted(changes.items(), key=lambda kv: _WRITE_ORDER.get(kv[0][:2], 9)):
            if value is None:
                self._raw.pop(key, None)
            else:
                self._raw[key] = value
        return len(changes)

    def _journal(self, changes: Mapping[str, bytes | str | None]) -> None:
        journal = (
            json.dumps({k: _text(v) for k, v in changes.items()}, separators=(",", ":")).encode(
                "utf-8"
            )
            if len(changes) <= JOURNAL_MAX
            else None
        )
        if journal is not None and (
            self.journal_bytes is None or len(journal) <= self.journal_bytes
        ):
            self._raw[JOURNAL] = journal
        else:
            self._raw.pop(JOURNAL, None)

    @property
    def retired_through(self) -> str | None:
        self._ensure()
        return self._meta.retired_through

    def is_retired(self, period: str) -> bool:
        return _is_retired(period, self.retired_through)

    def periods(self) -> list[str]:
        self._ensure()
        return self.sampler.periods()

    def selection(self, period: str) -> list[Selection]:
        self._ensure()
        return self.sampler.selection(period)

    # ------------------------------------------------------------------ summaries

    def observe(self, msg: SampleIn, *, wall: float, mono: float) -> list[Decision]:
        """Fold one summary in; the updates of conversations whose selection changed."""
        self._ensure()
        summary = msg.summary
        if msg.kind != "summary" or summary is None:
            raise ValueError("not a summary")
        period = summary.period
        if msg.partition is not None and msg.timestamp is not None:
            self.watermarks.observe(msg.partition, msg.timestamp, mono)
        if self.is_retired(period):
            self.last_outcome = "retired"
            return []
        if msg.event_id is not None and msg.check == "pending":
            check = PendingCheck(period=period, at=wall)
            self.pending[msg.event_id] = check
            self._staged[f"K|{msg.event_id}"] = check.model_dump_json().encode()
        elif (
            msg.event_id is not None
            and msg.check == "done"
            and self.pending.pop(msg.event_id, None) is not None
        ):
            self._staged.pop(f"K|{msg.event_id}", None)
        before = self.sampler.state(period)
        late_before = before.late_after_close if before is not None else None
        result = self.sampler.add(summary)
        state = self.sampler.state(period)
        if state is None:
            return []
        late = late_before is not None and state.late_after_close != late_before
        if late_before is None or late:
            self._dirty_flags.add(period)
        self.last_outcome = "accepted" if result.accepted else "late" if late else "repeat"
        if not result.changed or result.stratum == result.previous_stratum:
            return []
        touched = {s for s in (result.stratum, result.previous_stratum) if s is not None}
        self._dirty.update((period, s) for s in touched)
        cid = summary.conversation_id
        moved = result.previous_stratum is not None and cid not in result.admitted
        if not result.admitted and not moved:
            # A new member that joined no selection (most): only evictions to send, and those
            # carry no selection, so none is read.
            return [self._update(period, c, None) for c in result.evicted]
        wanted = {*result.admitted, cid}
        selected = _selections_of(state, self.sampler.members, touched, wanted)
        out = [self._update(period, c, selected.get(c)) for c in result.admitted]
        out += [self._update(period, c, None) for c in result.evicted]
        if moved and cid in selected:
            out.append(self._update(period, cid, selected[cid]))
        return out

    def _update(self, period: str, cid: str, selection: Selection | None) -> Decision:
        return Decision(
            kind="update",
            period=period,
            partition=partition_for(cid, self.partitions),
            conversation_id=cid,
            selection=selection,
        )

    # ------------------------------------------------------------------ ticks

    def settled(self, period: str, wall: float) -> bool:
        """No claim check of the period's answers is still expected."""
        return not any(
            c.period == period and wall - c.at < self.check_wait_seconds
            for c in self.pending.values()
        )

    def plan(self, *, wall: float, mono: float) -> TickPlan:
        """Which periods to close and which to retire now."""
        self._ensure()
        mark = self.watermarks.closing(mono)
        if mark is None:
            return TickPlan(close=[], retire=[])
        periods = self.sampler.periods()
        states = self.sampler.states
        close = [
            p
            for p in periods
            if not states[p].closed
            and period_end(p).timestamp() + self.grace_seconds <= mark
            and self.settled(p, wall)
        ]
        current = period_of(datetime.fromtimestamp(mark, UTC), self.config.period_kind)
        oldest = period_start(shift_period(current, -(self.config.active_periods - 1)))
        retire = [
            p for p in periods if period_start(p) < oldest and (states[p].closed or p in close)
        ]
        return TickPlan(close=close, retire=retire)

    def close(self, period: str) -> list[Decision]:
        """Close ``period`` (final π; late summaries refused); its final selection to send."""
        self._ensure()
        self.sampler.close(period)
        self._dirty_flags.add(period)
        for event_id in [e for e, c in self.pending.items() if c.period == period]:
            del self.pending[event_id]
            self._staged.pop(f"K|{event_id}", None)
        return self.sync(period)

    def sync(self, period: str) -> list[Decision]:
        """Every partition's whole selection of ``period`` (``final`` when closed)."""
        self._ensure()
        state = self.sampler.state(period)
        final = state is not None and state.closed
        return self._by_partition("sync", period, self.sampler.selection(period), final)

    def resync(self) -> list[Decision]:
        return [d for p in self.periods() for d in self.sync(p)]

    def retire(self, period: str) -> list[Decision]:
        """The final cases of ``period`` to archive, per partition (then :meth:`forget` it)."""
        self._ensure()
        return self._by_partition("retire", period, self.sampler.selection(period), True)

    def forget(self, period: str) -> int:
        """Drop a retired period's state (staged); summaries of it are refused from now on."""
        self._ensure()
        state = self.sampler.state(period)
        if state is not None:
            self._dirty.update((period, s) for s in state.strata)
        for key in [k for k in self._staged if k.startswith(f"S|{period}|")]:
            self._dirty.add((period, key.split("|", 2)[2]))
        self._dirty_flags.add(period)
        dropped = self.sampler.forget(period)
        for event_id in [e for e, c in self.pending.items() if c.period == period]:
            del self.pending[event_id]
            self._staged.pop(f"K|{event_id}", None)
        if not self.is_retired(period):
            self._meta = _SamplerMeta(retired_through=period)
            self._staged["R"] = self._meta.model_dump_json().encode()
        return dropped

    def _by_partition(
        self,
        kind: Literal["sync", "retire"],
        period: str,
        selections: list[Selection],
        final: bool,
    ) -> list[Decision]:
        groups: dict[int, list[Selection]] = {}
        for sel in selections:
            groups.setdefault(partition_for(sel.conversation_id, self.partitions), []).append(sel)
        out: list[Decision] = []
        for part in range(self.partitions):
            sels = groups.get(part, [])
            pieces = [sels[i : i + CHUNK] for i in range(0, len(sels), CHUNK)] or [[]]
            for i, piece in enumerate(pieces):
                last = i == len(pieces) - 1
                out.append(
                    Decision(
                        kind=kind,
                        period=period,
                        partition=part,
                        selections=piece,
                        last=last,
                        keep=[s.conversation_id for s in sels] if last else None,
                        final=final,
                    )
                )
        return out


# --------------------------------------------------------------------------- case partitions


class ShardMeta(_Msg):
    """What a case partition knows about periods: which have local state, which closed, and
    up to which one everything retired."""

    periods: list[str] = Field(default_factory=list)
    closed: list[str] = Field(default_factory=list)
    retired_through: str | None = None

    def is_retired(self, period: str) -> bool:
        return _is_retired(period, self.retired_through)


def acc_key(partition: int, period: str, conversation_id: str) -> str:
    return f"{partition}|A|{period}|{conversation_id}"


def sel_key(partition: int, period: str, conversation_id: str) -> str:
    return f"{partition}|S|{period}|{conversation_id}"


def pub_key(partition: int, case: str) -> str:
    return f"{partition}|B|{case}"


def label_key(partition: int, conversation_id: str) -> str:
    return f"{partition}|L|{conversation_id}"


def meta_key(partition: int) -> str:
    return f"{partition}|M"


def case_digest(selection: bytes, accumulator: bytes | None, label: bytes | None) -> bytes:
    """What a published case was built from: publish again only when this changes."""
    h = hashlib.sha256()
    for part in (selection, accumulator or b"", label or b""):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()[:32].encode("ascii")


def decode_labels(raw: bytes | None) -> list[EvalLabel]:
    """The labels kept for a conversation: a JSON list (one per answer judged), or one label
    (what earlier versions kept)."""
    if not raw:
        return []
    if raw.lstrip()[:1] == b"[":
        return [EvalLabel.model_validate(x) for x in json.loads(raw)]
    return [EvalLabel.model_validate_json(raw)]


def encode_labels(labels: Iterable[EvalLabel]) -> bytes:
    return ("[" + ",".join(lab.model_dump_json() for lab in labels) + "]").encode()


def build_cases(
    selection: Selection,
    accumulator: CaseAccumulator | bytes | None,
    labels: bytes | None,
    config: EvalsetConfig,
) -> list[EvalCase]:
    """The cases of a selected conversation from its accumulator (decoded, or as stored) and
    raw labels (the conversation's case first, then one per other critical checked answer).

    The sampler's records carry no sources (summaries travel without them): the cases take the
    Kafka offsets its accumulator collected.
    """
    cid, period = selection.conversation_id, selection.period
    acc = _accumulator(accumulator) or CaseAccumulator(conversation_id=cid, period=period)
    labs = [lab for lab in decode_labels(labels) if lab.conversation_id == cid]
    sel = selection.model_copy(update={"sources": ()}) if selection.sources else selection
    return acc.to_cases(sel, config, labs)


def case_ids(
    period: str, conversation_id: str, accumulator: CaseAccumulator | bytes | None
) -> list[str]:
    """The ids of the cases :func:`build_cases` gives for a conversation of a period (whatever
    its selection: they depend on the accumulator only)."""
    if isinstance(accumulator, CaseAccumulator):
        return accumulator.case_ids()
    if not accumulator:
        return [case_id(period, conversation_id)]
    return stored_case_ids(period, conversation_id, accumulator)


def _accumulator(value: CaseAccumulator | bytes | None) -> CaseAccumulator | None:
    if isinstance(value, CaseAccumulator):
        return value
    return CaseAccumulator.model_validate_json(value) if value else None
