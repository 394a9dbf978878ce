"""``vigil scan`` writes the same records as before the one-dataflow redesign.

``tests/data/scan-golden.json`` holds digests of the outputs made at commit dacd2ff (the last
commit with the old scan loop) for the example log and for 10,000 events of the example log
cycled with unique ids over seven weeks, with invalid lines mixed in (the file name is part
of the outputs: dead letters and cases name their source line), regenerated twice since on
purpose (issue 11: review items, fact checks and cases carry more; issue 13: metrics.prom only,
the rate intervals' degrees-of-freedom correction and gauges). A change that alters an output
on purpose regenerates the digests and says why in its commit.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from services.scan import run_scan
from services.settings import Settings
from tests.support.chat_events import EXAMPLES_PATH
from tests.support.example_cycle import write_cycled_example
from tests.support.scan_golden import digest_outputs

GOLDEN = json.loads((Path(__file__).parents[1] / "data" / "scan-golden.json").read_text())


Digests = dict[str, dict[str, object]]


def _differences(got: Digests, want: Digests) -> list[str]:
    return [f"{n}: {got.get(n)} != {want[n]}" for n in sorted(want) if got.get(n) != want[n]]


def test_example_log_outputs_are_unchanged(tmp_path: Path) -> None:
    run_scan(str(EXAMPLES_PATH), tmp_path, Settings())
    assert _differences(digest_outputs(tmp_path), GOLDEN["example_log"]) == []


@pytest.mark.timeout(600)
def test_cycled_rag_file_outputs_are_unchanged(tmp_path: Path) -> None:
    source = write_cycled_example(
        tmp_path / "rag10k.jsonl", 10_000, shift=timedelta(days=2), invalid_every=997
    )
    out = tmp_path / "out"
    run_scan(str(source), out, Settings())
    assert _differences(digest_outputs(out), GOLDEN["cycled_10k"]) == []
