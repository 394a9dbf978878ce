"""Evaluation-set sampler (SPEC §9): periods, salts, strata, bottom-k, moves, shards, restarts."""

from __future__ import annotations

import doctest
import hmac
import importlib
import json
import random
from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from schemas.evalset import FileSource, KafkaSource
from schemas.events import ChatEvent
from services.evalsets import periods as periods_module
from services.evalsets.config import EvalsetConfig
from services.evalsets.periods import kind_of, period_end, period_of, period_start
from services.evalsets.sampler import (
    SALT_DOMAIN,
    ConversationSummary,
    EvalsetSampler,
    MemberRecord,
    PeriodState,
    flag_of,
    merge_states,
    period_salt,
    priority,
    select,
    stratum_key,
    summary_from_event,
)
from services.sampling import Sampler

SECRET = b"evalset-test-secret"
W = "2026-W45"


def summary(
    cid: str,
    *cats: str,
    period: str = W,
    lang: str | None = "nl",
    tenant: str | None = "t",
    src: int | None = None,
) -> ConversationSummary:
    return ConversationSummary(
        conversation_id=cid,
        period=period,
        categories=frozenset(cats),  # type: ignore[arg-type]
        language=lang,
        tenant=tenant,
        sources=(KafkaSource(topic="chat.events", partition=0, offset=src),)
        if src is not None
        else (),
    )


def cfg(**kw: object) -> EvalsetConfig:
    return EvalsetConfig(**kw)  # type: ignore[arg-type]


# --- doctests -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "services.evalsets.periods",
        "services.evalsets.sampler",
        "services.evalsets.rotation",
        "services.evalsets.weighting",
        "services.evalsets.collector",
        "services.evalsets.tables",
    ],
)
def test_doctests(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


# --- periods --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("when", "kind", "period"),
    [
        (datetime(2026, 11, 2, 0, 0, tzinfo=UTC), "iso_week", "2026-W45"),
        (datetime(2026, 11, 1, 23, 59, tzinfo=UTC), "iso_week", "2026-W44"),
        # Monday 06:00 in Hanoi is Sunday 23:00 UTC: still the previous ISO week.
        (datetime(2026, 11, 2, 6, 0, tzinfo=timezone(timedelta(hours=7))), "iso_week", "2026-W44"),
        (datetime(2027, 1, 1, tzinfo=UTC), "iso_week", "2026-W53"),
        (datetime(2026, 12, 31, 23, 0, tzinfo=UTC), "day", "2026-12-31"),
        (datetime(2026, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-2))), "day", "2027-01-01"),
        (datetime(2026, 2, 28, tzinfo=UTC), "month", "2026-02"),
    ],
)
def test_period_of(when: datetime, kind: str, period: str) -> None:
    assert period_of(when, kind) == period  # type: ignore[arg-type]
    assert period_start(period) <= when < period_end(period)


def test_period_bounds_and_errors() -> None:
    assert period_start("2026-W53") == datetime(2026, 12, 28, tzinfo=UTC)
    assert period_end("2026-W53") == datetime(2027, 1, 4, tzinfo=UTC)
    assert period_end("2026-12") == datetime(2027, 1, 1, tzinfo=UTC)
    assert kind_of("2026-11") == "month"
    for bad in ["2026-W54", "2026-13", "2026-02-30", "26-W01", "2026W45", ""]:
        with pytest.raises(ValueError):
            period_start(bad)
    with pytest.raises(ValueError, match="aware"):
        period_of(datetime(2026, 1, 1))
    assert periods_module.periods_order_key("2026-W45") < periods_module.periods_order_key(
        "2026-W46"
    )


# --- salts and priorities -------------------------------------------------------------------------


def test_salt_is_the_documented_hmac_and_rotates() -> None:
    expected = hmac.new(SECRET, SALT_DOMAIN + b"2026-W45", "sha256").digest()
    assert period_salt(SECRET, W) == expected
    assert period_salt(SECRET, "2026-W46") != expected
    assert period_salt(b"other", W) != expected
    with pytest.raises(ValueError):
        period_salt(b"", W)
    with pytest.raises(ValueError):
        period_salt(SECRET, "not a period")


def test_priority_is_the_sampling_hash_under_the_period_salt() -> None:
    salt = period_salt(SECRET, W)
    assert priority(salt, "c1") == Sampler(salt, 1.0).unit("c1")
    s = EvalsetSampler(cfg(), SECRET)
    assert s.priority(W, "c1") == priority(salt, "c1")
    assert s.priority("2026-W46", "c1") != s.priority(W, "c1")
    assert "evalset-test-secret" not in repr(s)


# --- strata ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cats", "flag"),
    [
        ((), "unflagged"),
        (("abstention",), "abstention"),
        (("pii", "abstention"), "pii"),
        (("pii", "secret"), "secret"),
        (("grounding", "medical", "secret"), "medical"),
        (("prompt_leak", "grounding"), "prompt_leak"),
    ],
)
def test_flag_priority(cats: tuple[str, ...], flag: str) -> None:
    assert flag_of(cats, EvalsetConfig().category_priority) == flag


def test_stratum_key_buckets() -> None:
    c = cfg(languages=frozenset({"en", "nl"}), tenants=frozenset({"acme"}))
    assert stratum_key("pii", "NL", "acme", c) == "pii|nl|acme"
    assert stratum_key("pii", "vi", "zorg", c) == "pii|other|other"
    assert stratum_key("pii", None, None, c) == "pii|und|-"
    assert stratum_key("pii", "en", "a|b", cfg()) == "pii|en|a_b"
    # A category left out of the priority list does not flag.
    assert flag_of(["abstention"], ("medical", "pii")) == "unflagged"


def test_config_validation() -> None:
    with pytest.raises(ValidationError, match="twice"):
        cfg(category_priority=("pii", "pii"))
    with pytest.raises(ValidationError):
        cfg(capacities={"pii": -1})
    with pytest.raises(ValidationError):
        cfg(period_kind="year")
    c = cfg(capacities={"pii": 3}, default_capacity=7, reserve=2)
    assert (c.capacity("pii"), c.capacity("medical"), c.reserve_for("pii")) == (3, 7, 2)
    assert cfg(capacities={"pii": 3}).reserve_for("pii") == 3


def test_summary_from_event() -> None:
    ev = ChatEvent(
        schema_version=1,
        event_id="e1",
        conversation_id="c1",
        turn_index=0,
        timestamp=datetime(2026, 11, 5, tzinfo=UTC),
        role="user",
        content="hi",
        language="nl-BE",
        tenant="acme",
    )
    s = summary_from_event(ev, [], FileSource(file="f.jsonl", line=3), cfg(period_kind="day"))
    assert (s.period, s.language, s.tenant, s.categories) == (
        "2026-11-05",
        "nl",
        "acme",
        frozenset(),
    )
    assert s.sources == (FileSource(file="f.jsonl", line=3),)


# --- bottom-k -------------------------------------------------------------------------------------


def brute_bottom_k(sampler: EvalsetSampler, ids: list[str], k: int) -> list[str]:
    return sorted(ids, key=lambda c: (sampler.priority(W, c), c))[:k]


@pytest.mark.parametrize("n", [0, 1, 4, 5, 6, 50, 400])
def test_selection_is_the_keyed_bottom_k_with_probability_k_over_n(n: int) -> None:
    s = EvalsetSampler(cfg(capacities={"unflagged": 5}), SECRET)
    ids = [f"c{i}" for i in range(n)]
    for cid in ids:
        s.add(summary(cid))
    sel = s.selection(W)
    assert sorted(x.conversation_id for x in sel) == sorted(brute_bottom_k(s, ids, 5))
    assert len(sel) == min(5, n)
    for x in sel:
        assert x.stratum == "unflagged|nl|t"
        assert x.stratum_population == n
        assert x.inclusion_probability == pytest.approx(min(5, n) / n)
        assert x.inclusion_final is False
    s.close(W)
    assert all(x.inclusion_final for x in s.selection(W))


def test_add_is_idempotent_and_order_independent() -> None:
    ids = [f"c{i}" for i in range(300)]
    events = [summary(c, *(["pii"] if i % 7 == 0 else []), src=i) for i, c in enumerate(ids)]
    a = EvalsetSampler(cfg(capacities={"unflagged": 10, "pii": 3}), SECRET)
    for e in events:
        a.add(e)
    before = a.states[W].model_dump()
    for e in events[:50]:
        r = a.add(e)
        assert r.accepted and not r.changed and not r.admitted and not r.evicted
    assert a.states[W].model_dump() == before
    b = EvalsetSampler(cfg(capacities={"unflagged": 10, "pii": 3}), SECRET)
    shuffled = events * 2
    random.Random(1).shuffle(shuffled)
    for e in shuffled:
        b.add(e)
    assert b.states[W].model_dump() == before  # strata in another order, same content
    assert dict(b.members) == dict(a.members)


def test_different_secret_gives_a_different_sample_same_secret_the_same() -> None:
    ids = [f"c{i}" for i in range(200)]

    def pick(secret: bytes) -> set[str]:
        s = EvalsetSampler(cfg(capacities={"unflagged": 10}), secret)
        for c in ids:
            s.add(summary(c))
        return {x.conversation_id for x in s.selection(W)}

    assert pick(SECRET) == pick(SECRET)
    assert pick(SECRET) != pick(b"another secret")


def test_every_conversation_has_inclusion_probability_k_over_n() -> None:
    """Bottom-k with keyed hashes is a simple random sample: over many secrets each of N
    conversations is selected k/N of the time (binomial bound, 5 sd)."""
    n, k, runs = 20, 5, 800
    counts = dict.fromkeys(range(n), 0)
    for r in range(runs):
        s = EvalsetSampler(cfg(capacities={"unflagged": k}), f"secret-{r}".encode())
        for i in range(n):
            s.add(summary(f"c{i}"))
        for x in s.selection(W):
            counts[int(x.conversation_id[1:])] += 1
    p = k / n
    sd = (runs * p * (1 - p)) ** 0.5
    assert all(abs(c - runs * p) < 5 * sd for c in counts.values()), counts


# --- moves, reserve, degradation ------------------------------------------------------------------


def test_a_conversation_that_gains_a_flag_moves_and_is_replaced_exactly() -> None:
    s = EvalsetSampler(cfg(capacities={"unflagged": 5, "pii": 5}), SECRET)
    ids = [f"c{i}" for i in range(60)]
    for c in ids:
        s.add(summary(c))
    chosen = brute_bottom_k(s, ids, 5)
    mover = chosen[0]
    r = s.add(summary(mover, "pii"))
    assert (r.previous_stratum, r.stratum) == ("unflagged|nl|t", "pii|nl|t")
    rest = [c for c in ids if c != mover]
    expected_unflagged = set(brute_bottom_k(s, rest, 5))
    by: dict[str, set[str]] = {x.stratum: set() for x in s.selection(W)}
    for x in s.selection(W):
        by[x.stratum].add(x.conversation_id)
    assert by["unflagged|nl|t"] == expected_unflagged
    assert by["pii|nl|t"] == {mover}
    st = s.states[W].strata
    assert (st["unflagged|nl|t"].population, st["pii|nl|t"].population) == (59, 1)
    # The newcomer replacing the mover is admitted; the mover stays selected (in its new
    # stratum: republish its case), so it is neither admitted nor evicted.
    assert set(r.admitted) == expected_unflagged - set(chosen)
    assert mover not in r.evicted
    # Moving down never happens: categories only accumulate.
    assert s.add(summary(mover)).changed is False


def test_reserve_exhausted_degrades_to_a_threshold_sample_with_probability_bound() -> None:
    s = EvalsetSampler(cfg(capacities={"unflagged": 3, "pii": 100}, reserve=0), SECRET)
    for i in range(30):
        s.add(summary(f"c{i}"))
    st = s.states[W].strata["unflagged|nl|t"]
    assert len(st.kept) == 3 and st.bound is not None
    mover = st.kept[0].conversation_id
    s.add(summary(mover, "pii"))
    st = s.states[W].strata["unflagged|nl|t"]
    assert len(st.kept) == 2 and st.bound is not None
    sel = [x for x in s.selection(W) if x.stratum == "unflagged|nl|t"]
    assert len(sel) == 2  # every member below the bound, fewer than k
    assert sel[0].inclusion_probability == pytest.approx(max(st.bound.priority, 2 / 29))
    # With the default reserve (= capacity) the same move keeps the exact bottom-k.
    exact = EvalsetSampler(cfg(capacities={"unflagged": 3, "pii": 100}), SECRET)
    for i in range(30):
        exact.add(summary(f"c{i}"))
    exact.add(summary(mover, "pii"))
    rest = [f"c{i}" for i in range(30) if f"c{i}" != mover]
    got = [x.conversation_id for x in exact.selection(W) if x.stratum == "unflagged|nl|t"]
    assert sorted(got) == sorted(brute_bottom_k(exact, rest, 3))
    assert exact.selection(W)[-1].inclusion_probability == pytest.approx(3 / 29)


# --- close, shards, restart -----------------------------------------------------------------------


def test_closed_period_refuses_new_conversations_and_counts_them() -> None:
    s = EvalsetSampler(cfg(), SECRET)
    s.add(summary("c1", src=1))
    s.close(W)
    assert s.add(summary("c1", src=1)).accepted is False  # re-delivery: not counted
    assert s.states[W].late_after_close == 0
    r = s.add(summary("c2", src=2))
    assert (r.accepted, r.changed) == (False, False)
    assert s.states[W].late_after_close == 1
    assert [x.conversation_id for x in s.selection(W)] == ["c1"]


def test_admitted_and_evicted_track_the_selection() -> None:
    s = EvalsetSampler(cfg(capacities={"unflagged": 4, "pii": 2}), SECRET)
    published: set[str] = set()
    rng = random.Random(3)
    for i in range(500):
        cid = f"c{rng.randrange(150)}"
        cats = ["pii"] if rng.random() < 0.1 else []
        r = s.add(summary(cid, *cats, src=i))
        assert not set(r.admitted) & set(r.evicted)
        published |= set(r.admitted)
        published -= set(r.evicted)
    assert published == {x.conversation_id for x in s.selection(W)}


def test_shards_merge_into_the_single_sampler_result() -> None:
    c = cfg(capacities={"unflagged": 6, "pii": 2})
    single = EvalsetSampler(c, SECRET)
    shards = [EvalsetSampler(c, SECRET, shard=str(p)) for p in range(3)]
    rng = random.Random(7)
    for i in range(400):
        cid = f"c{i}"
        cats = ["pii"] if rng.random() < 0.2 else []
        later = ["pii"] if rng.random() < 0.1 else []
        lang = rng.choice(["en", "nl"])
        for sampler in (single, shards[i % 3]):
            sampler.add(summary(cid, *cats, lang=lang))
            if later:
                sampler.add(summary(cid, *later, lang=lang))
    states = [sh.states[f"{W}#{i}"] for i, sh in enumerate(shards)]
    members = {k: v for sh in shards for k, v in sh.members.items()}
    merged = merge_states(states)
    assert select(merged, members) == single.selection(W)
    with pytest.raises(ValueError):
        merge_states([])
    with pytest.raises(ValueError, match="different periods"):
        merge_states([PeriodState(period=W), PeriodState(period="2026-W46")])


def test_restart_from_serialised_state_with_redelivery_continues_without_duplicates_or_gaps() -> (
    None
):
    c = cfg(capacities={"unflagged": 8, "pii": 3, "medical": 2})
    rng = random.Random(11)
    stream = []
    for i in range(1200):
        cid = f"c{rng.randrange(400)}"
        cats = rng.choice([[], [], [], ["pii"], ["medical"]])
        stream.append(summary(cid, *cats, lang=rng.choice(["en", "nl"]), src=i))
    whole = EvalsetSampler(c, SECRET)
    for e in stream:
        whole.add(e)
    first = EvalsetSampler(c, SECRET)
    for e in stream[:700]:
        first.add(e)
    # What a Faust table would hold: JSON values per key.
    saved_states = {k: v.model_dump_json() for k, v in first.states.items()}
    saved_members = {k: v.model_dump_json() for k, v in first.members.items()}
    second = EvalsetSampler(
        c,
        SECRET,
        states={k: PeriodState.model_validate_json(v) for k, v in saved_states.items()},
        members={k: MemberRecord.model_validate_json(v) for k, v in saved_members.items()},
    )
    for e in stream[600:]:  # the last 100 before the crash are delivered again
        second.add(e)
    assert second.selection(W) == whole.selection(W)
    assert second.states[W].model_dump() == whole.states[W].model_dump()


def test_forget_drops_state_and_member_records_of_a_period() -> None:
    s = EvalsetSampler(cfg(), SECRET)
    s.add(summary("c1"))
    s.add(summary("c1", period="2026-W46"))
    assert s.periods() == [W, "2026-W46"]
    assert s.forget(W) == 1
    assert s.periods() == ["2026-W46"] and list(s.members) == ["2026-W46|c1"]


def test_period_kind_must_match_config() -> None:
    s = EvalsetSampler(cfg(period_kind="day"), SECRET)
    with pytest.raises(ValueError, match="not a day period"):
        s.add(summary("c1"))
    with pytest.raises(ValueError):
        EvalsetSampler(cfg(), b"")


def test_sources_are_kept_bounded_and_counted() -> None:
    s = EvalsetSampler(cfg(max_sources=3), SECRET)
    for i in range(5):
        s.add(summary("c1", src=i))
    rec = s.members[f"{W}|c1"]
    assert [x.offset for x in rec.sources] == [0, 1, 2]  # type: ignore[union-attr]
    assert rec.sources_dropped == 2
    assert json.loads(rec.model_dump_json())["sources"][0] == {
        "topic": "chat.events",
        "partition": 0,
        "offset": 0,
    }
