"""Finding external tools the suite needs (installed by `make test` via deploy/system-deps.sh)."""

from __future__ import annotations

import os
import shutil

import pytest

__all__ = ["require_tool"]


def require_tool(name: str) -> str:
    """Path of ``name``. Missing: fail under CI (nothing skips silently there), else skip."""
    path = shutil.which(name)
    if path:
        return path
    message = f"{name} is not installed: run `make system-deps` (deploy/system-deps.sh)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
