"""ModelMapping's memo of decoded values (the sampler's member records): bounded by entries and
bytes, and never in front of the raw mapping, which stays the truth (broker-free)."""

from __future__ import annotations

import pytest

from services.evalsets.state import MemberRecord, PeriodState
from services.evalsets.tables import ModelMapping


def record(n: int, stratum: str = "unflagged|nl|-") -> MemberRecord:
    return MemberRecord(stratum=stratum, priority=n / 1000, categories=(), language="nl")


def test_a_value_read_back_is_the_one_written_until_the_raw_value_changes() -> None:
    raw: dict[str, bytes | str] = {}
    view = ModelMapping(raw, MemberRecord, memo=8, memo_bytes=4096)
    first = record(1)
    view["a"] = first
    assert view["a"] is first  # nothing decoded
    raw["a"] = record(2, "pii|nl|-").model_dump_json().encode()  # written around the view
    assert view["a"] == record(2, "pii|nl|-")
    del raw["a"]
    assert view.get("a") is None and "a" not in view
    raw["b"] = record(3).model_dump_json()  # a str value, equal bytes: still a hit after reading
    assert view["b"] is view["b"] == record(3)


def test_the_memo_is_bounded_by_entries_and_bytes() -> None:
    raw: dict[str, bytes | str] = {}
    size = len(record(0).model_dump_json())
    view = ModelMapping(raw, MemberRecord, memo=50, memo_bytes=10 * size)
    for n in range(200):
        view[f"k{n}"] = record(n)
    assert len(view._memo) <= 10 and view._held <= 10 * size
    few = ModelMapping(raw, MemberRecord, memo=3, memo_bytes=1 << 20)
    for n in range(200):
        assert few[f"k{n}"] == record(n)
    assert len(few._memo) == 3 and len(view) == 200


def test_only_frozen_models_are_memoised() -> None:
    with pytest.raises(ValueError, match="not frozen"):
        ModelMapping({}, PeriodState, memo=4, memo_bytes=4096)
