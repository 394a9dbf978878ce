"""The engine's RE2 search without match objects gives the wrapper's answers exactly."""

from __future__ import annotations

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from services.rules.re2search import searcher

PATTERNS = [
    r"\d+",
    r"(?P<v>\d{3})(?:\D|$)",
    r"(a)|(b)",
    r"x*",  # matches the empty string everywhere
    r"(?i)(?:^|\W)(é+)(?:\W|$)",
    r"(?P<value>[\pL]+)@(\w+)\.nl",
]
TEXTS = ["", "abc 123 4567", "b a b", "Éé é xé", "😀 jan@mail.nl 12", "x" * 5]


def _spans(pattern: str, data: bytes, pos: int, *, fast: bool) -> object:
    return searcher(re2.compile(pattern), fast=fast)(data, pos)


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("text", TEXTS)
def test_fast_search_equals_the_wrapper(pattern: str, text: str) -> None:
    data = text.encode()
    for pos in range(len(data) + 1):
        fast = _spans(pattern, data, pos, fast=True)
        public = _spans(pattern, data, pos, fast=False)
        assert (None if fast is None else list(fast)) == public


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab1 2é😀.@x", max_size=40), st.sampled_from(PATTERNS), st.integers(0, 60))
def test_fast_search_equals_the_wrapper_on_any_text(text: str, pattern: str, pos: int) -> None:
    data = text.encode()
    pos = min(pos, len(data))
    fast = _spans(pattern, data, pos, fast=True)
    assert (None if fast is None else list(fast)) == _spans(pattern, data, pos, fast=False)


def test_the_installed_google_re2_takes_the_fast_path() -> None:
    """A google-re2 version without ``_Regexp._regexp.Match`` still works (the public search),
    but screening is slower: this test says so when it happens."""
    regex = re2.compile("a")
    assert hasattr(regex, "_regexp") and hasattr(regex._regexp, "Match")
    assert searcher(regex).__qualname__ != searcher(regex, fast=False).__qualname__
