"""Run the examples that the grounding lexicons carry (``rules/grounding/*.yaml``).

``vigil rules test`` and ``tests/unit/test_grounding_lexicons.py`` run them: every drug example
must name exactly its INNs, every population example yield its keys, every cue example be read
into the expected readings, every non-claim example get its skip reason, every unasserted
example its scope.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal

from services.grounding.lexicon import NONCLAIM_EXAMPLES, SYNONYMS
from services.grounding.medical.lexicon import ExpectedReading, MedicalLexicon, spelling_key
from services.grounding.medical.names import opening_names
from services.grounding.medical.reading import Carry, Reading, Span, read_sentence
from services.grounding.quantities import amounts, format_decimal
from services.grounding.text import claim_units
from services.grounding.tokens import tokenize
from services.grounding.unasserted import UNASSERTED_EXAMPLES, scope_texts, unasserted_scopes

__all__ = ["LexiconExample", "read_text", "run_lexicon_examples"]


@dataclass(frozen=True, slots=True)
class LexiconExample:
    file: str
    entry: str
    text: str
    ok: bool
    detail: str


def read_text(text: str, language: str, lexicon: MedicalLexicon) -> list[Reading]:
    """The readings of an example, sentence by sentence with what each hands to the next (no
    context before it)."""
    from services.grounding.sentences import split_sentences

    out: list[Reading] = []
    carry = Carry()
    for sentence in split_sentences(text, language):
        t = tokenize(sentence.text)
        read = read_sentence(t, 0, len(t), amounts(t, language), language, lexicon, carry)
        out += read.readings
        carry = read.carry
    return out


def _span(span: Span | None, unit: str | None = None) -> str | None:
    if span is None:
        return None
    lo, hi = format_decimal(span.low), format_decimal(span.high)
    body = lo if lo == hi else f"{lo}-{hi}"
    if span.kind == "max":
        body = f"max {hi}"
    elif span.kind == "min":
        body = f"min {lo}"
    return f"{body} {unit}".strip() if unit else body


def _age(age: tuple[Decimal | None, Decimal | None] | None) -> str | None:
    if age is None:
        return None
    lo, hi = age
    return f"{format_decimal(lo) if lo is not None else 0}-{format_decimal(hi) if hi else ''}"


def _differences(r: Reading, want: ExpectedReading) -> list[str]:
    got: dict[str, object] = {
        "drug": ", ".join(sorted(r.drugs)) or None,
        "population": sorted(r.populations - r.conditions),
        "age": _age(r.age),
        "amount": _span(Span(r.amount.low, r.amount.high), r.unit) if r.amount else None,
        "basis": r.basis,
        "qualifier": r.qualifier,
        "frequency": _span(r.frequency),
        "polarity": r.polarity,
        "conditions": sorted(r.conditions),
        "duration": _span(r.duration, "h"),
        "step": r.step,
    }
    out = []
    for name, expected in want.model_dump(exclude_none=True).items():
        value = got[name]
        if isinstance(expected, list):
            expected = sorted(expected)
        if value != expected:
            out.append(f"{name}: want {expected!r}, got {value!r}")
    return out


def run_lexicon_examples(lexicon: MedicalLexicon) -> Iterator[LexiconExample]:
    """One result per example of every lexicon file."""
    from services.grounding.claims import skip_reason
    from services.grounding.quantities import quantities

    drugs = lexicon.drug_file
    for entry, examples in [
        *((d.inn, d.examples) for d in drugs.drugs),
        ("stems", drugs.stem_examples),
    ]:
        for ex in examples:
            t = tokenize(ex.text)
            got = [inn for _, _, inn in lexicon.find_drugs(t.words, 0, len(t))]
            ok = got == ex.drugs
            yield LexiconExample("drugs.yaml", entry, ex.text, ok, f"want {ex.drugs}, got {got}")
    if drugs.opening is not None:
        for ox in drugs.opening.examples:
            got_names = opening_names(tokenize(ox.text), ox.language, lexicon)
            wanted = {spelling_key(k): v for k, v in ox.names.items()}
            yield LexiconExample(
                "drugs.yaml",
                "opening",
                ox.text,
                got_names == wanted,
                f"want {wanted}, got {got_names}",
            )
    groups = lexicon.group_file
    for g in (*groups.populations, *groups.conditions):
        for gx in g.examples:
            words = tokenize(gx.text).words
            hits = list(lexicon.matcher(gx.language).find(words))
            hits += lexicon.compound_conditions(words, 0, len(words), gx.language, hits)
            found = {c.value for _, _, c in hits if c.kind in ("pop", "cond")}
            ok = set(gx.keys) <= found
            yield LexiconExample(
                "populations.yaml", g.key, gx.text, ok, f"want {gx.keys}, got {sorted(found)}"
            )
    for language, cues in lexicon.cues.items():
        for rx in cues.examples:
            readings = read_text(rx.text, language, lexicon)
            problems: list[str] = []
            if len(readings) != len(rx.expect):
                problems.append(f"want {len(rx.expect)} readings, got {len(readings)}")
            for r, want in zip(readings, rx.expect, strict=False):
                problems += _differences(r, want)
            yield LexiconExample(
                "medical_cues.yaml", language, rx.text, not problems, "; ".join(problems)
            )
    for sx in SYNONYMS.examples:
        lang = str(sx["language"])
        a = {u for u in claim_units(str(sx["a"]), lang) if u.startswith("~")}
        b = {u for u in claim_units(str(sx["b"]), lang) if u.startswith("~")}
        same = bool(a & b)
        yield LexiconExample(
            "synonyms.yaml",
            lang,
            f"{sx['a']} / {sx['b']}",
            same == bool(sx["same"]),
            f"want same={sx['same']}, got {sorted(a)} / {sorted(b)}",
        )
    for ux in UNASSERTED_EXAMPLES:
        text, language = str(ux["text"]), str(ux["language"])
        t = tokenize(text)
        got = scope_texts(t, unasserted_scopes(t, language))
        scope = [] if ux.get("scope") is None else [str(ux["scope"])]
        yield LexiconExample(
            "unasserted.yaml", language, text, got == scope, f"want {scope!r}, got {got!r}"
        )
    for nx in NONCLAIM_EXAMPLES:
        text, language = str(nx["text"]), str(nx["language"])
        reason = skip_reason(text, language, quantities(text, language))
        expected = nx.get("reason")
        yield LexiconExample(
            "nonclaims.yaml",
            language,
            text,
            reason == expected,
            f"want {expected!r}, got {reason!r}",
        )
