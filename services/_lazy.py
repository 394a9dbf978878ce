"""Lazy re-exports for package ``__init__`` modules (PEP 562).

A package that re-exports names from its submodules would import all of them, and their heavy
dependencies, whenever any one submodule is imported. :func:`lazy_exports` gives the package a
module ``__getattr__`` that imports a name's submodule on first use instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` resolving ``names`` (name → the module that
    defines it, absolute)."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
