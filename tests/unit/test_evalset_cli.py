"""``vigil eval run`` and ``vigil evalset export`` through typer's CliRunner, registered the way
``services/cli.py`` registers them (``evalset`` and ``eval`` groups)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import typer
from typer.testing import CliRunner, Result

from schemas.evalset import EvalCase
from services.commands import evalset as commands
from services.commands.evalset import ExportError, eval_app, evalset_app, read_live_cases
from services.evalsets import load_cases, normalise_question
from tests.support.json_schemas import schema_errors

DATA = Path(__file__).resolve().parents[1] / "data"
GATES = Path(__file__).resolve().parents[2] / "rules" / "gates.example.yaml"

vigil = typer.Typer()
vigil.add_typer(evalset_app, name="evalset")
vigil.add_typer(eval_app, name="eval")


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(vigil, [str(a) for a in args])


# --- vigil eval run ---------------------------------------------------------------------------


def test_a_failing_gate_exits_1_and_names_the_gate(tmp_path: Path) -> None:
    result = run(
        "eval", "run", "--cases", DATA / "evalcases-fail.jsonl", "--gates", GATES,
        "--json", tmp_path / "report.json",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "FAIL retrieval-recall: recall@5 = 0.7500 over 4 is not >= 0.8500" in result.output
    assert "FAIL no-ungrounded-dose-claims" in result.output
    assert "gates: FAILED (5 gate(s))" in result.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["passed"] is False
    assert {g["gate"] for g in report["failed_gates"]} == {
        "retrieval-recall",
        "retrieval-ndcg",
        "no-ungrounded-dose-claims",
        "faithfulness",
        "answered-risk",
    }


def test_a_passing_file_exits_0_and_writes_report_plot_and_table(tmp_path: Path) -> None:
    result = run(
        "eval", "run", "--cases", DATA / "evalcases-pass.jsonl", "--gates", GATES,
        "--json", tmp_path / "r.json", "--plot", tmp_path / "rc.png",
        "--table", tmp_path / "curve.csv",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "gates: PASSED" in result.output
    assert json.loads((tmp_path / "r.json").read_text())["passed"] is True
    assert (tmp_path / "rc.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    header = (tmp_path / "curve.csv").read_text().splitlines()[0]
    assert header == "threshold,answered,correct,coverage,risk"


def test_seed_abstention_example_reproduces(tmp_path: Path) -> None:
    result = run(
        "eval", "run", "--cases", DATA / "evalcases-seed-abstention.jsonl",
        "--json", tmp_path / "r.json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "gates: none" in result.output
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["abstention"] == {
        "total": 3,
        "answered": 2,
        "correct": 1,
        "coverage": pytest.approx(2 / 3),
        "overall_accuracy": pytest.approx(1 / 3),
        "answered_accuracy": 0.5,
        "risk": 0.5,
    }


def test_seed_risk_coverage_example_reproduces(tmp_path: Path) -> None:
    result = run(
        "eval", "run", "--cases", DATA / "evalcases-seed-risk-coverage.jsonl",
        "--table", tmp_path / "curve.csv",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    with open(tmp_path / "curve.csv", newline="") as fh:
        rows = {float(r["threshold"]): r for r in csv.DictReader(fh)}
    # SPEC §6: scores .1 .4 .7 .9, correct T T F T, thresholds 0 .5 .8 1.
    got = {t: (int(rows[t]["answered"]), rows[t]["risk"]) for t in (0.0, 0.5, 0.8, 1.0)}
    assert got == {0.0: (4, "0.25"), 0.5: (2, "0.5"), 0.8: (1, "0.0"), 1.0: (0, "")}


def test_seed_retrieval_example_reproduces_at_k(tmp_path: Path) -> None:
    result = run(
        "eval", "run", "--cases", DATA / "evalcases-seed-retrieval.jsonl",
        "--k", "2", "--json", tmp_path / "r.json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    values = json.loads((tmp_path / "r.json").read_text())["overall"]["values"]
    assert values["recall@2"] == pytest.approx(0.75)  # (0.5 + 1.0) / 2
    assert values["faithfulness"] == 0.5
    assert "recall@5" not in values


def test_gate_on_a_k_not_asked_for_is_still_computed(tmp_path: Path) -> None:
    gates = tmp_path / "gates.yaml"
    gates.write_text('gates:\n  - metric: recall@4\n    comparison: "<"\n    threshold: 1\n')
    result = run("eval", "run", "--cases", DATA / "evalcases-seed-retrieval.jsonl",
                 "--gates", gates, "--k", "2")  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "FAIL recall@4 < 1: recall@4 = 1 over 2 is not < 1" in result.output


def test_unreadable_inputs_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"case_id": 1}\n')
    result = run("eval", "run", "--cases", bad)
    assert result.exit_code == 2 and "bad.jsonl:1:" in result.output
    gates = tmp_path / "g.yaml"
    gates.write_text("gates:\n  - metric: recal@5\n    threshold: 1\n")
    result = run("eval", "run", "--cases", DATA / "evalcases-pass.jsonl", "--gates", gates)
    assert result.exit_code == 2 and "unknown metric" in result.output
    assert run("eval", "run", "--cases", tmp_path / "missing.jsonl").exit_code == 2


def test_labels_file_joins_before_the_metrics(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"conversation_id": "seed-abst-1", "answer_correct": False}))
    result = run(
        "eval", "run", "--cases", DATA / "evalcases-seed-abstention.jsonl",
        "--labels", labels, "--json", tmp_path / "r.json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "r.json").read_text())["abstention"]["correct"] == 0


# --- vigil evalset export from a file ---------------------------------------------------------


def _with_duplicate(tmp_path: Path) -> Path:
    """The passing file plus a later copy of its first case under another conversation."""
    lines = (DATA / "evalcases-pass.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    copy = dict(first, conversation_id="c-copy", case_id="2026-W46:c-copy", period="2026-W46")
    copy["question"] = first["question"].upper() + "!!"
    if copy.get("label"):
        copy["label"] = dict(copy["label"], conversation_id="c-copy")
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join([*lines, json.dumps(copy)]) + "\n")
    return path


def test_export_jsonl_round_trips_and_sets_near_duplicates_aside(tmp_path: Path) -> None:
    source = _with_duplicate(tmp_path)
    out = tmp_path / "out.jsonl"
    result = run("evalset", "export", "--cases", source, "--out", out)
    assert result.exit_code == 0, result.output
    assert "wrote 6 case(s) of 7" in result.output and "1 near-duplicate" in result.output
    cases = load_cases(out)
    questions = [normalise_question(c.question or "") for c in cases]
    assert len(set(questions)) == len(questions)
    # the newest period's copy wins the tie (neither is labelled)
    assert "2026-W46:c-copy" in {c.case_id for c in cases}
    assert schema_errors("EvalCase", out) == []

    result = run("evalset", "export", "--cases", source, "--out", out, "--no-dedupe")
    assert result.exit_code == 0 and len(load_cases(out)) == 7
    assert load_cases(out) == load_cases(source)


def test_export_one_period_as_ragas(tmp_path: Path) -> None:
    source = _with_duplicate(tmp_path)
    out = tmp_path / "ragas.jsonl"
    result = run(
        "evalset", "export", "--cases", source, "--out", out, "--format", "ragas",
        "--period", "2026-W46",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert set(record) >= {"user_input", "retrieved_contexts", "response", "reference"}
    assert record["user_input"].endswith("!!")
    assert "periods 2026-W46" in result.output


def test_export_joins_a_labels_file(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        json.dumps({"conversation_id": "seed-abst-2", "expected_abstention": True}) + "\n"
    )
    out = tmp_path / "out.jsonl"
    result = run(
        "evalset", "export", "--cases", DATA / "evalcases-seed-abstention.jsonl",
        "--labels", labels, "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    by_id = {c.conversation_id: c for c in load_cases(out)}
    label = by_id["seed-abst-2"].label
    assert label is not None and label.expected_abstention is True


def test_export_usage_and_input_errors_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    both = run("evalset", "export", "--cases", DATA / "evalcases-pass.jsonl",
               "--bootstrap", "127.0.0.1:9092", "--out", out)  # fmt: skip
    assert both.exit_code == 2 and "not both" in both.output
    period = run("evalset", "export", "--cases", DATA / "evalcases-pass.jsonl",
                 "--period", "2026-W4", "--out", out)  # fmt: skip
    assert period.exit_code == 2 and "not a period id" in period.output
    month = run("evalset", "export", "--cases", DATA / "evalcases-pass.jsonl",
                "--period", "2026-13", "--out", out)  # fmt: skip
    assert month.exit_code == 2 and "no such month" in month.output
    missing = run("evalset", "export", "--cases", tmp_path / "nope.jsonl", "--out", out)
    assert missing.exit_code == 2 and "nope.jsonl" in missing.output
    fmt = run("evalset", "export", "--cases", DATA / "evalcases-pass.jsonl",
              "--format", "csv", "--out", out)  # fmt: skip
    assert fmt.exit_code == 2
    assert not out.exists()


# --- vigil evalset export from the case topic -------------------------------------------------


class FakeConsumer:
    """The part of kafka-python's KafkaConsumer that ``read_live_cases`` uses."""

    def __init__(self, topic: str, partitions: dict[int, list[tuple[str, bytes | None]]]) -> None:
        self.topic = topic
        self.logs = partitions
        self.pos: dict[Any, int] = {}
        self.closed = False
        # Written after the end offsets were taken: must not be read.
        self.late: dict[int, list[tuple[str, bytes | None]]] = {}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(self.logs) if topic == self.topic else set()

    def assign(self, tps: list[Any]) -> None:
        self.pos = dict.fromkeys(tps, 0)

    def seek_to_beginning(self, *tps: Any) -> None:
        for tp in tps:
            self.pos[tp] = 0

    def end_offsets(self, tps: list[Any]) -> dict[Any, int]:
        ends = {tp: len(self.logs[tp.partition]) for tp in tps}
        for part, extra in self.late.items():
            self.logs[part] = self.logs[part] + extra
        return ends

    def position(self, tp: Any) -> int:
        return self.pos[tp]

    def poll(self, timeout_ms: int = 0) -> dict[Any, list[Any]]:
        out = {}
        for tp, at in self.pos.items():
            batch = self.logs[tp.partition][at : at + 2]
            if batch:
                out[tp] = [
                    SimpleNamespace(offset=at + i, key=k.encode(), value=v)
                    for i, (k, v) in enumerate(batch)
                ]
                self.pos[tp] = at + len(batch)
        return out

    def close(self) -> None:
        self.closed = True


def _case_bytes(case: EvalCase, **update: Any) -> bytes:
    return case.model_copy(update=update).model_dump_json().encode()


def test_read_live_cases_keeps_the_last_value_and_applies_tombstones() -> None:
    a, b, c, *_ = load_cases(DATA / "evalcases-pass.jsonl")
    consumer = FakeConsumer(
        "cases",
        {
            0: [
                (a.case_id, _case_bytes(a, inclusion_final=False)),
                (b.case_id, _case_bytes(b)),
                (a.case_id, _case_bytes(a)),
                (b.case_id, None),
            ],
            1: [(c.case_id, _case_bytes(c))],
        },
    )
    consumer.late = {1: [(c.case_id, None)]}
    cases = read_live_cases(consumer, "cases")
    assert [x.case_id for x in cases] == sorted([a.case_id, c.case_id])
    assert cases == sorted([a, c], key=lambda x: x.case_id)
    assert consumer.closed


def test_read_live_cases_errors_name_the_topic() -> None:
    with pytest.raises(ExportError, match="'nope' does not exist"):
        read_live_cases(FakeConsumer("cases", {0: []}), "nope")
    bad = FakeConsumer("cases", {0: [("k", b'{"not": "a case"}')]})
    with pytest.raises(ExportError, match="record of 'k' is not a case"):
        read_live_cases(bad, "cases")


def test_export_from_the_topic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cases = load_cases(DATA / "evalcases-pass.jsonl")
    seen: list[str | None] = []

    def fake(bootstrap: str | None) -> FakeConsumer:
        seen.append(bootstrap)
        return FakeConsumer("vigil.evalset", {0: [(x.case_id, _case_bytes(x)) for x in cases]})

    monkeypatch.setattr(commands, "_kafka_consumer", fake)
    out = tmp_path / "out.jsonl"
    result = run("evalset", "export", "--out", out, "--bootstrap", "kafka:9092")
    assert result.exit_code == 0, result.output
    assert "from topic vigil.evalset" in result.output
    assert seen == ["kafka:9092"] and load_cases(out) == sorted(cases, key=lambda x: x.case_id)

    result = run("evalset", "export", "--out", out, "--topic", "other")
    assert result.exit_code == 1 and "'other' does not exist" in result.output
