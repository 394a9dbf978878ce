"""Reference data loaded from ``rules/data/`` (files name their source in a header)."""

from __future__ import annotations

import csv
from pathlib import Path

__all__ = ["DATA_DIR", "VN_PROVINCE_CODES"]

DATA_DIR = Path(__file__).resolve().parents[2] / "rules" / "data"


def _codes(name: str) -> frozenset[str]:
    path = DATA_DIR / name
    with path.open(encoding="utf-8") as fh:
        rows = csv.DictReader(line for line in fh if not line.startswith("#"))
        return frozenset(row["code"] for row in rows)


#: Province codes of the Vietnamese CCCD (first three digits).
VN_PROVINCE_CODES = _codes("vn_cccd_province_codes.csv")
