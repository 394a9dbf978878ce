"""``vigil scan`` as a CI tool: exit codes, summary lines, output-path errors, stale files, modes.

Exit status: 0 done, 1 a finding at or above ``--fail-on``, 2 unusable input (no valid event at
all) or a path that cannot be used. Every user error is one clear line on stderr, never a
traceback (``CliRunner`` runs the real command in process: an uncaught exception would be
``result.exception``).
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from services.cli import app
from services.review.embedded import ACTIONS_FILE, LABELS_FILE, REVIEW_LABELS_FILE, STATE_FILE
from services.scan import OUTPUT_FILES
from tests.support.chat_events import event
from tests.support.judge_server import JudgeServer

REVIEW_FILES = (STATE_FILE, ACTIONS_FILE, REVIEW_LABELS_FILE, LABELS_FILE)

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "tests" / "data" / "mini-pack.yaml"
EXAMPLE = ROOT / "examples" / "chat-events.jsonl"


def line(i: int, role: str, content: str, conv: str = "c1", **extra: object) -> str:
    return json.dumps(event(f"e{i}", conv, i, role, content, **extra))


def scan(*args: str, env: dict[str, str] | None = None) -> Result:
    res = CliRunner().invoke(app, ["scan", *args, "--no-progress"], env=env)
    # A user error ends in SystemExit with a message; anything else is a traceback.
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output
    return res


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


CLEAN = [line(0, "user", "Hoeveel paracetamol mag ik?"), line(1, "assistant", "Vraag het uw arts.")]
#: A card number is a high-severity finding in the mini pack.
HIGH = [line(0, "user", "my card is 4111 1111 1111 1111"), line(1, "assistant", "Noted.")]


# ------------------------------------------------------------------------- exit codes


def test_exit_0_on_clean_input(tmp_path: Path) -> None:
    res = scan(str(write(tmp_path / "in.jsonl", CLEAN)), "--out", str(tmp_path / "o"))
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize(
    ("fail_on", "code"), [("critical", 0), ("high", 1), ("medium", 1), ("LOW", 1)]
)
def test_fail_on_severity_exits_1_at_or_above_it(tmp_path: Path, fail_on: str, code: int) -> None:
    src = write(tmp_path / "in.jsonl", HIGH)
    res = scan(str(src), "--out", str(tmp_path / "o"), "--rules", str(PACK), "--fail-on", fail_on)
    assert res.exit_code == code, res.output
    if code:
        assert "1 findings of severity" in res.output
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["findings_by_severity"] == {"high": 1}


def test_fail_on_rejects_an_unknown_severity(tmp_path: Path) -> None:
    src = write(tmp_path / "in.jsonl", HIGH)
    res = scan(str(src), "--out", str(tmp_path / "o"), "--fail-on", "severe")
    assert res.exit_code == 2 and "severe" in res.output


def test_binary_file_is_unusable_input_exit_2(tmp_path: Path) -> None:
    src = tmp_path / "blob.bin"
    src.write_bytes(bytes(range(256)) * 40 + b"\n\xff\xfe\x00\n" * 30)
    res = scan(str(src), "--out", str(tmp_path / "o"))
    assert res.exit_code == 2
    assert "no valid chat event in" in res.output and "dead letters" in res.output
    # The dead letters are written all the same.
    assert (tmp_path / "o" / "dead_letters.jsonl").read_text().count("\n") > 0


@pytest.mark.parametrize(
    ("content", "why"), [("", "has no line"), ("\n \n\n", "every line is blank")]
)
def test_empty_input_exit_2(tmp_path: Path, content: str, why: str) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(content)
    res = scan(str(src), "--out", str(tmp_path / "o"))
    assert res.exit_code == 2 and why in res.output


def test_dead_letter_share_warning(tmp_path: Path) -> None:
    lines = [*CLEAN, "not json"]  # 1 of 3 lines
    src = write(tmp_path / "in.jsonl", lines)
    res = scan(str(src), "--out", str(tmp_path / "o"))
    assert res.exit_code == 0
    assert "33.3% of the lines are dead letters (1), more than 1.0%" in res.output
    res = scan(str(src), "--out", str(tmp_path / "o"), "--dead-letter-warn", "0.5")
    assert res.exit_code == 0 and "dead letters (1), more than" not in res.output


# ------------------------------------------------------------------------- judge summary


def test_summary_says_when_there_is_no_judge(tmp_path: Path) -> None:
    res = scan(str(write(tmp_path / "in.jsonl", CLEAN)), "--out", str(tmp_path / "o"))
    assert "no judge (--judge-url)" in res.output
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["judge_calls"] == {}


def test_summary_counts_judge_calls_failures_and_unverified_claims(tmp_path: Path) -> None:
    env = {"VIGIL_JUDGE_MAX_RETRIES": "0"}
    with JudgeServer() as judge:
        healthy = scan(
            str(EXAMPLE), "--out", str(tmp_path / "ok"), "--judge-url", judge.url, env=env
        )
        judge.set_mode("down")
        down = scan(
            str(EXAMPLE), "--out", str(tmp_path / "down"), "--judge-url", judge.url, env=env
        )
    assert healthy.exit_code == down.exit_code == 0
    ok = json.loads((tmp_path / "ok" / "summary.json").read_text())
    assert ok["judge_calls"].get("ok", 0) > 0
    assert ok["judge_failures"] == 0 and ok["unverified_claims"] == 0
    calls = sum(ok["judge_calls"].values())
    row = rf"judge calls / failed / unverified claims\s*│\s*{calls} / 0 / 0"
    assert re.search(row, healthy.output)
    bad = json.loads((tmp_path / "down" / "summary.json").read_text())
    failed = sum(bad["judge_calls"].values())
    assert failed == bad["judge_failures"] == calls  # the same claims, every call failed
    assert bad["unverified_claims"] > 0
    assert f"every judge call failed ({failed})" in down.output


# ------------------------------------------------------------------------- paths


def test_missing_input_and_a_folder_as_input(tmp_path: Path) -> None:
    res = scan(str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o"))
    assert res.exit_code == 2 and "missing.jsonl: no such file" in res.output
    res = scan(str(tmp_path), "--out", str(tmp_path / "o"))
    assert res.exit_code == 2 and "is a folder, not a file" in res.output


def test_output_path_that_is_a_file(tmp_path: Path) -> None:
    src = write(tmp_path / "in.jsonl", CLEAN)
    target = tmp_path / "taken"
    target.write_text("mine")
    res = scan(str(src), "--out", str(target))
    assert res.exit_code == 2 and "exists and is not a folder" in res.output
    assert target.read_text() == "mine"
    res = scan(str(src), "--out", str(target / "sub"))
    assert res.exit_code == 2 and "cannot create the folder" in res.output


def test_output_folder_that_cannot_be_written(tmp_path: Path) -> None:
    src = write(tmp_path / "in.jsonl", CLEAN)
    if os.geteuid() == 0:  # root writes anywhere a mode allows nothing: use a read-only mount
        target = Path("/sys/vigil-scan-out")
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        target = locked / "out"
    res = scan(str(src), "--out", str(target))
    assert res.exit_code == 2 and f"--out {target}: cannot create the folder" in res.output


def test_output_file_name_taken_by_a_folder(tmp_path: Path) -> None:
    out = tmp_path / "o"
    (out / "findings.jsonl").mkdir(parents=True)
    res = scan(str(write(tmp_path / "in.jsonl", CLEAN)), "--out", str(out))
    assert res.exit_code == 2 and "findings.jsonl is a folder" in res.output


def test_reused_output_folder_keeps_no_stale_file(tmp_path: Path) -> None:
    out = tmp_path / "o"
    out.mkdir()
    for name in OUTPUT_FILES:
        (out / name).write_text("from a previous run\n")
    (out / "notes.txt").write_text("the user's own file\n")
    # The reviewers' work that `vigil review serve --from` keeps in the folder is not the scan's.
    reviewed = {name: f"{name} of the reviewers\n" for name in REVIEW_FILES}
    for name, text in reviewed.items():
        (out / name).write_text(text)
    res = scan(str(write(tmp_path / "in.jsonl", CLEAN)), "--out", str(out))
    assert res.exit_code == 0
    # One clean week of events retires no period: no archive, so no archive file at all.
    assert not (out / "evalset-archive.jsonl").exists()
    for name in set(OUTPUT_FILES) - {"evalset-archive.jsonl"}:
        assert "previous run" not in (out / name).read_text(), name
    assert (out / "notes.txt").read_text() == "the user's own file\n"
    assert {name: (out / name).read_text() for name in reviewed} == reviewed


def test_evalset_disabled_leaves_no_old_evalset(tmp_path: Path) -> None:
    out = tmp_path / "o"
    src = write(tmp_path / "in.jsonl", CLEAN)
    assert scan(str(src), "--out", str(out)).exit_code == 0
    assert (out / "evalset.jsonl").exists()
    assert scan(str(src), "--out", str(out), env={"VIGIL_EVALSET_ENABLED": "false"}).exit_code == 0
    assert not (out / "evalset.jsonl").exists()


def test_every_output_file_is_private(tmp_path: Path) -> None:
    out = tmp_path / "new" / "o"
    res = scan(str(EXAMPLE), "--out", str(out))
    assert res.exit_code == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    written = sorted(p.name for p in out.iterdir())
    assert set(written) >= set(OUTPUT_FILES) - {"evalset-archive.jsonl"}
    for path in out.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name
