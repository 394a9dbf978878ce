"""One RE2 search over UTF-8 bytes: the spans of every group, without a match object.

The engine searches each rule's pattern again and again over the encoded message (one search per
value, and one that finds nothing). google-re2's ``search`` is a generator that clamps the
offsets, calls the compiled ``RE2.Match`` and wraps its spans in a ``_Match`` whose accessors
check the group index on every call: several times the cost of the search itself on a short
message. :func:`searcher` returns a function that calls the same compiled ``RE2.Match`` directly
(the wrapper's own call, same anchor, same offsets) and returns its list of ``(start, end)`` byte
spans, or ``None`` when there is no match. Where the wrapper does not expose it (another
google-re2 version), it falls back to the public ``search``; the unit tests hold both to the
same answers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import re2

__all__ = ["Search", "Spans", "searcher"]

#: ``(start, end)`` byte offsets of group 0 (the whole match) and of every group after it;
#: ``(-1, -1)`` for a group that took no part.
Spans = Sequence[tuple[int, int]]
#: ``search(data, pos)``: the spans of the first match at or after byte ``pos``, or ``None``.
Search = Callable[[bytes, int], Spans | None]


def _public(regex: re2._Regexp) -> Search:  # type: ignore[name-defined]
    groups = range(regex.groups + 1)

    def search(data: bytes, pos: int) -> Spans | None:
        hit = regex.search(data, pos)
        return None if hit is None else [hit.span(g) for g in groups]

    return search


def searcher(regex: re2._Regexp, *, fast: bool = True) -> Search:  # type: ignore[name-defined]
    """A search function for ``regex`` (compiled by ``re2.compile``) over bytes; ``pos`` must
    lie within ``data`` (``0 <= pos <= len(data)``), as the wrapper would clamp it."""
    compiled = getattr(regex, "_regexp", None)
    anchor = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
    match = getattr(compiled, "Match", None)
    if not fast or match is None or anchor is None:
        return _public(regex)

    def search(data: bytes, pos: int) -> Spans | None:
        spans: Spans = match(anchor, data, pos, len(data))
        return None if spans[0][0] < 0 else spans

    return search
