"""What an answer says without asserting it: the complement of a refusal or of a deferral.

"I can't tell you whether two of your 50 mg capsules would be safe" names a dose, but the
answer does not give it: the amount sits under a frame that declines to judge it. As a negation
has a scope, so does such a frame: from the word that opens its complement ("whether", "of",
"liệu", or in Vietnamese a clause that closes with "hay không") to the end of its clause. A dose,
amount, contraindication or polarity inside that scope is no claim of the answer; what stands
outside it is read as before. Three frames (``rules/grounding/unasserted.yaml``):

- **refusal**: a speaker and a negator over a verb of telling, knowing or judging, then a
  complementizer ("I can't tell you that …", "ik kan u niet zeggen of …", "tôi không thể nói
  liệu …"); the head's clause goes with its complement;
- **deferral**: a professional with a deciding verb, then an open-question complementizer
  ("your doctor will decide whether …", "uw arts beoordeelt of …");
- **fronted**: a clause opened by an open-question complementizer ("whether …", "of …", a
  Vietnamese "… có … hay không thì"), followed by a clause that refers, refuses or hedges
  ("… is something your doctor must decide", "…, bepaalt uw arts", "… thì bác sĩ sẽ quyết
  định"). A fronted clause followed by a claim ("whether you eat or not, the dose is 4 g") is
  no scope.

:func:`unasserted_scopes` finds the scopes of a tokenized sentence; :func:`asserted` gives the
sentence with them taken out, which :mod:`services.grounding.claims` reads in its place.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from services.grounding.lexicon import LANGUAGES, frames_for
from services.grounding.text import has_cue, names_professional, phrase_key
from services.grounding.tokens import NUM, SYM, PhraseMatcher, Tokens
from services.yamlload import safe_load as load_yaml

__all__ = [
    "UNASSERTED_EXAMPLES",
    "Asserted",
    "Scope",
    "asserted",
    "scope_texts",
    "unasserted_scopes",
]

Frame = Literal["refusal", "deferral", "fronted"]
#: The lexicon's lists, by role of the words in a frame.
_ROLES: Final = (
    "speakers",
    "negators",
    "verbs",
    "complementizers",
    "questions",
    "fronted",
    "deciders",
    "question_ends",
    "ends",
)
#: Symbols that end a clause (the sentence's own end is its last token).
_CLAUSE_SYMBOLS: Final = frozenset({",", ";", ":", "—", "–", "(", ")", ".", "!", "?"})
#: Words a negator may stand before its verb ("I'm not able to say", "mình không đủ thông tin
#: để khuyên"), and a complementizer after it ("I can't judge from these leaflets whether").
_NEGATOR_REACH: Final = 5
_COMPLEMENT_REACH: Final = 5
_DEFERRAL_REACH: Final = 3


@dataclass(frozen=True, slots=True)
class Scope:
    """A frame in a sentence, by token position: the non-asserted complement runs from
    ``start`` to ``stop`` (exclusive); ``head`` is where what goes with it starts (a refusal's
    clause; for the other frames ``start``)."""

    frame: Frame
    head: int
    start: int
    stop: int


@dataclass(frozen=True, slots=True)
class Asserted:
    """A sentence with its non-asserted scopes taken out: ``text`` (empty when nothing is
    left), whether a refusal was taken out with them, and the scopes."""

    text: str
    refused: bool
    scopes: tuple[Scope, ...]


Roles = dict[tuple[str, ...], frozenset[str]]


def _load(path: Path) -> tuple[dict[str, Roles], list[dict[str, object]]]:
    """Each language's phrases (as words) with their roles, and the examples."""
    data = load_yaml(path.read_text(encoding="utf-8"))
    out: dict[str, Roles] = {}
    for language in LANGUAGES:
        roles: dict[tuple[str, ...], set[str]] = {}
        try:
            for role in _ROLES:
                for phrase in data[language][role]:
                    roles.setdefault(tuple(str(phrase).lower().split()), set()).add(role)
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{path}: {language}: {exc}") from None
        out[language] = {w: frozenset(r) for w, r in roles.items()}
    return out, list(data.get("examples", []))


_ROLES_BY_LANGUAGE, UNASSERTED_EXAMPLES = _load(
    Path(__file__).resolve().parents[2] / "rules" / "grounding" / "unasserted.yaml"
)
_MATCHERS: Final = {
    language: PhraseMatcher(roles.items()) for language, roles in _ROLES_BY_LANGUAGE.items()
}


def _merged(tables: Sequence[Roles]) -> Roles:
    out: dict[tuple[str, ...], frozenset[str]] = {}
    for table in tables:
        for words, roles in table.items():
            out[words] = out.get(words, frozenset()) | roles
    return out


#: Every language's frame words, for a sentence of no known language.
_ANY: Final = PhraseMatcher(_merged(list(_ROLES_BY_LANGUAGE.values())).items())


@dataclass(frozen=True, slots=True)
class _Hit:
    start: int
    stop: int
    roles: frozenset[str]


class _Sentence:
    """A tokenized sentence with its frame words and clause bounds, for the frame tests."""

    def __init__(self, t: Tokens, language: str | None, hits: list[_Hit]) -> None:
        self.t, self.language, self.hits = t, language, hits
        words, kinds = t.words, t.kinds
        #: (position, next clause's start): a clause symbol is in no clause, an end word opens one
        self.cuts = sorted(
            [(i, i + 1) for i, w in enumerate(words) if kinds[i] == SYM and w in _CLAUSE_SYMBOLS]
            + [(h.start, h.start) for h in hits if "ends" in h.roles]
        )

    def clause(self, k: int) -> tuple[int, int]:
        """The bounds ``[lo, hi)`` of the clause token ``k`` stands in."""
        lo, hi = 0, len(self.t)
        for at, after in self.cuts:
            if at <= k and after <= k:
                lo = max(lo, after)
            elif at > k or (at == k and after > k):
                hi = min(hi, at)
                if at > k:
                    break
        return lo, hi

    def role(self, role: str, lo: int, hi: int) -> Iterator[_Hit]:
        return (h for h in self.hits if role in h.roles and lo <= h.start < hi)

    def key(self, lo: int, hi: int) -> str:
        words, kinds = self.t.words, self.t.kinds
        return (
            " "
            + " ".join(w for w, k in zip(words[lo:hi], kinds[lo:hi], strict=True) if k != SYM)
            + " "
        )

    def number_in(self, lo: int, hi: int) -> bool:
        return NUM in self.t.kinds[lo:hi]


def _negated(s: _Sentence, verb: _Hit, lo: int) -> bool:
    """A negator before the verb within reach, or (Dutch) right after it ("ik weet niet of")."""
    if any(s.role("negators", max(lo, verb.start - _NEGATOR_REACH), verb.start)):
        return True
    return s.language in ("nl", None) and any(s.role("negators", verb.stop, verb.stop + 1))


def _closes_question_vi(s: _Sentence, lo: int, hi: int) -> bool:
    """Whether a Vietnamese clause closes as an open question: "… hay không", or "có …
    không" ("uống 2 viên có an toàn không")."""
    if any(h.stop == hi for h in s.role("question_ends", lo, hi)):
        return True
    words = s.t.words
    return hi - lo > 2 and words[hi - 1] in ("không", "chưa") and "có" in words[lo : hi - 1]


def _complement(s: _Sentence, after: int, hi: int) -> int | None:
    """Where the complement of a verb ending at ``after`` opens: a complementizer within reach
    (no number before it), or, in Vietnamese, right after the verb when the clause closes as an
    open question."""
    reach = min(hi, after + _COMPLEMENT_REACH)
    comp = next(s.role("complementizers", after, reach), None)
    if comp is not None and not s.number_in(after, comp.start):
        return comp.start
    if s.language in ("vi", None) and _closes_question_vi(s, after, hi):
        return after
    return None


def _refusals(s: _Sentence) -> Iterator[Scope]:
    """A speaker and a negator over a verb of telling or knowing, then its complement."""
    for verb in s.role("verbs", 0, len(s.t)):
        lo, hi = s.clause(verb.start)
        if not any(s.role("speakers", lo, verb.start)) or not _negated(s, verb, lo):
            continue
        start = _complement(s, verb.stop, hi)
        if start is not None and start < hi:
            yield Scope("refusal", lo, start, hi)


def _deferrals(s: _Sentence) -> Iterator[Scope]:
    """A professional with a deciding verb, then an open-question complementizer."""
    for verb in s.role("deciders", 0, len(s.t)):
        lo, hi = s.clause(verb.start)
        if not any(names_professional(s.key(lo, verb.start), f) for f in frames_for(s.language)):
            continue
        comp = next(s.role("questions", verb.stop, min(hi, verb.stop + _DEFERRAL_REACH)), None)
        if comp is not None and comp.stop < hi:
            yield Scope("deferral", comp.start, comp.start, hi)


def _fronted_end(s: _Sentence, start: int, hi: int) -> int:
    """Where a fronted open question ends: its clause's end, or (English writes no comma
    there) the first professional or speaker after its opening word."""
    for k in range(start + 1, hi):
        key = f" {s.t.words[k]} "
        if any(s.role("speakers", k, k + 1)) or any(
            names_professional(key, f) for f in frames_for(s.language)
        ):
            return k
    return hi


def _matrix_declines(s: _Sentence, lo: int, hi: int) -> bool:
    """Whether ``[lo, hi)`` refers, refuses or hedges (``nonclaims.yaml``): a professional with
    a verb of contacting or deciding, a speaker with a negator and a verb of knowing, a hedge."""
    key = s.key(lo, hi)
    for f in frames_for(s.language):
        if names_professional(key, f) and has_cue(key, f.contact_verbs):
            return True
        if has_cue(key, f.speakers) and has_cue(key, f.negators) and has_cue(key, f.verbs):
            return True
        if has_cue(key, f.hedges):
            return True
    return False


def _clause_starts(s: _Sentence) -> list[int]:
    return sorted({0, *(after for _, after in s.cuts if after < len(s.t))})


def _fronted(s: _Sentence) -> Iterator[Scope]:
    """A clause opened by an open question, then a clause that refers, refuses or hedges."""
    for lo in _clause_starts(s):
        _, hi = s.clause(lo)
        opens = any(h.start == lo for h in s.role("fronted", lo, lo + 1))
        if opens:
            stop = _fronted_end(s, lo, hi)
        elif s.language in ("vi", None) and hi < len(s.t) and _closes_question_vi(s, lo, hi):
            stop = hi  # "… có phù hợp hay không thì bác sĩ quyết định"
        else:
            continue
        if stop <= lo + 1:
            continue
        after = stop + 1 if stop < len(s.t) and s.t.kinds[stop] == SYM else stop
        _, matrix_end = s.clause(after) if after < len(s.t) else (after, after)
        if _matrix_declines(s, stop, max(matrix_end, after)):
            yield Scope("fronted", lo, lo, stop)


def _phrases(language: str, *roles: str) -> tuple[str, ...]:
    return tuple(" ".join(w) for w, r in _ROLES_BY_LANGUAGE[language].items() if r & set(roles))


#: Per language, two phrase lists a sentence must hit both of to hold a frame: a word that
#: opens or closes a complement (Vietnamese "không" / "chưa" close "có … không"), and a verb,
#: a deciding verb or a fronted opening. One search each; most sentences fail the first.
_GATES: Final = {
    language: (
        (
            *_phrases(language, "complementizers", "questions", "fronted", "question_ends"),
            *(("không", "chưa") if language == "vi" else ()),
        ),
        _phrases(language, "verbs", "deciders", "fronted"),
    )
    for language in LANGUAGES
}
_ANY_GATE: Final = tuple(tuple(p for g in _GATES.values() for p in g[i]) for i in (0, 1))


def _may_hold(key: str, language: str | None) -> bool:
    """Whether the padded phrase key of a sentence holds both words some frame needs."""
    opens, heads = _GATES.get(language or "", _ANY_GATE)
    return has_cue(key, opens) and has_cue(key, heads)


#: The frame tests, in the order their scopes win where they overlap.
_FRAME_TESTS: Final = (_fronted, _refusals, _deferrals)


def unasserted_scopes(t: Tokens, language: str | None, key: str | None = None) -> tuple[Scope, ...]:
    """The non-asserted scopes of the sentence ``t``, in order, not overlapping (``key``: its
    :func:`~services.grounding.text.phrase_key`, when the caller has it).

    >>> from services.grounding.tokens import tokenize
    >>> t = tokenize("I can't tell you whether 100 mg is safe, but 50 mg is.")
    >>> [" ".join(t.words[s.start : s.stop]) for s in unasserted_scopes(t, "en")]
    ['whether 100 mg is safe']
    >>> unasserted_scopes(tokenize("I can tell you that 2 g is fine."), "en")
    ()
    """
    if not _may_hold(key if key is not None else phrase_key(t), language):
        return ()
    matcher = _MATCHERS.get(language or "", _ANY)
    words = t.words
    hits = [_Hit(i, j, r) for i, j, r in matcher.find(words)]
    s = _Sentence(t, language, hits)
    found: list[Scope] = []
    for test in _FRAME_TESTS:
        for scope in test(s):
            if all(scope.stop <= o.head or scope.head >= o.stop for o in found):
                found.append(scope)
    return tuple(sorted(found, key=lambda sc: sc.head))


def asserted(t: Tokens, language: str | None, key: str | None = None) -> Asserted | None:
    """The sentence ``t`` with its non-asserted scopes taken out (a refusal with its clause),
    or ``None`` when it has none (``key`` as for :func:`unasserted_scopes`)."""
    scopes = unasserted_scopes(t, language, key)
    if not scopes:
        return None
    text, starts, ends = t.text, t.starts, t.ends
    kept: list[str] = []
    at = 0
    for sc in scopes:
        kept.append(text[at : starts[sc.head]])
        at = ends[sc.stop - 1]
    kept.append(text[at:])
    rest = " ".join(p.strip() for p in kept if p.strip())
    return Asserted(rest, any(sc.frame == "refusal" for sc in scopes), scopes)


def scope_texts(t: Tokens, scopes: Sequence[Scope]) -> list[str]:
    """The scopes as written (for the lexicon's examples)."""
    return [t.text[t.starts[sc.start] : t.ends[sc.stop - 1]] for sc in scopes]
