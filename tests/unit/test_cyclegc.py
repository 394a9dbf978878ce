"""The cyclic collector's threshold: set by the setting, kept by 0 (``services/cyclegc.py``)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.cyclegc import tune_collector
from services.settings import Settings


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_the_setting_raises_the_youngest_generation_and_keeps_the_older_ones() -> None:
    gc.set_threshold(700, 10, 10)
    before = tune_collector(Settings().gc_gen0_threshold)
    assert before == (700, 10, 10)
    assert gc.get_threshold() == (50_000, 10, 10)


def test_zero_keeps_cpythons_threshold() -> None:
    gc.set_threshold(700, 10, 10)
    tune_collector(0)
    assert gc.get_threshold() == (700, 10, 10)


def test_the_environment_sets_it() -> None:
    assert Settings(_env_file=None, gc_gen0_threshold=0).gc_gen0_threshold == 0
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VIGIL_GC_GEN0_THRESHOLD", "2500")
        assert Settings().gc_gen0_threshold == 2500


def test_the_cli_tunes_the_collector_before_it_scans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from services import cli

    seen: list[int] = []
    monkeypatch.setattr(cli, "tune_collector", lambda n: seen.append(n) or (700, 10, 10))
    monkeypatch.setenv("VIGIL_GC_GEN0_THRESHOLD", "1234")
    out = tmp_path / "out"
    result = CliRunner().invoke(cli.app, ["scan", "examples/chat-events.jsonl", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert seen == [1234]
