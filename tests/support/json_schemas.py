"""Validate output records against the published JSON Schema files (``schemas/json/``).

The schema files are what consumers of Vigil's outputs get; a record that a model accepts but
its schema rejects is a broken contract, so tests check the files' own verdict with the
``jsonschema`` library (Draft 2020-12, as pydantic generates).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from schemas.export import JSON_DIR

__all__ = ["schema_errors", "validator"]


@cache
def validator(name: str) -> Draft202012Validator:
    schema = json.loads((JSON_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def schema_errors(name: str, records: Iterable[Any] | Path) -> list[str]:
    """Every schema error of ``records`` (dicts, or the lines of a JSONL file), as
    ``line N: path: message``."""
    if isinstance(records, Path):
        records = [json.loads(x) for x in records.read_text(encoding="utf-8").splitlines() if x]
    out = []
    for n, record in enumerate(records, start=1):
        for e in validator(name).iter_errors(record):
            where = "/".join(str(p) for p in e.absolute_path) or "<record>"
            out.append(f"line {n}: {where}: {e.message}")
    return out
