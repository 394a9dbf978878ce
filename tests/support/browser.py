"""Headless Chromium for end-to-end tests: Debian's ``chromium`` driven by Playwright.

No browser is ever downloaded (``playwright install`` is neither needed nor run): Playwright
launches the system binary found on ``PATH``. Missing binary or missing ``playwright`` package:
the test fails under CI and is skipped elsewhere, like every other external tool of the suite.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import pytest

from tests.support.tools import require_tool

if TYPE_CHECKING:
    from playwright.async_api import Browser

__all__ = ["CHROMIUM_ARGS", "chromium", "chromium_path"]

#: Flags for a container without a user namespace, a GPU or network access beyond loopback.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]


def chromium_path() -> str:
    return require_tool("chromium")


def _require_playwright() -> None:
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        message = "playwright is not installed: pip install -e '.[dev]'"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """A headless Chromium browser, closed on exit."""
    path = chromium_path()
    _require_playwright()
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            await browser.close()
