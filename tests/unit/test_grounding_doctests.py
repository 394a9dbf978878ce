"""Run the doctests of every module in services.grounding."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import services.grounding as package

MODULE_NAMES = sorted(
    f"{package.__name__}.{info.name}" for info in pkgutil.iter_modules(package.__path__)
)
MUST_HAVE_EXAMPLES = {
    "services.grounding.claims",
    "services.grounding.facts",
    "services.grounding.quantities",
    "services.grounding.sentences",
}


@pytest.mark.parametrize("name", MODULE_NAMES)
def test_module_doctests_pass(name: str) -> None:
    results = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert results.failed == 0, f"{results.failed} doctest(s) failed in {name}"
    if name in MUST_HAVE_EXAMPLES:
        assert results.attempted > 0, f"{name} lost its doctest examples"


def test_every_example_module_is_discovered() -> None:
    assert set(MODULE_NAMES) >= MUST_HAVE_EXAMPLES
