"""Drug names an event's passages teach: a passage sentence that opens with a name and its
strength.

Leaflets and monographs head their text with the product: "Meclozine 12.5 mg tablets",
"Dulcolax (bisacodyl) 5 mg", "Pinaveriumbromide 50 mg", "Bisolvon (bromhexin hydroclorid) viên
8 mg". A drug in no lexicon and without an INN stem is then still a drug for that event — its
passages and the answer checked against them — so another drug's dose under its name is
compared with its own passage, not bound to whichever passage names a known drug.

Only a passage's first sentence is read, and its first word must be written with a capital (a
heading, not a clause after a semicolon: "; behandeling 1 mg/kg"). The opening must be: one or
two names (the second in brackets), then only salts and dose forms
(``rules/grounding/drugs.yaml`` ``opening``), then a number with a strength unit. A name is a
word of five letters or more that is no stop word, cue, population or unit word of the language
(and, in Vietnamese, written without tone marks, as transliterated drug names are). A name the
lexicon knows lends its drug to the other ("Maxalt" in "Rizatriptan (Maxalt) 10 mg"); two unknown
names become one drug, keyed by the name written in lower case (the INN, as leaflets write it
after a capitalised brand), else the first.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from services.grounding.lexicon import DOSE_CUES, STOP_WORDS, for_language
from services.grounding.medical.lexicon import MedicalLexicon, Opening, spelling_key
from services.grounding.quantities import Amount, amounts
from services.grounding.tokens import NUM, SYM, WORD, Tokens, tokenize

__all__ = [
    "bracket_names",
    "doc_id_names",
    "event_names",
    "filed_names",
    "looks_like_name",
    "opening_names",
    "read_opening",
    "subject_names",
]

#: Tokens read from a sentence's start before giving up.
_REACH: Final = 16
#: What a patch releases per hour ("12 microgram/uur"); "30 ml/min" is a clearance.
_RELEASED: Final = frozenset({"mg", "IU"})
#: Names one heading may give: a brand and the one or two substances in brackets.
_NAMES: Final = 3
_SHORTEST: Final = 5
#: A brand a bracket binds to a drug may be short ("Xefo", the "Cab" of "K-Cab").
_BRACKETED_SHORTEST: Final = 3
#: A strength's units between a brand and its brackets ("Xefo 8 mg (lornoxicam)").
_STRENGTH_UNITS: Final = frozenset({"mg", "g", "mcg", "µg", "microgram", "ml", "%"})
#: Words a bracket may hold before the drug it names ("cao chiết lá Ginkgo biloba 40 mg").
_BRACKET_REACH: Final = 6


def _strip_salt(word: str, salts: frozenset[str]) -> str:
    """``pinaveriumbromide`` → ``pinaverium`` (a salt glued to the name's end)."""
    for salt in salts:
        if len(word) > len(salt) + _SHORTEST and word.endswith(salt):
            return word[: -len(salt)]
    return word


def looks_like_name(t: Tokens, i: int, language: str | None, lexicon: MedicalLexicon) -> bool:
    """Whether token ``i`` names a drug or looks like a product name: written with a capital,
    five letters or more, no stop word, cue or unit word ("Van Imigran 50 mg")."""
    if lexicon.drug_at(t.words, i, i + 1) is not None:
        return True
    return t.text[t.starts[i] : t.starts[i] + 1].isupper() and _is_name(
        t.words[i], language, lexicon
    )


def _is_name(word: str, language: str | None, lexicon: MedicalLexicon) -> bool:
    if len(word) < _SHORTEST or not word.isalpha():
        return False
    if language == "vi" and not word.isascii():
        return False
    if word in for_language(STOP_WORDS, language):
        return False
    return (word,) not in lexicon.matcher(language)


def opening_names(t: Tokens, language: str | None, lexicon: MedicalLexicon) -> dict[str, str]:
    """``{spelling key: drug}`` for the names the sentence ``t`` opens with, or ``{}``.

    >>> from services.grounding.medical import load_lexicon
    >>> from services.grounding.tokens import tokenize
    >>> opening_names(tokenize("Meclozine 12.5 mg tablets."), "en", load_lexicon())
    {'meclozin': 'meclozin'}
    >>> opening_names(tokenize("NorLevo 1,5 mg (levonorgestrel): neem."), "nl", load_lexicon())
    {'norlevo': 'levonorgestrel', 'levonorgestrel': 'levonorgestrel'}
    >>> opening_names(tokenize("Adults: 25 mg."), "en", load_lexicon())
    {}
    """
    return read_opening(t, language, lexicon)[0]


def read_opening(
    t: Tokens, language: str | None, lexicon: MedicalLexicon
) -> tuple[dict[str, str], tuple[int, int] | None]:
    """The names the sentence ``t`` opens with (as :func:`opening_names`), and the token span
    of the indication its heading names after a word of purpose ("Arcoxia bij reumatoïde
    artritis: …" → "reumatoïde artritis"), up to a colon or a number; ``None`` without one."""
    spec = lexicon.drug_file.opening
    if spec is None or not t.text[:1].isupper():
        return {}, None
    names, purpose = _opening(t, language, lexicon, spec)
    if not names:
        return {}, None
    indication = None
    if purpose is not None:
        purposes = frozenset(p.lower() for p in spec.purpose)
        while purpose + 1 < len(t) and t.words[purpose + 1] in purposes:
            purpose += 1  # "điều trị"
        end = purpose + 1
        while end < min(len(t), purpose + 1 + _REACH) and t.kinds[end] == WORD:
            end += 1
        indication = (purpose + 1, end) if end > purpose + 1 else None
    return _teach(names, lexicon), indication


def _opening(
    t: Tokens, language: str | None, lexicon: MedicalLexicon, spec: Opening
) -> tuple[list[tuple[str, bool]], int | None]:
    """The names (and whether each was written in lower case) of a heading: names, salts and
    forms, then a strength or a word of purpose, with names in brackets before or after the
    strength ("Duspatalin retard 200 mg (mebeverine)", "Malarone (atovaquone 250 mg / proguanil
    100 mg) for …"); or names with one in brackets and a colon ("Memantine (Ebixa): …"); or, in
    Vietnamese, a name and a colon. ``[]`` when the sentence opens otherwise."""
    salts, forms = spec.salt_words, spec.form_words
    purpose, not_names = spec.purpose_words, spec.not_name_words
    words, kinds = t.words, t.kinds
    limit = min(len(t), _REACH)
    written = {a.t0: a for a in amounts(t, language) if a.t0 < limit}
    names: list[tuple[str, bool]] = []
    depth, strength, bracketed, headed = 0, False, False, False
    purpose_at: int | None = None
    j = 0
    while j < limit:
        word, kind = words[j], kinds[j]
        if kind == NUM:
            amount = written.get(j)
            if not names or amount is None or not _is_strength(amount, spec):
                break
            strength = True
            j = amount.t1
            continue
        if kind == SYM:
            if word == "(":
                depth += 1
            elif word == ")" and depth:
                depth -= 1
            elif word == "/" and depth:
                pass  # a combination: "(atovaquone 250 mg / proguanil 100 mg)"
            elif word == ":" and names and not depth:
                headed = bracketed or language in spec.colon_languages
                break
            else:
                break
        elif names and not depth and word in purpose:
            headed, purpose_at = True, j
            break
        elif word in salts or word in forms or _compound_form(word, forms, language, lexicon):
            pass
        elif names and not depth and not strength and word in spec.contains_words:
            pass  # "Curatoderm zalf bevat 4 microgram …": the product, then what it holds
        elif len(names) < _NAMES and (depth or (not strength and len(names) < 2)):
            name = _strip_salt(word, salts)
            if name in not_names or not _is_name(name, language, lexicon):
                break
            names.append((name, t.text[t.starts[j]].islower()))
            bracketed = bracketed or depth > 0
        else:
            break
        j += 1
    return (names, purpose_at) if strength or headed else ([], None)


def _is_strength(amount: Amount, spec: Opening) -> bool:
    """A product's strength: an amount of mass, volume, units or per cent, also per volume or
    per hour (a patch: "12 microgram/uur"); per kilogram or per day it is a dose ("1 mg/kg",
    "10 mg/dag")."""
    base, _, per = amount.unit.partition("/")
    if base not in spec.units or per == "kg":
        return False
    return amount.per_time is None or (amount.per_time == 1 and base in _RELEASED)


def _compound_form(
    word: str, forms: frozenset[str], language: str | None, lexicon: MedicalLexicon
) -> bool:
    """A Dutch compound whose head is a dose form ("vaginaaltablet", "kauwtabletten",
    "bruistablet"), in a language that writes them."""
    if language is None or not lexicon.compounds(language) or len(word) < 8:
        return False
    return any(word.endswith(f) and len(word) - len(f) >= 4 for f in forms if len(f) >= 5)


def _teach(names: list[tuple[str, bool]], lexicon: MedicalLexicon) -> dict[str, str]:
    """One drug for all the names of a heading: a listed name's drug, else the first name
    written in lower case (the INN, as leaflets write it after a capitalised brand), else one
    the lexicon knows by its stem, else the first. Every name that does not already name that
    drug by the lexicon is taught it ("Rovamycine (spiramycin)": rovamycine → spiramycin)."""
    listed = [d for d in (lexicon.listed_drug(n) for n, _ in names) if d is not None]
    stemmed = [d for d in (lexicon.known_drug(n) for n, _ in names) if d is not None]
    lower = [spelling_key(n) for n, low in names if low]
    drug = (listed or lower or stemmed or [spelling_key(names[0][0])])[0]
    return {
        spelling_key(n): drug
        for n, _ in names
        if lexicon.listed_drug(n) is None and lexicon.known_drug(n) != drug
    }


def filed_names(doc_id: str, language: str | None, lexicon: MedicalLexicon) -> list[str]:
    """The words a passage's document id files it under that may name its drug: words of five
    letters or more that are no stop word, cue, unit, dose form, salt nor a word for a document
    (``opening`` ``not_names``: bijsluiter, leaflet …), and only from an id that names no drug
    the lexicon knows ("pil-insulin-glargine-en-01" is filed under insulin already, "glargine"
    is part of its name).

    >>> from services.grounding.medical import load_lexicon
    >>> filed_names("smpc-zorvatide-en-01", "en", load_lexicon())
    ['zorvatide']
    """
    spec = lexicon.drug_file.opening
    if spec is None:
        return []
    t = tokenize(doc_id.replace("_", " ").lower())
    if any(lexicon.find_drugs(t.words, 0, len(t))):
        return []  # "pil-insulin-glargine-en-01", "spc-ibuprofen-drank-nl-03": filed already
    not_names = spec.not_name_words | spec.form_words | spec.salt_words
    return [
        w
        for w, k in zip(t.words, t.kinds, strict=True)
        if k == WORD
        and w not in not_names
        and _is_name(w, language, lexicon)
        and lexicon.known_drug(w) is None
    ]


def doc_id_names(
    doc_id: str, words: Iterable[str], language: str | None, lexicon: MedicalLexicon
) -> dict[str, str]:
    """Drugs a passage's document id names by a word its text uses too: a leaflet or SmPC is
    filed under its substance ("smpc-cabergoline-en-01", "dt-amiodaron-vi-01"), and when the
    passage's own text names that word ("the starting dosage of cabergoline is …") it is the
    drug the passage is about, in a lexicon or not (:func:`filed_names`); ``words`` are the
    passage's words (lower case).

    >>> from services.grounding.medical import load_lexicon
    >>> doc_id_names("smpc-zorvatide-en-01", ["zorvatide", "10", "mg"], "en", load_lexicon())
    {'zorvatid': 'zorvatid'}
    >>> doc_id_names("bijsluiter-zorvatide-nl-01", ["bijsluiter"], "nl", load_lexicon())
    {}
    """
    named = filed_names(doc_id, language, lexicon)
    if not named:
        return {}
    used = set(words)
    return {spelling_key(w): spelling_key(w) for w in named if w in used}


def subject_names(
    sentences: list[Tokens],
    drugs: frozenset[str],
    language: str | None,
    lexicon: MedicalLexicon,
    filed: bool = False,
    doc_drugs: frozenset[str] = frozenset(),
) -> dict[str, str]:
    """``{spelling key: drug}`` for the names a passage may be about, beyond what its heading
    teaches: its first word when it heads the text ("Norprolac: …", "Zorvatide (…), adults:
    …") — the passage's one drug, or the name itself when it names none — or stands before a
    verb (``subject_verbs``: "Replagal is given at …") in a passage that names no known drug;
    the names inside its sentences (:func:`_mentioned`) when it is ``filed`` under a drug no
    lexicon knows and names none, or names one drug that its id names too (``doc_drugs``:
    "The recommended dose of Tukysa is …" in "pil-tucatinib-en-02"); and a capitalised
    name in brackets right beside one of its drugs ("Trifluoperazine (Stelazine)", "Stelazine
    (trifluoperazine)"). These are candidates only: the event teaches one when the answer
    writes it too (:meth:`~services.grounding.evidence.Evidence.adopt`), so a drug no lexicon
    knows binds the answer's figures to the passage about it. Names as in :func:`bracket_names`.

    >>> from services.grounding.medical import load_lexicon
    >>> lex = load_lexicon()
    >>> subject_names([tokenize("Quellex: start with 5 mg.")], frozenset(), "en", lex)
    {'quelex': 'quelex'}
    >>> subject_names([tokenize("Ibuprofen (Quellex) is taken.")], frozenset(), "en", lex)
    {'quelex': 'ibuprofen'}
    >>> subject_names([tokenize("Adults: 5 mg.")], frozenset(), "en", lex)
    {}
    """
    out: dict[str, str] = {}
    own = next(iter(drugs)) if len(drugs) == 1 else None
    spec = lexicon.drug_file.opening
    if sentences:
        t = sentences[0]
        heads = len(t) > 1 and t.words[1] in _HEADING_ENDS
        # "Replagal is given at 0.2 mg/kg" in a passage that names no known drug (round 27)
        subject = not drugs and spec is not None and len(t) > 1 and t.words[1] in spec.subject_words
        key = _brand_key(t, 0, 1, language, lexicon) if heads or subject else None
        if key is not None and len(key) >= _SHORTEST and (own or not drugs):
            out[key] = own or key
    if (filed and not drugs) or (own is not None and own in doc_drugs):
        # "Do not stop taking Pyrukynd …" in a chunk filed under mitapivat; "The recommended
        # dose of Tukysa is …" in a passage whose id and text name tucatinib alone (round 27)
        out |= {k: own or k for k in _mentioned(sentences, language, lexicon) if k not in out}
    for t in sentences:
        words = t.words
        if "(" not in words:
            continue
        for k in range(1, len(t) - 2):
            if words[k] != "(" or words[k + 2] != ")":
                continue
            before, inside = lexicon.drug_at(words, k - 1, k), lexicon.drug_at(words, k + 1, k + 2)
            if (before is None) == (inside is None):
                continue
            name = (k + 1, k + 2) if before is not None else (k - 1, k)
            key = _brand_key(t, name[0], name[1], language, lexicon)
            drug = (before or inside or (0, ""))[1]
            if key is not None and len(key) >= _SHORTEST:
                out.setdefault(key, drug)
    return out


#: Words after a capitalised word that make it a disease's name ("Fabry disease", "ziekte van
#: Crohn" is no brand either way).
_DISEASE_AFTER: Final = frozenset({"disease", "syndrome", "ziekte", "syndroom", "'s"})


def _mentioned(sentences: list[Tokens], language: str | None, lexicon: MedicalLexicon) -> list[str]:
    """Brand-like names a passage writes inside its sentences ("Do not stop taking Pyrukynd
    without …"): capitalised, not all capitals (an acronym), not a sentence's first word and
    not a disease's name (round 27). For a passage filed under a drug no lexicon knows that
    names no known drug, they are the product it is about."""
    out: list[str] = []
    for t in sentences:
        for k in range(1, len(t)):
            word = t.text[t.starts[k] : t.ends[k]]
            if not word[:1].isupper() or word.isupper() or t.words[k - 1] in ("-", "."):
                continue
            if k + 1 < len(t) and t.words[k + 1] in _DISEASE_AFTER:
                continue
            key = _brand_key(t, k, k + 1, language, lexicon)
            if key is not None and len(key) >= _SHORTEST:
                out.append(key)
    return out


#: What follows a heading's name: a colon, a name in brackets, a comma before its group.
_HEADING_ENDS: Final = frozenset({":", "(", ","})


def bracket_names(t: Tokens, language: str | None, lexicon: MedicalLexicon) -> dict[str, str]:
    """``{spelling key: drug}`` for the brands a passage sentence binds to a drug by brackets:
    "Brand (drug …)" — the drug among the first words in the brackets, before any number; the
    brand's strength may stand between ("K-Cab (tegoprazan 50 mg)", "Xefo 8 mg (lornoxicam)",
    "Tanakan (cao chiết lá Ginkgo biloba 40 mg)") — or "drug (Brand)" ("zorvatide (Quellex) 10
    mg"); a strength stands before, in or right after the brackets, as in a product's heading.
    The brand is a capitalised word of three letters or more that is no stop word, cue or unit
    word and names no drug of its own; of a hyphenated brand ("K-Cab", "Zelvo-Forte") its longest
    such part is the key. The drug is one the lexicon (or a name the passages taught) knows. For
    the event the brand then names that drug, so another drug's dose under the brand is
    compared with the drug's own passage.

    >>> from services.grounding.medical import load_lexicon
    >>> lex = load_lexicon()
    >>> bracket_names(tokenize("Qix 200 mg (ibuprofen) for pain."), "en", lex)
    {'qix': 'ibuprofen'}
    >>> bracket_names(tokenize("Ibuprofen (Zelvo-Max) 400 mg is taken with food."), "en", lex)
    {'zelvo': 'ibuprofen'}
    >>> bracket_names(tokenize("Qix (ibuprofen) is taken with food."), "en", lex)
    {}
    >>> bracket_names(tokenize("Adults (ibuprofen 200 mg) …"), "en", lex)
    {}
    """
    words, kinds = t.words, t.kinds
    out: dict[str, str] = {}
    for k, word in enumerate(words):
        if word != "(" or k == 0:
            continue
        stop = min(len(t), k + 4 + _BRACKET_REACH)  # the drug, then its strength
        close = next((j for j in range(k + 1, stop) if words[j] == ")"), None)
        if close is None or not _with_strength(t, k, close):
            continue  # a product names its strength: "Xefo 8 mg (…)", "(… 50 mg)", "(…) 10 mg"
        before = lexicon.drug_at(words, k - 1, k) if kinds[k - 1] == WORD else None
        if before is not None:  # "drug (Brand)": one brand alone in the brackets
            key = _brand_key(t, k + 1, close, language, lexicon) if close is not None else None
            if key is not None:
                out[key] = before[1]
            continue
        end = k
        if end >= 3 and kinds[end - 2] == NUM and words[end - 1] in _STRENGTH_UNITS:
            end -= 2  # "Xefo 8 mg (lornoxicam)"
        start = end - 1
        while start >= 2 and words[start - 1] == "-" and kinds[start - 2] == WORD:
            start -= 2  # "K-Cab"
        key = _brand_key(t, start, end, language, lexicon)
        if key is None:
            continue
        for j in range(k + 1, min(len(t), k + 1 + _BRACKET_REACH)):
            if kinds[j] != WORD:
                break
            hit = lexicon.drug_at(words, j, len(t))
            if hit is not None:
                out[key] = hit[1]
                break
    return out


def _with_strength(t: Tokens, k: int, close: int) -> bool:
    """Whether a strength stands right before the bracket at ``k``, inside it, or right after
    its end ``close``: the brackets belong to a product's heading, not to a clause."""
    at = [k - 2, *range(k + 1, close), close + 1]
    return any(
        0 <= i < len(t) - 1 and t.kinds[i] == NUM and t.words[i + 1] in _STRENGTH_UNITS for i in at
    )


def _brand_key(
    t: Tokens, start: int, end: int, language: str | None, lexicon: MedicalLexicon
) -> str | None:
    """The key of the brand written as tokens ``[start, end)``: one word, or words joined by
    hyphens, the first capitalised; its longest part that may be a name (three letters or
    more, no stop word, cue, unit or drug of its own); ``None`` when it is no brand."""
    if start < 0 or end <= start or not t.text[t.starts[start] : t.starts[start] + 1].isupper():
        return None
    parts = t.words[start:end:2]
    if end - start > 1 and "-" not in t.words[start + 1 : end : 2]:
        return None
    if any(k != WORD for k in t.kinds[start:end:2]):
        return None
    names = [p for p in parts if _brand_word(p, language, lexicon)]
    if not names or any(lexicon.known_drug(p) is not None for p in parts):
        return None
    return spelling_key(max(names, key=len))


def _brand_word(word: str, language: str | None, lexicon: MedicalLexicon) -> bool:
    if len(word) < _BRACKETED_SHORTEST or not word.isalpha():
        return False
    if language == "vi" and not word.isascii():
        return False
    if word in for_language(STOP_WORDS, language) or word in DOSE_CUES.get(language or "en", ()):
        return False
    spec = lexicon.drug_file.opening
    if spec is not None and word in spec.not_name_words | spec.form_words | spec.salt_words:
        return False
    return (word,) not in lexicon.matcher(language)


def event_names(taught: Iterable[Iterable[tuple[str, str]]]) -> dict[str, str]:
    """One map of the names an event's passages teach (each passage's ``{key: drug}`` pairs):
    a name one passage teaches as another drug ("Malarone (atovaquone 250 mg / proguanil …)")
    wins over a passage that teaches it as a drug of its own ("Malarone for the treatment of
    …"), else the first passage's; a drug that is itself taught as another is followed once. A
    name two passages teach as two other drugs ("Depot" of "Fluanxol Depot (flupentixol …)" and
    of "Clopixol Depot (zuclopentixol …)") names neither (round 23).

    >>> event_names([[("malaron", "malaron")], [("malaron", "atovaquon")]])
    {'malaron': 'atovaquon'}
    >>> event_names([[("depot", "flupentixol")], [("depot", "zuclopenthixol")]])
    {}
    """
    merged: dict[str, str] = {}
    clashing: set[str] = set()
    for pairs in taught:
        for key, drug in pairs:
            old = merged.get(key)
            if old is None or (old == key and drug != key):
                merged[key] = drug
            elif old not in (key, drug) and drug != key:
                clashing.add(key)
    return {key: merged.get(drug, drug) for key, drug in merged.items() if key not in clashing}
