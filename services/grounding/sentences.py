"""Language-aware sentence splitting, with citation markers taken out and remembered.

Rules (English, Dutch, Vietnamese; one table of tests per language):

- every line is split on its own; a list bullet (``-``, ``*``, ``•``, ``1.``, ``2)``, ``a)``)
  at the start of a line is not part of the sentence;
- a sentence ends at ``!``, ``?``, ``;`` or ``…`` followed by a space or the end of the line,
  and at ``.`` under the same condition unless the word before it is an abbreviation of the
  language (``e.g.``, ``bijv.``, ``Dr.``, ``i.v.``, ``BS.``), a single capital (``J.``), or the
  next word starts with a lower-case letter. A ``.`` or ``,`` between digits (``2.5 mg``,
  ``2,5 mg``) is never followed by a space and so never splits;
- citation markers (``[doc:ID]``, ``[2]``, ``[1, 3]``) directly after a sentence's end belong to
  that sentence; a line holding only markers belongs to the sentence before it. Markers are
  removed from the sentence text and kept in :attr:`Sentence.markers`.

Offsets are code points into the original text; :attr:`Sentence.text` is the cleaned sentence.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from services.grounding.lexicon import ABBREVIATIONS, for_language

__all__ = ["Marker", "Sentence", "find_markers", "split_sentences"]

# Python's re, not the RE2 wrapper: these patterns are character classes and fixed-width, bounded
# repeats (``{1,600}``, ``{0,31}`` with at most 3 digits each), so a match is bounded by a
# constant and scanning stays linear; the wrapper's per-match cost was a third of the check.
_MARKER = re.compile(
    r"(?i)\[[ \t]{0,8}(?:doc:[^\[\]\n]{1,600}|\d{1,3}(?:[ \t]{0,8}[-–,;][ \t]{0,8}\d{1,3}){0,31})"
    r"[ \t]{0,8}\]"
)
_DOC_SPLIT = re.compile(r"(?i)\s*[,;]?\s*doc:\s*")
_NUMS = re.compile(r"\d{1,3}(?:[ \t]{0,8}[-–][ \t]{0,8}\d{1,3})?")
_BULLET = re.compile(r"^[ \t]{0,16}(?:[-*•·‣◦▪–—]|\d{1,3}[.)]|[A-Za-z]\))[ \t]+")
#: A run of terminators that can end a sentence: white space, a closer, a marker's ``[`` or
#: the end of the line after it (any other run, "2.5", "a.m.x", never cuts: the walk would
#: pass it by; the search passes it by in C).
_TERMINATOR = re.compile(r"[.!?;…]+(?=[\s\"'”’)\]»\[]|$)")
#: A character for which ``str.isalnum()`` holds (``\w`` is those and ``_``).
_ALNUM = re.compile(r"[^\W_]")
_CLOSERS: Final = "\"'”’)]»"
_OPENERS: Final = "\"'“‘([«"
_MAX_RANGE: Final = 32


@dataclass(frozen=True, slots=True)
class Marker:
    """One citation marker: ``doc_ids`` for ``[doc:ID]``, 1-based ``indices`` for ``[n]``."""

    raw: str
    start: int
    end: int
    doc_ids: tuple[str, ...] = ()
    indices: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Sentence:
    text: str
    start: int
    end: int
    markers: tuple[Marker, ...]
    #: True when the sentence is a list item (after a bullet).
    bullet: bool = False


def _parse_marker(raw: str, start: int, end: int) -> Marker:
    inner = raw[1:-1].strip()
    if inner.lower().startswith("doc:"):
        ids = tuple(p.strip() for p in _DOC_SPLIT.split(inner) if p.strip())
        return Marker(raw, start, end, doc_ids=ids)
    indices: list[int] = []
    for m in _NUMS.finditer(inner):
        parts = [int(p) for p in m.group().replace("–", "-").split("-")]
        low, high = parts[0], parts[-1]
        if high < low or high - low > _MAX_RANGE:
            high = low
        indices.extend(range(low, high + 1))
    return Marker(raw, start, end, indices=tuple(indices))


def find_markers(text: str) -> list[Marker]:
    """Every citation marker in ``text``, in order.

    >>> [(m.doc_ids, m.indices) for m in find_markers("A [doc:x] B [2] C [1, 3-4] [doc:a, doc:b]")]
    [(('x',), ()), ((), (2,)), ((), (1, 3, 4)), (('a', 'b'), ())]
    """
    if "[" not in text:
        return []
    return [_parse_marker(m.group(), m.start(), m.end()) for m in _MARKER.finditer(text)]


def _is_abbreviation(line: str, stop: int, abbreviations: frozenset[str]) -> bool:
    """Whether the word ending at ``line[stop]`` (a ``.``) is an abbreviation."""
    begin = stop
    while begin > 0 and not line[begin - 1].isspace():
        begin -= 1
    word = line[begin : stop + 1].lstrip(_OPENERS)
    if word.lower() in abbreviations:
        return True
    return len(word) == 2 and word[0].isupper()


class _LineSplitter:
    def __init__(self, text: str, markers: list[Marker], abbreviations: frozenset[str]) -> None:
        self.text = text
        self.by_start = {m.start: m for m in markers}
        self.abbreviations = abbreviations

    def _skip_markers(self, pos: int, limit: int) -> int:
        """Past any closers, spaces and markers that follow a terminator ending at ``pos``."""
        text = self.text
        while pos < limit and text[pos] in _CLOSERS:
            pos += 1
        end = pos
        if not self.by_start:
            return end
        while True:
            probe = end
            while probe < limit and text[probe] in " \t":
                probe += 1
            marker = self.by_start.get(probe)
            if marker is None or marker.end > limit:
                return end
            end = marker.end

    def boundaries(self, start: int, limit: int) -> Iterator[int]:
        """The cuts of ``text[start:limit]`` (one line), in order, found as they are asked for:
        a reader of the first sentences does not scan the rest of a long line."""
        text = self.text
        pos = start
        while True:
            m = _TERMINATOR.search(text, pos, limit)
            if m is None:
                return
            t_start, t_end = m.start(), m.end()
            pos = t_end
            cut = self._skip_markers(t_end, limit)
            if cut < limit and not text[cut].isspace():
                continue  # 2.5 mg, e.g.x, "end."word
            nxt = cut
            while nxt < limit and text[nxt].isspace():
                nxt += 1
            if nxt >= limit:
                continue  # the line ends here anyway
            run = m.group()
            if "." in run and not ("!" in run or "?" in run or ";" in run):
                if text[nxt].islower():
                    continue
                if run == "." and _is_abbreviation(text, t_start, self.abbreviations):
                    continue
            yield cut
            pos = cut


def _clean(text: str, start: int, end: int, markers: list[Marker]) -> str:
    pieces: list[str] = []
    pos = start
    for m in markers:
        pieces.append(text[pos : m.start])
        pos = m.end
    pieces.append(text[pos:end])
    joined = " ".join("".join(pieces).split())
    for punct in ".,;:!?":
        joined = joined.replace(f" {punct}", punct)
    return joined


def split_sentences(
    text: str, language: str | None = None, at_most: int | None = None
) -> list[Sentence]:
    """Split an answer into sentences (see the module docstring); with ``at_most``, only the
    first ``at_most`` of them, exactly as the whole split gives them (the text after them is
    scanned only as far as the start of the next sentence, which no marker line can change).

    >>> [s.text for s in split_sentences("Take 2.5 mg, e.g. at 8 a.m. daily [doc:a]. Then rest.")]
    ['Take 2.5 mg, e.g. at 8 a.m. daily.', 'Then rest.']
    """
    abbreviations = for_language(ABBREVIATIONS, language)
    markers = find_markers(text)
    splitter = _LineSplitter(text, markers, abbreviations)
    sentences: list[Sentence] = []
    line_start = 0
    while line_start <= len(text):
        line_end = text.find("\n", line_start)
        if line_end < 0:
            line_end = len(text)
        bullet = _BULLET.match(text[line_start:line_end])
        seg_start = line_start + bullet.end() if bullet else line_start
        for cut in itertools.chain(splitter.boundaries(seg_start, line_end), (line_end,)):
            _add(sentences, text, seg_start, cut, markers, bullet=bullet is not None)
            seg_start = cut
            if at_most is not None and len(sentences) > at_most:
                # only a line of markers changes a sentence once it is added, and only the
                # last one: with one sentence more, the first ``at_most`` are final
                return sentences[:at_most]
        line_start = line_end + 1
    return sentences if at_most is None else sentences[:at_most]


def _add(
    out: list[Sentence], text: str, start: int, end: int, markers: list[Marker], *, bullet: bool
) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start >= end:
        return
    inside = [m for m in markers if start <= m.start and m.end <= end]
    cleaned = _clean(text, start, end, inside)
    if _ALNUM.search(cleaned) is None:
        if inside and out:  # a line of markers only: they cite the sentence before
            last = out[-1]
            out[-1] = Sentence(
                last.text, last.start, last.end, (*last.markers, *inside), last.bullet
            )
        return
    out.append(Sentence(cleaned, start, end, tuple(inside), bullet))
