"""Run the doctests (the SPEC examples) of every module in services.evaluation."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from types import ModuleType

import pytest

import services.evaluation as package

MODULE_NAMES = sorted(
    f"{package.__name__}.{info.name}" for info in pkgutil.iter_modules(package.__path__)
)
# Modules whose docstrings carry SPEC examples; a doctest that disappears must fail too.
MUST_HAVE_EXAMPLES = {
    "services.evaluation.abstention",
    "services.evaluation.claims",
    "services.evaluation.grounding_score",
    "services.evaluation.retrieval",
    "services.evaluation.risk_coverage",
}


def _run(module: ModuleType) -> doctest.TestResults:
    return doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False, report=True)


@pytest.mark.parametrize("name", [package.__name__, *MODULE_NAMES])
def test_module_doctests_pass(name: str) -> None:
    results = _run(importlib.import_module(name))
    assert results.failed == 0, f"{results.failed} doctest(s) failed in {name}"
    if name in MUST_HAVE_EXAMPLES:
        assert results.attempted > 0, f"{name} lost its doctest examples"


def test_every_example_module_is_discovered() -> None:
    assert set(MODULE_NAMES) >= MUST_HAVE_EXAMPLES
