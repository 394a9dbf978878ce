"""The claim check of an answer uses the medical context of the user turn before it
(:mod:`services.dataflow.questions`), in both compositions of the one dataflow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from schemas.events import ChatEvent
from schemas.verdicts import AMOUNT_CHARS, GroundingReport, MedicalContext
from services.checking import CheckRequest
from services.dataflow.flow import CHECKS, VERDICTS, Dataflow, PartitionState, Source
from services.dataflow.state import MemoryStore
from services.review.core import ReviewState
from services.settings import Settings
from services.streaming.runner import MemoryStates, Record, StreamRunner
from tests.support.chat_events import event
from tests.unit.test_worker_agent import ListSink

IBU = {
    "doc_id": "pil-ibuprofen-en",
    "text": (
        "Ibuprofen. Adults and children over 12 years: 400 mg every 6 to 8 hours, at most "
        "1200 mg a day. Children 6 to 12 years: 5 to 10 mg per kg body weight every 6 to 8 "
        "hours, at most 30 mg per kg a day."
    ),
}
QUESTION = "My son of 6 takes ibuprofen for his fever, how much can I give him?"
ANSWER = "Give 400 mg every 6 to 8 hours, at most 1200 mg a day."


def flow() -> Dataflow:
    return Dataflow(Settings(sample_rate=1.0))  # type: ignore[call-arg]


def state(f: Dataflow) -> PartitionState:
    s = {kind: MemoryStore(spec) for kind, spec in f.specs.items()}
    return PartitionState(
        memory=s["memory"],
        events=s["events"],
        held=s["held"],
        questions=s["question-context"],
        review=ReviewState(
            items=s["review-items"], context=s["review-context"], caps=s["review-caps"]
        ),
    )


def raw(eid: str, turn: int, role: str, content: str, **extra: Any) -> bytes:
    return json.dumps(event(eid, "c1", turn, role, content, language="en", **extra)).encode()


def answer(turn: int = 1) -> bytes:
    return raw(f"a{turn}", turn, "assistant", ANSWER, retrieval=[IBU])


def inline(f: Dataflow, st: PartitionState, rows: list[bytes]) -> GroundingReport | None:
    report = None
    for i, row in enumerate(rows):
        step = f.process(row, Source("in", 0, i), st, now=1.8e9)
        report = step.report or report
    return report


def critical(report: GroundingReport | None) -> list[str]:
    assert report is not None
    return [m.status for c in report.claims for m in c.medical if m.status != "supported"]


def test_the_check_sees_the_child_of_the_question() -> None:
    f = flow()
    alone = inline(f, state(f), [answer()])
    asked = inline(f, st := state(f), [raw("u0", 0, "user", QUESTION), answer()])
    assert critical(alone) == []
    assert critical(asked)  # an adult dose for a child of 6
    assert st.questions is not None
    kept = f.questions.for_answer(st.questions, ChatEvent.model_validate_json(answer()))
    assert kept is not None and "child" in kept.populations and kept.drugs == ["ibuprofen"]
    stored = b"".join(st.questions[k] for k in st.questions)
    assert b"son" not in stored and b"fever" not in stored  # derived data only


def test_only_a_user_turn_before_the_answer_counts() -> None:
    f = flow()
    later = inline(f, state(f), [raw("u2", 2, "user", QUESTION), answer(1)])
    assert critical(later) == []
    # The latest user turn with a context before the answer: a follow-up naming nothing keeps it.
    rows = [raw("u0", 0, "user", QUESTION), raw("u2", 2, "user", "And how often?"), answer(3)]
    assert critical(inline(f, state(f), rows))


def test_a_turn_that_names_nothing_keeps_no_state() -> None:
    f = flow()
    st = state(f)
    inline(f, st, [raw("u0", 0, "user", "Hello, can you help me?")])
    assert st.questions is not None and len(st.questions) == 0


@pytest.mark.parametrize("with_question", [True, False])
def test_the_deferred_check_gets_the_context_as_the_inline_one(with_question: bool) -> None:
    f = flow()
    rows = ([raw("u0", 0, "user", QUESTION)] if with_question else []) + [answer()]
    expected = inline(f, state(f), rows)
    st = state(f)
    request: CheckRequest | None = None
    for i, row in enumerate(rows):
        request = f.screen_deferred(row, Source("in", 0, i), st, now=1.8e9).request or request
    assert request is not None
    assert (request.context is not None) is with_question
    wire = CheckRequest.model_validate_json(request.model_dump_json())  # over the checks topic
    got = f.check_deferred(wire, Source("checks", 0, 0), state(f), now=1.8e9).report
    assert got is not None and expected is not None
    assert got == expected


def test_the_kept_turns_are_bounded() -> None:
    f = Dataflow(Settings(sample_rate=1.0, question_context_max_turns=2))  # type: ignore[call-arg]
    st = state(f)
    rows = [raw(f"u{t}", t, "user", f"I am {70 + t} and take ibuprofen.") for t in range(0, 10, 2)]
    inline(f, st, rows)
    (value,) = [st.questions[k] for k in st.questions]  # type: ignore[union-attr]
    assert [turn for turn, _ in json.loads(value)] == [6, 8]
    assert len(value) <= f.questions.spec.max_value_bytes


async def test_the_worker_passes_the_context_through_the_checks_topic(tmp_path: Path) -> None:
    """The worker's runner, deferred (a judge configured): screening on one agent, the check on
    the other, with the stores of its partition; the verdict is the one of ``vigil scan``."""
    settings = Settings(sample_rate=1.0, data_dir=tmp_path, store="memory://")  # type: ignore[call-arg]
    f = Dataflow(settings, clock="wall", partitions=1)
    sink = ListSink()
    runner = StreamRunner(f, MemoryStates(f), sink, deferred=True, clock=lambda: 1.8e9)
    rows = [raw("u0", 0, "user", QUESTION), answer()]
    await runner.screen([Record(v, b"c1", "chat.events", 0, i) for i, v in enumerate(rows)])
    (check,) = sink.values(CHECKS)
    sink.emits.clear()
    await runner.check([Record(check, b"c1", "vigil.checks", 0, 0)])
    (verdict,) = [GroundingReport.model_validate_json(v) for v in sink.values(VERDICTS)]
    assert critical(verdict)
    assert verdict == inline(flow(), state(flow()), rows)


def test_only_the_first_sentences_of_a_user_turn_are_read() -> None:
    """A question states its subject early; a long pasted text is not read in full (bounded
    cost per user turn): a drug named only after ``QUESTION_SENTENCES`` sentences is not in
    the context, the same drug in the first sentence is."""
    from services.grounding.grounding import QUESTION_SENTENCES, medical_context
    from services.grounding.medical.lexicon import load_lexicon

    lex = load_lexicon()
    filler = " ".join(f"Line {i} of the letter is here." for i in range(QUESTION_SENTENCES))
    late = medical_context(f"{filler} Can my son of 6 take ibuprofen?", "en", lex)
    early = medical_context(f"Can my son of 6 take ibuprofen? {filler}", "en", lex)
    assert late.drugs == [] and late.populations == []
    assert early.drugs == ["ibuprofen"] and "child" in early.populations


def test_the_bound_holds_an_entry_with_every_field_at_its_longest() -> None:
    """The value bound is computed from the lexicon's longest names and a fixed part for the
    rest: a full ring of entries with full lists and the longest numbers fits in it."""
    f = flow()
    q = f.questions
    lex = q.checker.lexicon
    drug = max(lex.inns, key=len)
    group = max((g.key for g in (*lex.group_file.populations, *lex.group_file.conditions)), key=len)
    longest = 1 / 3 * 1e-7 + 123.45678901234567  # 17 significant digits
    context = MedicalContext(
        drugs=[drug] * 16,
        populations=[group] * 16,
        age_min_years=longest,
        age_max_years=longest,
        weight_kg=499.99999999999994,
        clearance_ml_min=999.9999999999999,
        amounts=["µ" * AMOUNT_CHARS] * 16,
    )
    entries = [(2**31 - 1 - t, context) for t in range(q.max_turns)]
    assert len(TypeAdapter(list[tuple[int, MedicalContext]]).dump_json(entries)) <= (
        q.spec.max_value_bytes
    )


def test_a_question_keeps_its_amounts_each_bounded() -> None:
    """The amounts a user turn states are kept for the answer (an answer that declines may say
    them back), each at most AMOUNT_CHARS characters: a number of a hundred digits is not kept,
    and the model refuses a longer one from anywhere else."""
    from services.grounding.grounding import medical_context

    lex = flow().questions.checker.lexicon
    kept = medical_context("I have 500 mg tablets of paracetamol. Can I take two?", "en", lex)
    assert kept.amounts == ["500 mg"]
    huge = "9" * 100
    long_one = medical_context(f"Can I take {huge} mg or 250 mg of ibuprofen?", "en", lex)
    assert long_one.amounts == ["250 mg"]
    with pytest.raises(ValueError):
        MedicalContext(amounts=["1" * (AMOUNT_CHARS + 1)])
