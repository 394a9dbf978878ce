"""The queue reducer: one item per conversation, merging, rounds, claims, leases, labels, expiry,
masking. Pure functions: no broker, no clock (time is passed in)."""

from __future__ import annotations

import random
from datetime import timedelta
from functools import cache

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas.review import (
    ClaimCorrection,
    FindingLabel,
    LabelInput,
    RevealEvent,
    ReviewAction,
    ReviewFlag,
    ReviewItem,
    ReviewLabel,
)
from services.review.caps import AdmissionDecision, CapCounter
from services.review.evidence import make_flag, mask_turn, reveal_turn
from services.review.intake import intake
from services.review.policy import Caps, QueueSettings
from services.review.queue import WITHHELD, Tick, apply, opens_round
from tests.unit.test_review_support import (
    POLICY,
    action,
    at,
    event,
    finding,
    leak_flag,
    verdict,
)

S = POLICY.queue
KEY = b"k"


def _open(flag: ReviewFlag | None = None) -> ReviewItem:
    t = apply(None, flag or leak_flag())
    assert t.outcome == "created" and t.item is not None
    return t.item


def _claimed(by: str = "ann", minutes: float = 1) -> ReviewItem:
    t = apply(_open(), action("claim", by, minutes=minutes))
    assert t.item is not None and t.item.status == "claimed"
    return t.item


def _labels(item: ReviewItem, verdict: str = "true_positive") -> LabelInput:
    return LabelInput(
        findings=[FindingLabel(finding_id=f.finding_id, verdict=verdict) for f in item.findings],  # type: ignore[arg-type]
        harm_severity="none",
    )


# --- flags: create, merge, de-duplicate ---------------------------------------------------------


def test_a_flag_creates_an_open_item_with_masked_evidence() -> None:
    item = _open()
    assert (item.item_id, item.status, item.round, item.priority) == ("c1:1", "open", 1, 90)
    assert item.admission == "admitted" and item.inclusion_probability == 1.0
    (turn,) = item.turns
    assert turn.text == "Write to [EMAIL_ADDRESS] today." and "bob@" not in item.model_dump_json(
        exclude={"originals"}
    )
    (mark,) = turn.marks
    assert turn.text[mark.start : mark.end] == "[EMAIL_ADDRESS]" and mark.masked
    assert item.originals == {item.findings[0].finding_id: "bob@example.com"}
    assert item.expires_at == at() + timedelta(hours=S.open_ttl_hours)


def test_redelivery_changes_nothing_and_new_reasons_merge() -> None:
    item = _open()
    again = apply(item, leak_flag(minutes=5))
    assert (again.outcome, again.changed, again.item) == ("duplicate", False, item)
    ev = event("Take 9 g daily.", eid="e2", turn=2, when=at(6))
    flag = make_flag(
        ev, [finding(ev, "Take 9 g daily.", "grounding.ungrounded_dose")], None, POLICY, at=at(6)
    )
    assert flag is not None
    merged = apply(item, flag)
    assert merged.outcome == "merged" and merged.item is not None
    m = merged.item
    assert (m.item_id, m.priority, m.version, len(m.reasons), len(m.turns)) == (
        "c1:1",
        100,
        2,
        2,
        2,
    )
    assert apply(m, flag).outcome == "duplicate"


def test_a_verdict_reason_merges_once_with_its_verdict() -> None:
    item = _open()
    ev = event("Max 9 g a day.", eid="e3", turn=3, when=at(2))
    flag = make_flag(ev, [], verdict(ev), POLICY, at=at(2))
    assert flag is not None and flag.reasons[0].code == "contradicted_fact"
    m = apply(item, flag).item
    assert m is not None and len(m.verdicts) == 1 and m.priority == 90
    assert apply(m, flag).outcome == "duplicate"


def test_an_observed_turn_only_joins_an_active_item() -> None:
    ev = event("Thanks!", eid="e9", turn=9, role="user", when=at(3))
    obs = make_flag(ev, [], None, POLICY, at=at(3), observe=True)
    assert obs is not None and obs.reasons == []
    assert apply(None, obs).outcome == "ignored" and apply(None, obs).item is None
    t = apply(_open(), obs)
    assert t.outcome == "merged" and t.item is not None and len(t.item.turns) == 2


def test_labeled_item_plus_new_reasons_opens_round_two_but_redelivery_does_not() -> None:
    item = _claimed()
    labeled = apply(item, action("label", minutes=2, label=_labels(item))).item
    assert labeled is not None and labeled.status == "labeled"
    assert not opens_round(labeled, leak_flag(minutes=3))
    assert apply(labeled, leak_flag(minutes=3)).outcome == "duplicate"
    fresh = leak_flag(eid="e7", minutes=4, email="eve@example.org")
    assert opens_round(labeled, fresh)
    t = apply(labeled, fresh)
    assert t.outcome == "created" and t.item is not None
    assert (t.item.item_id, t.item.round, t.item.previous_item_id) == ("c1:2", 2, "c1:1")
    assert t.item.status == "open" and len(t.item.reasons) == 1
    assert t.item.version > labeled.version


def test_overflowed_flag_leaves_state_alone() -> None:
    decision = AdmissionDecision("overflowed", 0.1, "critical")
    t = apply(None, leak_flag(), admission=decision)
    assert (t.outcome, t.item, t.changed) == ("overflowed", None, False)
    sampled = apply(None, leak_flag(), admission=AdmissionDecision("sampled", 0.1, "critical"))
    assert sampled.item is not None and sampled.item.admission == "sampled"
    assert sampled.item.inclusion_probability == 0.1


def test_intake_consults_the_cap_only_to_open_a_round() -> None:
    policy = POLICY.model_copy(
        update={"caps": Caps(per_tenant_per_hour=1, overflow_sample_rate=0.0, exempt_priority=None)}
    )
    first = intake(None, None, leak_flag("a"), policy, key=KEY)
    assert first.transition.outcome == "created" and first.counter is not None
    merged = intake(first.transition.item, first.counter, leak_flag("a", "e2"), policy, key=KEY)
    assert merged.admission is None and merged.counter == first.counter
    over = intake(None, first.counter, leak_flag("b"), policy, key=KEY)
    assert over.transition.outcome == "overflowed" and over.transition.item is None
    assert over.counter is not None and over.counter.overflowed == 1


# --- claims, leases, labels ---------------------------------------------------------------------


def test_two_claimers_one_wins() -> None:
    item = _open()
    first = apply(item, action("claim", "ann", minutes=1))
    assert first.outcome == "applied" and first.item is not None
    second = apply(first.item, action("claim", "bob", minutes=1, action_id="a2"))
    assert second.outcome == "rejected" and second.rejection is not None
    assert second.rejection.code == "claimed" and "ann" in second.rejection.message
    assert second.item == first.item and not second.changed
    (record,) = second.events
    assert isinstance(record, ReviewAction) and record.outcome == "rejected"
    assert record.reason == "claimed"


def test_the_claimer_renews_and_a_lapsed_lease_can_be_taken() -> None:
    item = _claimed("ann", minutes=1)
    assert item.lease_expires_at == at(1) + timedelta(seconds=S.lease_seconds)
    renewed = apply(item, action("claim", "ann", minutes=10, lease_seconds=60)).item
    assert renewed is not None and renewed.lease_expires_at == at(11)
    assert renewed.claimed_at == at(1)
    late = apply(renewed, action("claim", "bob", minutes=11))  # at the lapse instant
    assert late.outcome == "applied" and late.lease_lapsed and late.item is not None
    assert late.item.claimed_by == "bob"


def test_leases_are_capped_and_tick_reopens_a_lapsed_claim() -> None:
    item = apply(_open(), action("claim", minutes=0, lease_seconds=10**6)).item
    assert item is not None and item.lease_expires_at == at() + timedelta(
        seconds=S.max_lease_seconds
    )
    before = apply(item, Tick(at(S.max_lease_seconds / 60 - 1)))
    assert before.outcome == "unchanged" and not before.changed
    after = apply(item, Tick(at(S.max_lease_seconds / 60)))
    assert after.changed and after.lease_lapsed and after.item is not None
    assert (after.item.status, after.item.claimed_by, after.item.lease_expires_at) == (
        "open",
        None,
        None,
    )


def test_only_the_claimer_labels_and_the_label_is_an_event() -> None:
    item = _claimed("ann")
    labels = _labels(item)
    other = apply(item, action("label", "bob", minutes=2, label=labels))
    assert other.rejection is not None and other.rejection.code == "not_claimer"
    unclaimed = apply(_open(), action("label", "ann", minutes=2, label=labels))
    assert unclaimed.rejection is not None and unclaimed.rejection.code == "not_claimed"
    done = apply(item, action("label", "ann", minutes=2, label=labels))
    assert done.outcome == "applied" and done.item is not None
    assert (done.item.status, done.item.labeled_by, done.item.label_id) == (
        "labeled",
        "ann",
        "c1:1:label:1",
    )
    applied, label = done.events
    assert isinstance(applied, ReviewAction) and applied.outcome == "applied"
    assert isinstance(label, ReviewLabel)
    assert [(f.rule_id, f.verdict) for f in label.findings] == [("pii.email", "true_positive")]
    assert label.turns == item.turns and "bob@" not in label.model_dump_json()
    closed = apply(done.item, action("claim", "bob", minutes=3))
    assert closed.rejection is not None and closed.rejection.code == "closed"


def test_label_after_the_lease_lapsed_is_rejected() -> None:
    item = _claimed("ann", minutes=0)
    late = apply(item, action("label", "ann", minutes=S.lease_seconds / 60, label=_labels(item)))
    assert late.rejection is not None and late.rejection.code == "not_claimed"
    assert late.changed and late.item is not None and late.item.status == "open"


def test_label_validation() -> None:
    ev = event("Max 9 g a day.", eid="e3", turn=3, when=at(0))
    flag = make_flag(
        ev,
        [finding(ev, "Max 9 g a day.", "grounding.ungrounded_dose")],
        verdict(ev),
        POLICY,
        at=at(),
    )
    assert flag is not None
    item = apply(apply(None, flag).item, action("claim", minutes=1)).item
    assert item is not None
    fid = item.findings[0].finding_id
    tp = FindingLabel(finding_id=fid, verdict="true_positive")

    def label(**kw: object) -> str | None:
        t = apply(item, action("label", minutes=2, label=LabelInput(**kw)))  # type: ignore[arg-type]
        return t.rejection.message if t.rejection else None

    assert "without verdict" in str(label())
    assert "unknown" in str(
        label(findings=[tp, FindingLabel(finding_id="x", verdict="true_positive")])
    )
    assert "twice" in str(label(findings=[tp, tp]))
    bad_claim = ClaimCorrection(event_id="e3", index=5, status="supported")
    assert "harm_severity is required" in str(label(findings=[tp]))
    assert "names no claim" in str(label(findings=[tp], claims=[bad_claim], harm_severity="none"))
    fix = ClaimCorrection(event_id="e3", index=0, status="supported")
    body = LabelInput(findings=[tp], claims=[fix], note="ok", harm_severity="none")
    t = apply(item, action("label", minutes=2, label=body))
    assert t.rejection is None
    label_event = t.events[1]
    assert isinstance(label_event, ReviewLabel)
    (c,) = label_event.claims
    assert (c.original, c.corrected, c.value, c.sources) == (
        "contradicted",
        "supported",
        "9 g",
        ["pil-amoxicillin-en-01"],
    )


def test_release_only_by_the_claimer_and_stale_item_ids() -> None:
    item = _claimed("ann")
    assert apply(item, action("release", "bob", minutes=2)).rejection.code == "not_claimer"  # type: ignore[union-attr]
    released = apply(item, action("release", "ann", minutes=2)).item
    assert released is not None and released.status == "open" and released.claimed_by is None
    assert apply(released, action("release", "ann", minutes=3)).rejection.code == "not_claimed"  # type: ignore[union-attr]
    stale = apply(item, action("claim", "bob", minutes=2, item_id="c1:0"))
    assert stale.rejection is not None and stale.rejection.code == "stale"
    missing = apply(None, action("claim"))
    assert missing.rejection is not None and missing.rejection.code == "not_found"


def test_a_reveal_needs_the_claim_and_is_logged_with_its_purpose_without_values() -> None:
    unclaimed = apply(_open(), action("reveal", "rita", minutes=4, action_id="r0"))
    assert unclaimed.rejection is not None and unclaimed.rejection.code == "not_claimed"
    (rejected,) = unclaimed.events
    assert isinstance(rejected, ReviewAction) and rejected.outcome == "rejected"
    assert rejected.purpose == "checking whether the leak is real"
    item = _claimed("rita")
    other = apply(item, action("reveal", "ann", minutes=4))
    assert other.rejection is not None and other.rejection.code == "not_claimer"
    t = apply(item, action("reveal", "rita", minutes=4, action_id="r1", purpose="call the user"))
    assert t.outcome == "applied" and not t.changed and t.item == item
    (ev,) = t.events
    assert isinstance(ev, RevealEvent)
    assert (ev.event_id, ev.reviewer, ev.at, ev.entities, ev.purpose) == (
        "r1",
        "rita",
        at(4),
        ["EMAIL_ADDRESS"],
        "call the user",
    )
    assert ev.finding_ids == [item.findings[0].finding_id] and "bob@" not in ev.model_dump_json()


# --- expiry and purge ---------------------------------------------------------------------------


def test_open_items_expire_and_finished_items_are_purged() -> None:
    item = _open()
    ttl = S.open_ttl_hours * 60
    assert apply(item, Tick(at(ttl - 1))).item == item
    t = apply(item, Tick(at(ttl)))
    assert t.item is not None and t.item.status == "expired" and t.expired is not None
    assert apply(t.item, action("claim", minutes=ttl + 1)).rejection.code == "closed"  # type: ignore[union-attr]
    assert apply(t.item, leak_flag(minutes=ttl + 2)).outcome == "duplicate"
    keep = apply(t.item, Tick(at(ttl + S.retention_hours * 60 - 1)))
    assert keep.item is not None
    gone = apply(t.item, Tick(at(ttl + S.retention_hours * 60)))
    assert (gone.item, gone.outcome, gone.changed) == (None, "purged", True)


def test_a_new_reason_after_expiry_opens_a_new_round() -> None:
    item = _open()
    ttl = S.open_ttl_hours * 60
    t = apply(item, leak_flag(eid="e5", minutes=ttl + 1, email="x@y.org"))
    assert t.outcome == "created" and t.expired is not None and t.item is not None
    assert t.item.round == 2


# --- masking ------------------------------------------------------------------------------------


def test_mask_turn_masks_values_and_keeps_marks_aligned() -> None:
    ev = event("Mail bob@x.nl, take 9 g daily, or call 0612345678 now.")
    fs = [
        finding(ev, "bob@x.nl", evidence="b***@***.nl"),
        finding(ev, "take 9 g daily", "grounding.ungrounded_dose"),
        finding(ev, "0612345678", "pii.phone_nl", evidence="******5678"),
    ]
    turn, originals = mask_turn(ev, fs)
    assert turn.text == "Mail b***@***.nl, take 9 g daily, or call ******5678 now."
    spans = {m.rule_id: turn.text[m.start : m.end] for m in turn.marks}
    assert spans == {
        "pii.email": "b***@***.nl",
        "grounding.ungrounded_dose": "take 9 g daily",
        "pii.phone_nl": "******5678",
    }
    assert sorted(originals.values()) == ["0612345678", "bob@x.nl"]
    shown, revealed = reveal_turn(turn, originals)
    assert shown.text == ev.content and len(revealed) == 2
    assert {m.rule_id: shown.text[m.start : m.end] for m in shown.marks}[
        "pii.phone_nl"
    ] == "0612345678"


def test_overlapping_values_merge_and_nothing_leaks() -> None:
    ev = event("id NL91ABNA0417164300 ok")
    fs = [
        finding(ev, "NL91ABNA0417164300", "pii.iban", evidence="[IBAN]"),
        finding(ev, "0417164300", "pii.phone_nl", evidence="[PHONE]"),
    ]
    turn, originals = mask_turn(ev, fs)
    assert turn.text == "id [IBAN] ok" and "0417" not in turn.text
    shown, _ = reveal_turn(turn, originals)
    assert shown.text == ev.content


def test_secrets_are_never_retained_by_default_and_text_is_bounded() -> None:
    ev = event("key sk-abc " + "x" * 5000)
    flag = make_flag(ev, [finding(ev, "sk-abc", "secret.openai_key")], None, POLICY, at=at())
    assert flag is not None and flag.originals == {} and flag.turn is not None
    (gap,) = flag.turn.gaps
    assert flag.turn.truncated and gap.start == S.max_turn_chars
    assert flag.turn.text[gap.start : gap.end] == "\n… 1,021 characters …\n"
    assert "sk-abc" not in flag.model_dump_json()


def test_turns_masked_with_incomparable_findings_are_withheld() -> None:
    ev = event("a bob@x.nl b 0612345678", eid="e1")
    only_mail = make_flag(ev, [finding(ev, "bob@x.nl")], None, POLICY, at=at())
    phone = finding(ev, "0612345678", "pii.phone_nl")
    only_phone = make_flag(ev, [phone], None, POLICY, at=at())
    assert only_mail is not None and only_phone is not None
    item = apply(apply(None, only_mail).item, only_phone).item
    assert item is not None and item.turns[0].text == WITHHELD
    both = make_flag(ev, [finding(ev, "bob@x.nl"), phone], None, POLICY, at=at())
    assert both is not None
    item2 = apply(apply(None, only_mail).item, both).item
    assert item2 is not None and item2.turns[0].text == "a [EMAIL_ADDRESS] b [PHONE_NUMBER]"


def test_bounds_on_turns_and_reasons_are_counted() -> None:
    small = QueueSettings(max_turns=3, max_reasons=2, max_findings=2, lease_seconds=60)
    item = None
    for i in range(5):
        ev = event(f"mail u{i}@x.nl", eid=f"e{i}", turn=i, when=at(i))
        flag = make_flag(ev, [finding(ev, f"u{i}@x.nl")], None, POLICY, at=at(i))
        ctx_ev = event("hello", eid=f"u{i}", turn=i, role="user", when=at(i))
        ctx, _ = mask_turn(ctx_ev, [])
        assert flag is not None
        item = apply(item, flag.model_copy(update={"context": [ctx]}), small).item
    assert item is not None
    assert (len(item.turns), len(item.reasons), len(item.findings)) == (3, 2, 2)
    assert item.dropped_reasons == 3 and item.dropped_turns == 7
    assert all(t.marks for t in item.turns)  # unhighlighted context goes first


# --- properties ---------------------------------------------------------------------------------


@cache
def _flag(cid: str, n: int) -> ReviewFlag:
    """Event ``n`` of conversation ``cid``: a leak; every third event also has a dose claim."""
    ev = event(
        f"Write to u{n}@x.nl. Take 9 g daily.", cid=cid, eid=f"{cid}-e{n}", turn=n, when=at(n % 50)
    )
    fs = [finding(ev, f"u{n}@x.nl")]
    if n % 3 == 0:
        fs.append(finding(ev, "Take 9 g daily.", "grounding.ungrounded_dose"))
    flag = make_flag(ev, fs, None, POLICY, at=at(n % 50))
    assert flag is not None
    return flag


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    conversations=st.integers(1, 80),
    cap=st.sampled_from([None, 3, 20]),
    redeliver=st.floats(0.0, 0.6),
)
def test_one_item_per_flagged_conversation_under_5000_events(
    seed: int, conversations: int, cap: int | None, redeliver: float
) -> None:
    rng = random.Random(seed)
    policy = POLICY.model_copy(
        update={
            "caps": Caps(per_tenant_per_hour=cap, overflow_sample_rate=0.3, exempt_priority=None)
        }
    )
    store: dict[str, ReviewItem] = {}
    counter: CapCounter | None = None
    delivered: list[ReviewFlag] = []
    expected_keys: dict[str, set[str]] = {}
    next_event = dict.fromkeys((f"c{i}" for i in range(conversations)), 0)
    for _ in range(5000):
        if delivered and rng.random() < redeliver:
            flag = rng.choice(delivered)  # a re-delivery (at-least-once) or a repeat
        else:
            cid = f"c{rng.randrange(conversations)}"
            flag = _flag(cid, next_event[cid] % 40)  # events repeat after 40: repeated events
            next_event[cid] += 1
            delivered.append(flag)
        before = store.get(flag.conversation_id)
        result = intake(before, counter, flag, policy, key=KEY)
        counter = result.counter or counter
        t = result.transition
        if t.item is not None:
            store[flag.conversation_id] = t.item
        if t.outcome != "overflowed":
            expected_keys.setdefault(flag.conversation_id, set()).update(
                r.key for r in flag.reasons
            )
        if t.outcome == "duplicate":
            assert t.item == before and not t.changed
    flagged = {f.conversation_id for f in delivered}
    assert set(store) <= flagged
    for cid, item in store.items():
        keys = [r.key for r in item.reasons]
        assert len(keys) == len(set(keys))  # reasons merged, never duplicated
        assert set(keys) == expected_keys[cid]
        assert (item.round, item.item_id, item.status) == (1, f"{cid}:1", "open")
        assert item.priority == max(r.priority for r in item.reasons)
    if cap is None:
        assert set(store) == flagged
    else:
        assert counter is not None
        assert counter.admitted + counter.sampled == len(store)
        assert counter.overflowed == len(flagged - set(store))


@settings(max_examples=25, deadline=None)
@given(
    ops=st.lists(
        st.tuples(st.sampled_from(["flag", "redeliver", "claim", "label"]), st.integers(0, 5)),
        max_size=60,
    )
)
def test_rounds_follow_labels_and_new_reasons_only(ops: list[tuple[str, int]]) -> None:
    item: ReviewItem | None = None
    seen: set[str] = set()
    rounds = 0
    active = False
    sent: list[ReviewFlag] = []
    minute = 0.0
    for op, n in ops:
        minute += 1
        if op in {"flag", "redeliver"}:
            flag = _flag("c1", n) if op == "flag" or not sent else sent[n % len(sent)]
            flag = flag.model_copy(update={"at": at(minute)})
            sent.append(flag)
            keys = {r.key for r in flag.reasons}
            if not active and keys - seen:
                rounds += 1
                active = True
            if active:
                seen |= keys
            item = apply(item, flag).item
        elif op == "claim":
            item = apply(item, action("claim", minutes=minute)).item
        elif item is not None:
            labels = _labels(item)
            t = apply(item, action("label", minutes=minute, label=labels))
            if t.rejection is None:
                active = False
            item = t.item
        assert (item.round if item else 0) == rounds
        assert set(item.seen if item else []) == seen
        assert (item is not None and item.status in {"open", "claimed"}) == active


def test_apply_is_deterministic() -> None:
    flags = [_flag(f"c{i % 3}", i) for i in range(30)]
    runs = []
    for _ in range(2):
        store: dict[str, ReviewItem] = {}
        for f in flags:
            t = apply(store.get(f.conversation_id), f)
            if t.item is not None:
                store[f.conversation_id] = t.item
        runs.append({k: v.model_dump_json() for k, v in store.items()})
    assert runs[0] == runs[1]
