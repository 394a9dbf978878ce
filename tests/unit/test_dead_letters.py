"""No raw personal data at rest in dead letters (``vigil scan``; the worker's DLQ topic carries
the same records, ``tests/integration/test_worker_dead_letters.py``).

By default a dead letter keeps the reason, the position, the length, a keyed digest of the whole
message and its text with every value the screening rules find masked; no text at all when it
is not UTF-8. ``VIGIL_DEAD_LETTER_RAW=true`` adds the raw bytes, with a warning. The file is
mode 0600. Every record is checked against the ``DeadLetter`` model and the file against its
published ``schemas/json/DeadLetter.schema.json``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import stat
from pathlib import Path

from typer.testing import CliRunner

from schemas import DeadLetter
from services.cli import app
from services.settings import Settings
from tests.support.json_schemas import schema_errors

VALUES = {
    "phone": "0901 118 800",
    "email": "an.nguyen@example.vn",
    "iban": "NL91ABNA0417164300",
    "bsn": "123456782",
    "card": "4111 1111 1111 1111",
}


def lines() -> list[bytes]:
    v = VALUES
    good = {
        "schema_version": 1,
        "event_id": "ok-1",
        "conversation_id": "c1",
        "turn_index": 0,
        "timestamp": "2026-11-02T10:00:00Z",
        "role": "user",
        "content": "Hallo",
    }
    bad_json = f'{{"event_id": "x1", "content": "bel {v["phone"]} of mail {v["email"]}"'
    schema = {
        **good,
        "event_id": "x2",
        "role": "wizard",
        "content": f"BSN {v['bsn']}, IBAN {v['iban']}",
    }
    oversize = {**good, "event_id": "x3", "content": f"card {v['card']} " + "x" * 70_000}
    bad_utf8 = f'{{"content": "bel {v["phone"]} \xff"}}'.encode("latin-1")
    return [
        json.dumps(good).encode(),
        bad_json.encode(),
        json.dumps(schema).encode(),
        json.dumps(oversize).encode(),
        bad_utf8,
    ]


def forms(value: str) -> set[str]:
    """A value as written and as its bare digits (base64 of either is checked too)."""
    digits = "".join(ch for ch in value if ch.isdigit())
    return {value, digits} if len(digits) >= 6 else {value}


def scan(tmp_path: Path, env: dict[str, str] | None = None) -> tuple[list[str], str]:
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(lines()) + b"\n")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["scan", str(src), "--out", str(out), "--no-progress"], env=env)
    assert res.exit_code == 0, res.output
    path = out / "dead_letters.jsonl"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert schema_errors("DeadLetter", path) == []
    return path.read_text(encoding="utf-8").splitlines(), res.output


def test_dead_letters_keep_no_raw_personal_data_by_default(tmp_path: Path) -> None:
    records, output = scan(tmp_path)
    assert "VIGIL_DEAD_LETTER_RAW" not in output
    dead = [DeadLetter.model_validate_json(r) for r in records]
    assert [d.reason for d in dead] == ["bad_json", "schema", "oversize", "bad_utf8"]
    text = "\n".join(records)
    for value in VALUES.values():
        for form in forms(value):
            assert form not in text, form
    raw_lines = lines()[1:]
    key = Settings().key_bytes
    for d, raw in zip(dead, raw_lines, strict=True):
        assert d.original_b64 is None
        assert d.original_size == len(raw)
        assert d.digest == hashlib.blake2b(raw, key=key, digest_size=16).hexdigest()
        assert d.source.startswith("in.jsonl:")
    bad_json, schema, oversize, bad_utf8 = dead
    # Masked as in findings' evidence: the shape stays readable, the value does not.
    assert bad_json.masked is not None and "***@***.vn" in bad_json.masked
    assert "bel " in bad_json.masked and "8*00" not in bad_json.masked
    assert schema.masked is not None and "wizard" in schema.masked and "BSN " in schema.masked
    assert oversize.truncated and oversize.masked is not None
    assert len(oversize.masked.encode()) <= 4096 and "card " in oversize.masked
    assert bad_utf8.masked is None  # not text: cannot be masked, so not kept at all


def test_raw_mode_restores_the_bytes_with_a_warning(tmp_path: Path) -> None:
    records, output = scan(tmp_path, env={"VIGIL_DEAD_LETTER_RAW": "true"})
    assert "VIGIL_DEAD_LETTER_RAW=true: dead letters keep the raw" in output
    dead = [DeadLetter.model_validate_json(r) for r in records]
    for d, raw in zip(dead, lines()[1:], strict=True):
        assert d.original_b64 is not None
        assert base64.b64decode(d.original_b64) == raw[:4096]
