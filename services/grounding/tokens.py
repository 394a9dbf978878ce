"""One pass over a text: tokens with spans, and a phrase matcher over them.

Every reader of the grounding check (numbers with units, content words, cue phrases, drug and
population names) works on the same token list, made once per sentence or passage:

- a **number** is a run of digits with inner ``.``/``,`` separators (``2,5``, ``1.000.000``);
- a **word** is a run of letters, with one apostrophe suffix (``don't``), lower-cased in NFC;
  ``n't`` reads as ``not`` and a possessive ``'s`` is dropped;
- every other visible character is a **symbol** token of its own (``/``, ``-``, ``%``, ``:``).

:attr:`Tokens.glued` tells whether a token touches the one before it (``500mg``, ``B12``).

The pattern uses Python's ``re``: a character class repeated, then an optional fixed-shape
suffix, with no nested ambiguity, so it cannot backtrack; it is linear by construction and far
cheaper per match than the RE2 wrapper (the reason for this module; see docs/grounding.md).

:class:`PhraseMatcher` finds the longest listed phrase (a tuple of token texts) at each position,
left to right, without overlaps: one dict lookup per token.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

__all__ = [
    "NUM",
    "SYM",
    "WORD",
    "PhraseMatcher",
    "TextTokens",
    "Tokens",
    "phrase_spans",
    "phrase_tokens",
    "tokenize",
]

WORD: Final = 0
NUM: Final = 1
SYM: Final = 2

#: Words first: the three kinds start with different characters (a letter, a digit, anything
#: else visible), so the order of the branches decides nothing but how soon the usual one is
#: tried (a tenth of the scan).
_TOKEN = re.compile(r"([^\W\d_]+(?:['’][^\W\d_]+)?)|(\d+(?:[.,]\d+)*)|([^\w\s])")
#: Group number of a match → token kind.
_KIND: Final = {1: WORD, 2: NUM, 3: SYM}


def _word(raw: str) -> str:
    word = raw.lower()
    if "'" in word or "’" in word:
        head, tail = word.replace("’", "'").split("'", 1)
        word = "not" if tail == "t" and head.endswith("n") else head
    return word


@dataclass(frozen=True, slots=True)
class Tokens:
    """Parallel lists: token text (lower case), kind, start and end offsets into :attr:`text`."""

    text: str
    words: list[str]
    kinds: list[int]
    starts: list[int]
    ends: list[int]

    def __len__(self) -> int:
        return len(self.words)

    def glued(self, i: int) -> bool:
        """Whether token ``i`` touches the token before it."""
        return i > 0 and self.starts[i] == self.ends[i - 1]


def tokenize(text: str, *, normalized: bool = False) -> Tokens:
    """Tokens of the NFC form of ``text`` (pass ``normalized=True`` when it already is)."""
    if not normalized:
        text = unicodedata.normalize("NFC", text)
    low = text.lower()
    if len(low) != len(text):  # a few letters lower-case to two code points ("İ")
        return _tokenize_slow(text)
    matches = list(_TOKEN.finditer(low))
    # map() over the match methods runs the loops in C (a third of the cost of comprehensions)
    kinds = list(map(_KIND_OF, map(_LASTINDEX, matches)))
    words = list(map(re.Match.group, matches))
    if "'" in low or "’" in low:
        words = [_word(w) if k == WORD else w for w, k in zip(words, kinds, strict=True)]
    starts = list(map(re.Match.start, matches))
    ends = list(map(re.Match.end, matches))
    return Tokens(text, words, kinds, starts, ends)


_LASTINDEX: Final = operator.attrgetter("lastindex")
_KIND_OF: Final = _KIND.__getitem__


def _tokenize_slow(text: str) -> Tokens:
    words: list[str] = []
    kinds: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    for m in _TOKEN.finditer(text):
        kind = _KIND[m.lastindex]  # type: ignore[index]
        words.append(_word(m.group()) if kind == WORD else m.group().lower())
        kinds.append(kind)
        starts.append(m.start())
        ends.append(m.end())
    return Tokens(text, words, kinds, starts, ends)


class TextTokens:
    """The tokens of a text, and of the sentences split from it: a sentence's are a slice of
    the text's when that is what ``tokenize(sentence)`` gives. For a reader that needs the
    whole text's tokens too (a question's age and weight), one scan instead of two; slicing
    costs about what scanning a sentence does, so it saves nothing on its own (answers)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.whole = tokenize(source)
        #: ``source`` is NFC and lower-cases each character to one, so that the offsets of
        #: :attr:`whole` are into ``source`` itself.
        self._sliceable = self.whole.text == source and len(source.lower()) == len(source)

    def sentence(self, text: str, start: int, end: int) -> Tokens:
        """``tokenize(text)`` for the sentence ``text`` split from ``source[start:end]``:
        sliced from :attr:`whole` when ``text`` is ``source[start:end]`` itself (no citation
        marker or spacing was taken out), NFC, with white space or an end of ``source`` on
        both sides, where no token can run across and lower-casing looks no further."""
        source = self.source
        if not (
            self._sliceable
            and source[start:end] == text
            and (start == 0 or source[start - 1].isspace())
            and (end == len(source) or source[end].isspace())
            and unicodedata.is_normalized("NFC", text)
        ):
            return tokenize(text)
        whole = self.whole
        lo = bisect.bisect_left(whole.starts, start)
        hi = bisect.bisect_left(whole.starts, end)
        shift = start.__rsub__
        return Tokens(
            text,
            whole.words[lo:hi],
            whole.kinds[lo:hi],
            list(map(shift, whole.starts[lo:hi])),
            list(map(shift, whole.ends[lo:hi])),
        )


def phrase_tokens(phrase: str) -> tuple[str, ...]:
    """A phrase as the tuple of token texts the matcher compares (``"Don't take"`` →
    ``("not", "take")``)."""
    return tuple(tokenize(phrase).words)


def phrase_spans(
    words: Sequence[str], lo: int, hi: int, phrases: Sequence[tuple[str, ...]]
) -> list[tuple[int, int]]:
    """Where each of ``phrases`` stands in ``words[lo:hi]``: ``(first, stop)`` token spans,
    overlapping or not (a :class:`PhraseMatcher` gives the longest of each place only)."""
    firsts = {p[0] for p in phrases}
    out: list[tuple[int, int]] = []
    for i in range(lo, hi):
        if words[i] not in firsts:
            continue
        for p in phrases:
            if p[0] == words[i] and tuple(words[i : i + len(p)]) == p and i + len(p) <= hi:
                out.append((i, i + len(p)))
    return out


P = TypeVar("P")
#: What a payload lookup gives for no phrase (a payload may be anything, ``None`` too).
_NONE: Final = object()


class PhraseMatcher(Generic[P]):
    """Longest-match lookup of phrases (token tuples) with a payload each.

    A phrase listed twice with different payloads is an error (the caller names the file).
    """

    def __init__(self, phrases: Iterable[tuple[tuple[str, ...], P]] = ()) -> None:
        #: first word → the lengths of the phrases it starts, longest first
        self._lengths: dict[str, tuple[int, ...]] = {}
        #: the same without the phrases of one word, which are in :attr:`_single`
        self._longer: dict[str, tuple[int, ...]] = {}
        self._single: dict[str, P] = {}
        self._payload: dict[tuple[str, ...], P] = {}
        for words, payload in phrases:
            self.add(words, payload)

    def add(self, words: tuple[str, ...], payload: P) -> None:
        if not words:
            raise ValueError("empty phrase")
        old = self._payload.get(words, payload)
        if old != payload:
            raise ValueError(f"phrase {' '.join(words)!r} listed twice: {old!r} and {payload!r}")
        if words in self._payload:
            return
        self._payload[words] = payload
        lengths = set(self._lengths.get(words[0], ())) | {len(words)}
        self._lengths[words[0]] = tuple(sorted(lengths, reverse=True))
        if len(words) == 1:
            self._single[words[0]] = payload
        else:
            self._longer[words[0]] = tuple(k for k in self._lengths[words[0]] if k > 1)

    def subset(self, keep: Callable[[P], bool]) -> PhraseMatcher[P]:
        """A matcher of the phrases whose payload ``keep`` accepts."""
        return PhraseMatcher((w, p) for w, p in self._payload.items() if keep(p))

    def occurs(self, words: list[str], start: int = 0, end: int | None = None) -> bool:
        """Whether a phrase occurs in ``words[start:end]`` anywhere, overlaps or not: true
        whenever :meth:`find` finds something (and sometimes when it does not)."""
        stop = len(words) if end is None else end
        firsts = map(self._lengths.__contains__, words[start:stop])
        return any(
            self.at(words, i, stop) is not None
            for i in itertools.compress(range(start, stop), firsts)
        )

    @property
    def starts(self) -> Callable[[object], bool]:
        """Whether some phrase starts with a word: the dictionary's own test, for ``map()``."""
        return self._lengths.__contains__

    def __contains__(self, words: object) -> bool:
        return words in self._payload

    def __len__(self) -> int:
        return len(self._payload)

    def at(self, words: list[str], i: int, limit: int | None = None) -> tuple[int, P] | None:
        """The longest phrase starting at ``words[i]`` and ending by ``limit``:
        ``(length, payload)``, or ``None``. One dictionary lookup per distinct phrase length
        of that first word, however many phrases start with it."""
        word = words[i]
        n = len(words) if limit is None else limit
        longer = self._longer.get(word)
        if longer is not None:
            payloads = self._payload
            for k in longer:
                if i + k <= n:
                    got = payloads.get(tuple(words[i : i + k]), _NONE)
                    if got is not _NONE:
                        return k, got  # type: ignore[return-value]
        got = self._single.get(word, _NONE)  # a phrase of one word: no tuple to build
        return None if got is _NONE or i >= n else (1, got)  # type: ignore[return-value]

    def find(
        self, words: list[str], start: int = 0, end: int | None = None
    ) -> Iterator[tuple[int, int, P]]:
        """Non-overlapping longest matches in ``words[start:end]``: ``(first, stop, payload)``."""
        stop = len(words) if end is None else end
        by_first = self._lengths
        i = start
        while i < stop:
            if words[i] in by_first:
                hit = self.at(words, i, stop)
                if hit is not None:
                    k, payload = hit
                    yield i, i + k, payload
                    i += k
                    continue
            i += 1
