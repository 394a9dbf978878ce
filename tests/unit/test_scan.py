"""`vigil scan` end to end in process: outputs, stdin, dead letters, metrics exposition."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from services.cli import app
from services.scan import run_scan
from services.settings import Settings
from tests.support.tools import require_tool

PACK = Path(__file__).parent.parent / "data" / "mini-pack.yaml"
ROOT = Path(__file__).resolve().parents[2]


def _line(i: int, role: str, content: str, conv: str = "c1") -> str:
    return json.dumps(
        {
            "schema_version": 1,
            "event_id": f"e{i}",
            "conversation_id": conv,
            "turn_index": i,
            "timestamp": "2026-11-02T10:00:00Z",
            "role": role,
            "content": content,
            "tenant": "t1",
        }
    )


LINES = [
    _line(0, "user", "I am anna@example.nl, card 4111 1111 1111 1111"),
    _line(1, "assistant", "Hello anna@example.nl; carl@example.com asked too."),
    "not json at all",
    "",
    _line(2, "user", "card 4111 1111 1111 1112 fails Luhn"),
]


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_scan_writes_outputs_and_counts(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(LINES) + "\n")
    settings = Settings(rules_dir=PACK, metric_tenants=["t1"])
    summary = run_scan(str(src), tmp_path / "out", settings)
    assert (summary.events, summary.dead_letters, summary.blank_lines) == (3, 1, 1)
    findings = [json.loads(x) for x in (tmp_path / "out/findings.jsonl").read_text().splitlines()]
    assert [(f["event_id"], f["entity"], f["direction"]) for f in findings] == [
        ("e0", "EMAIL_ADDRESS", "input"),
        ("e0", "CREDIT_CARD", "input"),
        ("e1", "EMAIL_ADDRESS", "echo"),
        ("e1", "EMAIL_ADDRESS", "leak"),
    ]
    assert all("anna" not in f["evidence"] for f in findings)
    (dead,) = (tmp_path / "out/dead_letters.jsonl").read_text().splitlines()
    assert json.loads(dead)["source"] == "in.jsonl:3"
    metrics = _samples((tmp_path / "out/metrics.prom").read_text())
    assert metrics[("vigil_events_total", (("role", "user"), ("tenant", "t1")))] == 2
    assert metrics[("vigil_invalid_events_total", (("reason", "bad_json"),))] == 1
    leak = (("category", "pii"), ("direction", "leak"), ("rule", "pii.email"), ("severity", "high"))
    assert metrics[("vigil_findings_total", leak)] == 1
    assert json.loads((tmp_path / "out/summary.json").read_text())["findings"] == 4


def test_metrics_exposition_passes_promtool(tmp_path: Path) -> None:
    promtool = require_tool("promtool")
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(LINES) + "\n")
    run_scan(str(src), tmp_path / "out", Settings(rules_dir=PACK))
    text = (tmp_path / "out/metrics.prom").read_bytes()
    res = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True)
    assert res.returncode == 0, res.stdout.decode() + res.stderr.decode()


def test_cli_scan_reads_stdin_and_prints_summary(tmp_path: Path) -> None:
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "services.cli",
            "scan",
            "-",
            "--out",
            str(tmp_path),
            "--rules",
            str(PACK),
        ],
        input="\n".join(LINES).encode(),
        capture_output=True,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stderr.decode()
    out = res.stdout.decode()
    assert "findings" in out and "dead letters" in out
    assert (tmp_path / "findings.jsonl").read_text().count("\n") == 4


def test_cli_errors_are_clear(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["scan", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path)])
    assert res.exit_code == 2 and "no such file" in res.output
    bad = tmp_path / "bad.yaml"
    bad.write_text(PACK.read_text().replace("validator: luhn", "validator: lunh"))
    res = runner.invoke(app, ["rules", "check", str(bad)])
    assert res.exit_code == 2
    assert "bad.yaml" in res.output and "pii.card" in res.output and "lunh" in res.output
    res = runner.invoke(app, ["rules", "check", str(PACK)])
    assert res.exit_code == 0 and "2 rules ok" in res.output
