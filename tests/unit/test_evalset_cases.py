"""Evaluation cases: masking with finding spans, the evaluated answer and its question, verdicts,
label joins, and the EvalCase / EvalLabel contracts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from schemas.evalset import EvalCase, EvalLabel, FileSource
from schemas.events import ChatEvent, Claim, Passage
from schemas.outputs import Finding
from schemas.verdicts import CitationIssue, ClaimCheck, ClaimVerdict, GroundingReport
from services.evalsets.cases import CaseAccumulator, attach_labels, build_case, case_id
from services.evalsets.config import EvalsetConfig
from services.evalsets.masking import MASKED_TEXT, mask_text, mask_values
from services.evalsets.sampler import Selection

T0 = datetime(2026, 11, 3, 9, 0, tzinfo=UTC)
W = "2026-W45"
CFG = EvalsetConfig()


def event(turn: int, role: str, content: str, conv: str = "c1", **kw: Any) -> ChatEvent:
    return ChatEvent(
        schema_version=1,
        event_id=f"{conv}-e{turn}",
        conversation_id=conv,
        turn_index=turn,
        timestamp=T0 + timedelta(minutes=turn),
        role=role,  # type: ignore[arg-type]
        content=content,
        language="en",
        tenant="acme",
        **kw,
    )


def finding(
    ev: ChatEvent,
    value: str,
    category: str = "pii",
    evidence: str = "***",
    entity: str = "EMAIL_ADDRESS",
    nth: int = 0,
) -> Finding:
    start = ev.content.index(value)
    for _ in range(nth):
        start = ev.content.index(value, start + 1)
    return Finding(
        finding_id=f"{ev.event_id}:{category}:{start}",
        event_id=ev.event_id,
        conversation_id=ev.conversation_id,
        turn_index=ev.turn_index,
        timestamp=ev.timestamp,
        role=ev.role,
        rule_id=f"r.{category}",
        category=category,  # type: ignore[arg-type]
        entity=entity,
        severity="medium",
        start=start,
        end=start + len(value),
        evidence=evidence,
        direction="input" if ev.role == "user" else "leak",
        score=0.9,
        explanation="test",
    )


def report(ev: ChatEvent, claims: list[tuple[str, str, bool]], **kw: Any) -> GroundingReport:
    checks = [
        ClaimCheck(
            text=t,
            start=ev.content.index(t),
            end=ev.content.index(t) + len(t),
            kind=kind,  # type: ignore[arg-type]
            grounded=g,
            method="deterministic",
            support=1.0 if g else 0.1,
            best_doc=None,
        )
        for t, kind, g in claims
    ]
    return GroundingReport(
        event_id=ev.event_id,
        conversation_id=ev.conversation_id,
        turn_index=ev.turn_index,
        timestamp=ev.timestamp,
        stratum="sampled",
        inclusion_probability=0.1,
        faithfulness=(sum(g for *_, g in claims) / len(claims)) if claims else 1.0,
        claims=checks,
        ungrounded=[t for t, _, g in claims if not g],
        fabricated_citations=kw.get("fabricated", []),
        unsupported_citations=kw.get("unsupported", []),
        fact_checks=kw.get("fact_checks", []),
    )


def selection(conv: str = "c1", stratum: str = "pii|en|acme", pi: float = 0.5) -> Selection:
    return Selection(
        period=W,
        conversation_id=conv,
        stratum=stratum,
        flag_stratum=stratum.split("|")[0],  # type: ignore[arg-type]
        language="en",
        tenant="acme",
        inclusion_probability=pi,
        inclusion_final=True,
        stratum_population=10,
        priority=0.01,
        categories=("pii",),
        sources=(FileSource(file="log.jsonl", line=1),),
    )


# --- masking --------------------------------------------------------------------------------------

TEXT = "mail anna@example.nl or call 0612345678 today"


@pytest.mark.parametrize(
    ("spans", "expected"),
    [
        ([], TEXT),
        ([("anna@example.nl", "a***@***.nl", "pii")], "mail a***@***.nl or call 0612345678 today"),
        (
            [("anna@example.nl", "[E]", "pii"), ("0612345678", "[P]", "pii")],
            "mail [E] or call [P] today",
        ),
        # Overlapping spans merge into one replacement.
        (
            [("anna@example.nl", "[E]", "pii"), ("example.nl", "[D]", "secret")],
            "mail [E] [D] or call 0612345678 today",
        ),
        # Evidence equal to the value (mask "none") still hides it.
        ([("0612345678", "0612345678", "pii")], "mail anna@example.nl or call [X] today"),
        # Categories that are not personal data stay readable.
        ([("call 0612345678", "call 0612345678", "medical")], TEXT),
    ],
)
def test_mask_text(spans: list[tuple[str, str, str]], expected: str) -> None:
    ev = event(0, "user", TEXT)
    fs = [finding(ev, v, c, e, entity="X") for v, e, c in spans]
    assert mask_text(TEXT, fs, CFG.mask_categories) == expected


def test_mask_text_fails_safe_and_clips_fragments() -> None:
    ev = event(0, "user", TEXT)
    f = finding(ev, "0612345678", evidence="[P]")
    assert mask_text("short", [f], {"pii"}) == MASKED_TEXT
    # A fragment starting inside the value: the clipped part is masked too.
    frag = TEXT[f.start + 3 :]
    assert mask_text(frag, [f], {"pii"}, offset=f.start + 3) == "[P] today"
    assert mask_values("call 0612345678 or 0612345678", TEXT, [f], {"pii"}) == "call [P] or [P]"
    assert mask_values("call [P]", TEXT, [f], {"pii"}) == "call [P]"  # idempotent


# --- the evaluated answer -------------------------------------------------------------------------


def conversation() -> tuple[list[ChatEvent], list[Finding], list[GroundingReport]]:
    u0 = event(0, "user", "I am anna@example.nl. How much paracetamol a day?")
    a1 = event(
        1,
        "assistant",
        "Anna, write to anna@example.nl. Adults take up to 4 g a day [doc:p1].",
        retrieval=[
            Passage(doc_id="p2", text="other", rank=2),
            Passage(doc_id="p1", text="4 g", rank=1),
        ],
        citations=["p1"],
        confidence=0.8,
    )
    u2 = event(2, "user", "And ibuprofen?")
    a3 = event(3, "assistant", "I don't know.", confidence=0.3)
    fs = [
        finding(u0, "anna@example.nl", evidence="a***@***.nl"),
        finding(a1, "anna@example.nl", evidence="a***@***.nl"),
        finding(
            a3, "I don't know", category="abstention", evidence="I don't know", entity="ABSTENTION"
        ),
        finding(
            a1,
            "Adults take up to 4 g a day",
            category="medical",
            evidence="Adults take up to 4 g a day",
            entity="DOSE",
        ),
    ]
    rep = report(
        a1,
        [
            ("Anna, write to anna@example.nl.", "other", True),
            ("Adults take up to 4 g a day [doc:p1].", "dose", False),
        ],
        unsupported=[CitationIssue(doc_id="p1", claim="Anna, write to anna@example.nl.")],
        fact_checks=[
            ClaimVerdict(
                claim=Claim(entity="paracetamol", attribute="max_daily", value="4 g"),
                status="supported",
                sources=["p1"],
                origin="extracted",
            )
        ],
    )
    return [u0, a1, u2, a3], fs, [rep]


def test_case_evaluates_the_latest_checked_answer_and_its_question() -> None:
    events, fs, reps = conversation()
    case = build_case(selection(), events, fs, reps, CFG)
    assert case.case_id == case_id(W, "c1") == "2026-W45:c1"
    assert case.event_id == "c1-e1"  # checked beats later unchecked
    assert case.question == "I am a***@***.nl. How much paracetamol a day?"
    assert case.answer == "Anna, write to a***@***.nl. Adults take up to 4 g a day [doc:p1]."
    assert "anna@example.nl" not in case.model_dump_json()
    assert [c.doc_id for c in case.contexts] == ["p2", "p1"]
    assert case.citations == ["p1"] and case.confidence == 0.8 and case.abstained is False
    assert case.checked and case.faithfulness == 0.5
    assert [c.text for c in case.claims] == [
        "Anna, write to a***@***.nl.",
        "Adults take up to 4 g a day [doc:p1].",
    ]
    assert case.unsupported_citations[0].claim == "Anna, write to a***@***.nl."
    assert case.fact_checks[0].status == "supported"
    assert {f.category for f in case.findings} == {"pii", "abstention", "medical"}
    assert (case.stratum, case.inclusion_probability, case.stratum_population) == (
        "pii|en|acme",
        0.5,
        10,
    )
    assert case.sources == [FileSource(file="log.jsonl", line=1)]
    assert case.masked and case.label is None


def test_without_checks_the_latest_answer_is_evaluated_and_abstention_comes_from_findings() -> None:
    events, fs, _ = conversation()
    case = build_case(selection(), list(reversed(events)), fs, [], CFG)
    assert (case.event_id, case.question, case.answer) == (
        "c1-e3",
        "And ibuprofen?",
        "I don't know.",
    )
    assert case.abstained is True and case.checked is False and case.faithfulness is None


def test_masking_can_be_turned_off() -> None:
    events, fs, reps = conversation()
    case = build_case(selection(), events, fs, reps, EvalsetConfig(mask_pii=False))
    assert "anna@example.nl" in (case.question or "") and case.masked is False


def test_accumulator_is_idempotent_and_takes_late_verdicts() -> None:
    events, fs, reps = conversation()
    acc = CaseAccumulator(conversation_id="c1", period=W)
    for ev in events + events:
        acc.observe(ev, [f for f in fs if f.event_id == ev.event_id], CFG)
    assert len(acc.answers) == 2 and len(acc.findings) == 4
    assert acc.target() is not None and acc.target().event_id == "c1-e3"  # type: ignore[union-attr]
    a1 = events[1]
    acc.observe(a1, [f for f in fs if f.event_id == a1.event_id], CFG, reps[0])  # verdict later
    case = acc.to_case(selection(), CFG)
    assert case.event_id == "c1-e1" and case.claims[0].text == "Anna, write to a***@***.nl."
    with pytest.raises(ValueError):
        acc.observe(event(0, "user", "x", conv="other"), [], CFG)
    with pytest.raises(ValueError):
        acc.to_case(selection(conv="other"), CFG)


def test_case_without_an_answer_keeps_the_question() -> None:
    u0 = event(0, "user", "Hello?")
    case = build_case(selection(), [u0], [], [], CFG)
    assert (case.question, case.answer, case.event_id, case.abstained) == (
        "Hello?",
        None,
        None,
        None,
    )


def test_answer_before_any_user_turn_has_no_question() -> None:
    a0 = event(0, "assistant", "Welcome!")
    case = build_case(selection(), [a0], [], [], CFG)
    assert (case.question, case.answer) == (None, "Welcome!")


# --- labels ---------------------------------------------------------------------------------------


def make_case(conv: str, period: str = W, event_id: str | None = None) -> EvalCase:
    return EvalCase(
        case_id=f"{period}:{conv}",
        period=period,
        conversation_id=conv,
        event_id=event_id or f"{conv}-a",
        stratum="unflagged|en|acme",
        flag_stratum="unflagged",
        language="en",
        tenant="acme",
        inclusion_probability=0.5,
        inclusion_final=True,
        question="q",
        answer="a",
    )


def test_attach_labels_by_case_event_and_conversation() -> None:
    cases = [make_case("c1"), make_case("c1", "2026-W46", "c1-b"), make_case("c2"), make_case("c3")]
    labels = [
        EvalLabel(conversation_id="c1", event_id="c1-b", expected_answer="b"),
        EvalLabel(conversation_id="c2", case_id="2026-W45:c2", answer_correct=True),
        EvalLabel(conversation_id="c3", note="old", labeled_at=T0),
        EvalLabel(conversation_id="c3", note="new", labeled_at=T0 + timedelta(hours=1)),
        EvalLabel(conversation_id="c9"),
        EvalLabel(conversation_id="c1", case_id="2026-W45:c2"),  # case of another conversation
    ]
    joined = attach_labels(cases, labels)
    got = {c.case_id: c.label for c in joined.cases}
    assert got["2026-W45:c1"] is None
    assert got["2026-W46:c1"] is not None and got["2026-W46:c1"].expected_answer == "b"
    assert got["2026-W45:c2"] is not None and got["2026-W45:c2"].answer_correct is True
    assert got["2026-W45:c3"] is not None and got["2026-W45:c3"].note == "new"
    assert [lab.conversation_id for lab in joined.unmatched] == ["c9", "c1"]
    # Without an event or case id a label reaches every case of its conversation.
    both = attach_labels(cases, [EvalLabel(conversation_id="c1", note="x")]).cases
    assert [c.label is not None for c in both] == [True, True, False, False]


# --- contracts ------------------------------------------------------------------------------------


def test_eval_case_and_label_validation() -> None:
    base = make_case("c1").model_dump()
    with pytest.raises(ValidationError, match="case_id"):
        EvalCase.model_validate({**base, "case_id": "2026-W45:other"})
    with pytest.raises(ValidationError, match="flag_stratum"):
        EvalCase.model_validate({**base, "stratum": "pii|en|acme"})
    with pytest.raises(ValidationError, match="another conversation"):
        EvalCase.model_validate({**base, "label": {"conversation_id": "c2"}})
    with pytest.raises(ValidationError):
        EvalCase.model_validate({**base, "inclusion_probability": 0.0})
    with pytest.raises(ValidationError):
        EvalCase.model_validate({**base, "unknown_field": 1})
    with pytest.raises(ValidationError, match="contradict"):
        EvalLabel(conversation_id="c", expected_answer="x", expected_abstention=True)
    with pytest.raises(ValidationError, match="repeat"):
        EvalLabel(conversation_id="c", relevant_doc_ids=["d", "d"])
    with pytest.raises(ValidationError):
        EvalLabel(conversation_id="c", missed_categories=["nonsense"])  # type: ignore[list-item]
    with pytest.raises(ValidationError):
        EvalLabel(conversation_id="c", relevance={"d": 101})


def test_review_labels_become_eval_labels() -> None:
    from schemas.review import ReviewLabel
    from services.evalsets.labels import label_from_review

    review = ReviewLabel.model_validate(
        {
            "label_id": "l1",
            "item_id": "c1:1",
            "conversation_id": "c1",
            "round": 1,
            "reviewer": "ana",
            "labeled_at": T0.isoformat(),
            "priority": 90,
            "admission": "admitted",
            "inclusion_probability": 1.0,
            "reasons": [],
            "findings": [
                {
                    "finding_id": "f1",
                    "event_id": "c1-e1",
                    "rule_id": "pii.email",
                    "category": "pii",
                    "entity": "EMAIL_ADDRESS",
                    "severity": "medium",
                    "verdict": "false_positive",
                }
            ],
            "claims": [
                {
                    "event_id": "c1-e1",
                    "index": 0,
                    "entity": "paracetamol",
                    "attribute": "max_daily",
                    "value": "4 g",
                    "sources": ["p1"],
                    "original": "unknown",
                    "corrected": "supported",
                }
            ],
            "expected_answer": "",
            "note": "fine",
        }
    )
    lab = label_from_review(review)
    assert lab.conversation_id == "c1" and lab.labeled_at == T0
    assert lab.finding_verdicts == {"f1": "false_positive"}
    assert lab.claim_statuses[0].claim == Claim(
        entity="paracetamol", attribute="max_daily", value="4 g"
    )
    assert lab.claim_statuses[0].status == "supported"
    assert lab.expected_answer is None and lab.note == "fine"
    assert "ana" not in lab.model_dump_json()
    events, fs, reps = conversation()
    case = build_case(selection(), events, fs, reps, CFG)
    (joined,) = attach_labels([case], [lab]).cases
    assert joined.label == lab


# --- the case side of the worker: replays ---------------------------------------------------------


def test_a_replayed_deselection_tombstones_the_answer_cases_too() -> None:
    """At least once: the worker wrote a deselection's state, then died before its tombstones
    reached the broker. The replayed decision finds the selection gone and must send the same
    tombstones: the conversation's case and the case of its other critical answer."""
    from services.dataflow.state import MemoryStore
    from services.evalsets.core import CASES, EvalsetCore, evalset_specs
    from services.evalsets.settings import EvalsetSettings
    from services.evalsets.streaming import Decision

    es = EvalsetSettings()
    core = EvalsetCore(es, partitions=1)
    st = MemoryStore(evalset_specs(es)["evalset-cases"])
    u0 = event(0, "user", "How much paracetamol?")
    a1 = event(1, "assistant", "Take 40 g at once.")
    a3 = event(3, "assistant", "Take 4 g a day.")
    critical = finding(a1, "40 g", category="medical", evidence="40 g", entity="DOSE")
    critical = critical.model_copy(update={"severity": "critical"})
    selected = selection(stratum="medical|en|acme")
    update = Decision(
        kind="update", period=W, partition=0, conversation_id="c1", selection=selected
    )
    core.on_decision(0, update, st)
    core.observe(u0, [], None, None, st, 0)
    core.observe(a1, [critical], report(a1, [("Take 40 g at once.", "dose", False)]), None, st, 0)
    out = core.observe(a3, [], report(a3, [("Take 4 g a day.", "dose", True)]), None, st, 0)
    published = {e.key for e in out if e.channel == CASES}
    assert published == {f"{W}:c1".encode(), f"{W}:c1#c1-e1".encode()}

    drop = Decision(kind="update", period=W, partition=0, conversation_id="c1")
    first = core.on_decision(0, drop, st)
    core.flush()
    core.forget_caches()  # the crash: the tombstones are lost, the state is written
    replayed = core.on_decision(0, drop, st)
    for effects in (first, replayed):
        assert {e.key for e in effects.emits if e.value is None} == published


def test_a_closing_sync_replayed_after_a_crash_tombstones_the_answer_cases_too() -> None:
    """The period's final sync drops a conversation that is no longer drawn. The worker wrote
    that step's state, then died before the tombstones reached the broker: the replayed sync
    must send the conversation's case and its other critical answer's case again. Its answer
    cases are named by the accumulator, so the accumulators (and the period's "closed" mark)
    go only in the follow-up, once the broker has the tombstones; before that they went in
    the same step and the replay found nothing to tombstone (the scale-out test's extra case).
    """
    from services.dataflow.state import MemoryStore
    from services.evalsets.core import CASES, EvalsetCore, evalset_specs
    from services.evalsets.settings import EvalsetSettings
    from services.evalsets.streaming import Decision, acc_key

    es = EvalsetSettings()
    core = EvalsetCore(es, partitions=1)
    st = MemoryStore(evalset_specs(es)["evalset-cases"])
    a1 = event(1, "assistant", "Take 40 g at once.")
    a3 = event(3, "assistant", "Take 4 g a day.")
    critical = finding(a1, "40 g", category="medical", evidence="40 g", entity="DOSE")
    critical = critical.model_copy(update={"severity": "critical"})
    selected = selection(stratum="medical|en|acme")
    core.on_decision(
        0,
        Decision(kind="update", period=W, partition=0, conversation_id="c1", selection=selected),
        st,
    )
    core.observe(event(0, "user", "How much paracetamol?"), [], None, None, st, 0)
    core.observe(a1, [critical], report(a1, [("Take 40 g at once.", "dose", False)]), None, st, 0)
    out = core.observe(a3, [], report(a3, [("Take 4 g a day.", "dose", True)]), None, st, 0)
    published = {e.key for e in out if e.channel == CASES}
    assert published == {f"{W}:c1".encode(), f"{W}:c1#c1-e1".encode()}

    close = Decision(kind="sync", period=W, partition=0, keep=[], final=True)
    first = core.on_decision(0, close, st)
    assert first.then is not None
    core.flush()
    core.forget_caches()  # the crash: the step's state is written, the tombstones are lost
    assert st.get(acc_key(0, W, "c1")) is not None
    replayed = core.on_decision(0, close, st)
    for effects in (first, replayed):
        assert {e.key for e in effects.emits if e.value is None} == published
    # delivered this time: the follow-up drops the accumulator and closes the period
    assert replayed.then is not None
    replayed.then()
    core.flush()
    assert st.get(acc_key(0, W, "c1")) is None
    again = core.on_decision(0, close, st)
    assert again.then is None and not again.emits
