"""Rotation (last N periods active, retired ones archived), near-duplicate questions, and the case
files: Vigil JSONL (round trip, errors with line numbers) and the RAGAS form."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from schemas.evalset import CaseContext, EvalCase, EvalLabel
from services.evalsets import EvalsetCollector, EvalsetConfig, export_cases
from services.evalsets.export import (
    CaseFileError,
    case_record,
    load_cases,
    load_labels,
    ragas_record,
    write_cases,
)
from services.evalsets.rotation import active_periods, dedupe, normalise_question, rotate
from tests.support.json_schemas import schema_errors
from tests.unit.test_evalset_cases import conversation

DATA = Path(__file__).resolve().parents[1] / "data"


def case(conv: str, period: str = "2026-W45", question: str | None = "q?", **kw: Any) -> EvalCase:
    return EvalCase(
        case_id=f"{period}:{conv}",
        period=period,
        conversation_id=conv,
        event_id=f"{conv}-a",
        stratum="unflagged|en|acme",
        flag_stratum="unflagged",
        language="en",
        tenant="acme",
        inclusion_probability=0.25,
        inclusion_final=True,
        question=question,
        answer=kw.pop("answer", "an answer"),
        **kw,
    )


# --- near-duplicates ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("What is the max dose of paracetamol?", "what is the MAX dose of paracetamol", True),
        ("  Mag ik   ibuprofen?! ", "mag ik ibuprofen", True),
        ("Liều tối đa là bao nhiêu?", "liều tối đa là bao nhiêu", True),
        ("ｐａｒａｃｅｔａｍｏｌ", "paracetamol", True),  # NFKC: full-width letters
        ("Is 500 mg safe?", "Is 1000 mg safe?", False),  # digits are kept
        ("Is 500 mg safe?", "Is 500mg safe?", False),
        ("dose of paracetamol", "dose of ibuprofen", False),
    ],
)
def test_normalise_question(a: str, b: str, same: bool) -> None:
    assert (normalise_question(a) == normalise_question(b)) is same


def test_dedupe_prefers_labelled_then_newest_and_returns_duplicates() -> None:
    a = case("c1", "2026-W44", "Max dose?")
    b = case("c2", "2026-W45", "max dose")
    c = case("c3", "2026-W43", "MAX DOSE!", label=EvalLabel(conversation_id="c3"))
    d = case("c4", question=None)
    e = case("c5", question="   ")
    f = case("c6", question="something else")
    out = dedupe([a, b, c, d, e, f])
    assert [x.conversation_id for x in out.kept] == ["c3", "c4", "c5", "c6"]
    assert [x.conversation_id for x in out.duplicates] == ["c1", "c2"]
    out = dedupe([a, b])
    assert [x.conversation_id for x in out.kept] == ["c2"]


# --- rotation -------------------------------------------------------------------------------------


def test_rotation_keeps_the_last_n_periods_and_returns_the_retired() -> None:
    weeks = [f"2026-W{w}" for w in range(40, 47)]
    cases = [case(f"c{i}", w) for i, w in enumerate(weeks)]
    r = rotate(cases, "2026-W45", 4)
    assert r.active_periods == ["2026-W42", "2026-W43", "2026-W44", "2026-W45"]
    assert r.retired_periods == ["2026-W40", "2026-W41"]
    # A period after "current" (clock skew) stays active rather than vanish.
    assert [c.period for c in r.active] == [*weeks[2:]]
    assert [c.period for c in r.retired] == weeks[:2]
    assert len(r.active) + len(r.retired) == len(cases)
    assert active_periods([], "2026-W45", 2) == ["2026-W45"]
    assert active_periods(["2026-W01", "2026-11-05"], "2026-W02", 4) == ["2026-W01", "2026-W02"]
    with pytest.raises(ValueError):
        active_periods([], "2026-W45", 0)


# --- files ----------------------------------------------------------------------------------------


def labelled() -> EvalCase:
    return case(
        "c1",
        contexts=[
            CaseContext(doc_id="d1", text="one", rank=1),
            CaseContext(doc_id="d2", text="two"),
        ],
        label=EvalLabel(conversation_id="c1", relevant_doc_ids=["d2"], expected_answer="two"),
    )


def test_jsonl_round_trip_valid_against_the_schema(tmp_path: Path) -> None:
    cases = [labelled(), case("c2", question=None)]
    res = write_cases(cases, tmp_path / "out" / "cases.jsonl")
    assert (res.written, res.skipped, res.format) == (2, 0, "jsonl")
    lines = (tmp_path / "out" / "cases.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    assert first["label"]["relevant_doc_ids"] == ["d2"] and "relevant_doc_ids" not in first
    for field in (
        "case_id",
        "period",
        "stratum",
        "inclusion_probability",
        "question",
        "answer",
        "contexts",
        "claims",
        "fact_checks",
        "findings",
        "label",
    ):
        assert field in first
    assert schema_errors("EvalCase", tmp_path / "out" / "cases.jsonl") == []
    assert load_cases(tmp_path / "out" / "cases.jsonl") == cases
    assert case_record(cases[1]) == cases[1].model_dump(mode="json")


def test_a_hand_written_file_may_give_relevant_doc_ids_on_top(tmp_path: Path) -> None:
    record = case_record(case("c3"))
    record["relevant_doc_ids"] = ["d1"]
    path = tmp_path / "hand.jsonl"
    path.write_text(json.dumps(record) + "\n")
    (loaded,) = load_cases(path)
    assert loaded.label is not None and loaded.label.relevant_doc_ids == ["d1"]
    assert schema_errors("EvalCase", [record]) != []  # not the published form, only accepted


def test_ragas_form(tmp_path: Path) -> None:
    rec = ragas_record(labelled())
    assert rec == {
        "user_input": "q?",
        "retrieved_contexts": ["one", "two"],
        "response": "an answer",
        "reference": "two",
        "reference_contexts": ["two"],
    }
    assert ragas_record(case("c2"))["reference"] is None  # type: ignore[index]
    assert ragas_record(case("c3", question=None)) is None
    res = write_cases([labelled(), case("c3", question=None)], tmp_path / "r.jsonl", "ragas")
    assert (res.written, res.skipped) == (1, 1)
    with pytest.raises(ValueError):
        write_cases([], tmp_path / "x", "csv")  # type: ignore[arg-type]


def _write(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "cases.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_load_errors_name_the_line(tmp_path: Path) -> None:
    good = json.dumps(case_record(case("c1")))
    with pytest.raises(CaseFileError, match=r"cases.jsonl:3: not a JSON line"):
        load_cases(_write(tmp_path, [good, "", "{oops"]))
    with pytest.raises(CaseFileError, match=r":2: .*inclusion_probability"):
        bad = {**case_record(case("c2")), "inclusion_probability": 2}
        load_cases(_write(tmp_path, [good, json.dumps(bad)]))
    with pytest.raises(CaseFileError, match=r":2: duplicate case_id"):
        load_cases(_write(tmp_path, [good, good]))
    with pytest.raises(CaseFileError, match=r":1: expected a JSON object"):
        load_cases(_write(tmp_path, ["[1, 2]"]))
    with pytest.raises(CaseFileError, match=r":1: relevant_doc_ids disagrees"):
        rec = case_record(labelled())
        rec["relevant_doc_ids"] = ["d1"]
        load_cases(_write(tmp_path, [json.dumps(rec)]))
    with pytest.raises(CaseFileError, match="cannot open"):
        load_cases(tmp_path / "missing.jsonl")


def test_top_level_relevant_doc_ids_become_a_label(tmp_path: Path) -> None:
    rec = case_record(case("c1"))
    rec["relevant_doc_ids"] = ["d9"]
    (loaded,) = load_cases(_write(tmp_path, [json.dumps(rec)]))
    assert loaded.label is not None and loaded.label.relevant_doc_ids == ["d9"]


def test_load_labels(tmp_path: Path) -> None:
    p = tmp_path / "labels.jsonl"
    p.write_text(json.dumps({"conversation_id": "c1", "answer_correct": True}) + "\n\n")
    assert load_labels(p) == [EvalLabel(conversation_id="c1", answer_correct=True)]
    p.write_text(json.dumps({"answer_correct": True}) + "\n")
    with pytest.raises(CaseFileError, match=":1: conversation_id"):
        load_labels(p)


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("evalcases-*.jsonl")))
def test_fixture_case_files_load(name: str) -> None:
    assert load_cases(DATA / name)


# --- export_cases ---------------------------------------------------------------------------------


def test_export_cases_from_a_collector_and_from_cases(tmp_path: Path) -> None:
    col = EvalsetCollector(EvalsetConfig(active_periods=2), b"secret")
    events, fs, reps = conversation()
    report_of = {r.event_id: r for r in reps}
    for week, shift in (("2026-W44", -7), ("2026-W45", 0), ("2026-W46", 7)):
        for ev in events:
            moved = ev.model_copy(
                update={
                    "timestamp": ev.timestamp + timedelta(days=shift),
                    "conversation_id": f"c-{week}",
                    "event_id": f"{ev.event_id}-{week}",
                }
            )
            own = [
                f.model_copy(
                    update={"event_id": moved.event_id, "conversation_id": moved.conversation_id}
                )
                for f in fs
                if f.event_id == ev.event_id
            ]
            rep = report_of.get(ev.event_id)
            if rep is not None:
                rep = rep.model_copy(
                    update={"event_id": moved.event_id, "conversation_id": moved.conversation_id}
                )
            col.observe(moved, own, None, rep)
    assert col.periods() == ["2026-W44", "2026-W45", "2026-W46"]
    # All active periods, questions deduplicated (the same question every week).
    out = export_cases(col, None, "jsonl", tmp_path / "all.jsonl")
    assert out.periods == ["2026-W46"] and out.duplicates == 1 and out.written.written == 1
    out = export_cases(col, None, "jsonl", tmp_path / "all.jsonl", deduplicate=False)
    assert out.periods == ["2026-W45", "2026-W46"] and out.written.written == 2
    out = export_cases(col, "2026-W44", "ragas", tmp_path / "w44.jsonl")
    assert out.periods == ["2026-W44"]
    rec = json.loads((tmp_path / "w44.jsonl").read_text())
    assert rec["user_input"] == "I am a***@***.nl. How much paracetamol a day?"
    cases = col.cases()
    label = EvalLabel(conversation_id="c-2026-W45", expected_answer="4 g")
    out = export_cases(cases, "2026-W45", "ragas", tmp_path / "w45.jsonl", labels=[label])
    assert json.loads((tmp_path / "w45.jsonl").read_text())["reference"] == "4 g"
    # Rotation retires the oldest and hands its cases back for the archive.
    rot = col.rotate()
    assert rot.retired_periods == ["2026-W44"] and [c.period for c in rot.retired] == ["2026-W44"]
    assert col.periods() == ["2026-W45", "2026-W46"]
