"""The medical lexicons (``rules/grounding/*.yaml``), validated and compiled for the reader.

Three files, each with a header naming its source and examples that the suite runs:

- ``drugs.yaml`` — INNs with their English, Dutch and Vietnamese spellings and brand names, and
  INN stems for drugs that are not listed;
- ``populations.yaml`` — age groups and conditions (pregnancy, kidney impairment, ulcer...);
- ``medical_cues.yaml`` — per language: qualifiers, basis, frequency and interval words,
  polarity phrases, negators with their scope, use verbs and modals.

A broken file raises :class:`LexiconError` naming the file and the entry. Drug names are
compared by :func:`spelling_key`, so the usual spelling variants need not be listed.
"""

from __future__ import annotations

import copy
import itertools
import operator
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Final, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from services.grounding.tokens import PhraseMatcher, phrase_tokens
from services.yamlload import safe_load as load_yaml

__all__ = [
    "DEFAULT_LEXICON_DIR",
    "Cue",
    "ExpectedReading",
    "LanguageCues",
    "LexiconError",
    "MedicalLexicon",
    "Polarity",
    "load_lexicon",
    "spelling_key",
]

_WORD_MEMO: Final = 50_000
#: The shortest word read as a compound of a drug name and a form or device ("ibuprofendrank").
_COMPOUND_SHORTEST: Final = 10
#: What the word memo gives for a word it does not hold.
_UNSEEN: Final = object()
DEFAULT_LEXICON_DIR: Final = Path(__file__).resolve().parents[3] / "rules" / "grounding"
LANGUAGES: Final = ("en", "nl", "vi")

Polarity = Literal[
    "contraindicated", "avoid", "not_recommended", "caution", "allowed", "recommended"
]
Qualifier = Literal["max", "min", "start", "usual"]
Basis = Literal["dose", "day", "week"]


class LexiconError(ValueError):
    """A lexicon file is invalid; the message names the file and the entry."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DrugExample(_Strict):
    text: str = Field(min_length=1)
    drugs: list[str]
    language: str | None = None


class DrugEntry(_Strict):
    inn: str = Field(min_length=2)
    en: list[str] = Field(min_length=1)
    nl: list[str] = Field(min_length=1)
    vi: list[str] = Field(min_length=1)
    brands: list[str] = Field(default_factory=list)
    examples: list[DrugExample] = Field(default_factory=list)


class OpeningExample(_Strict):
    text: str = Field(min_length=1)
    language: Literal["en", "nl", "vi"]
    #: name (as written, lower case) → the drug it is read as
    names: dict[str, str]


class Opening(_Strict):
    """A passage sentence that opens with a name and its strength names a drug for the event
    ("Meclozine 12.5 mg tablets", "Dulcolax (bisacodyl) 5 mg", "Eperison hydroclorid 50 mg")."""

    #: Salts written after the name or glued to its end (hydrochloride, bromide, maleat...).
    salts: list[str] = Field(min_length=1)
    #: Dose forms that may stand between the name and the strength (tablets, viên, sachet...).
    forms: list[str] = Field(default_factory=list)
    #: The base units of a strength as the quantity reader writes them (mg, ml, IU, %): any
    #: spelling of those (g, microgram, đơn vị, M.IU...), also per ml or per hour.
    units: list[str] = Field(min_length=1)
    #: Words of purpose after the name in a heading ("Topiramaat bij epilepsie", "Famciclovir
    #: for cold sores", "Praziquantel điều trị sán máng"): the name is a drug without a strength.
    purpose: list[str] = Field(default_factory=list)
    #: Words that head a text as well but name no drug ("Treatment for…", "Behandeling bij…").
    not_names: list[str] = Field(default_factory=list)
    #: Verbs of holding between a product's name and its strength ("Curatoderm zalf bevat 4
    #: microgram …", "Daivonex ointment contains 50 micrograms …"): no name themselves.
    contains: list[str] = Field(default_factory=list)
    #: Words after a passage's first word that make it the subject of its first sentence
    #: ("Replagal is given at …", "Tivdak wordt …", "Evkeeza được …"): a name the lexicon does
    #: not know there, in a passage that names no known drug, is the drug it is about (round 27).
    subject_verbs: list[str] = Field(default_factory=list)
    #: Languages whose headings of one word and a colon name a drug ("Sulfasalazin: …"):
    #: where a word written without tone marks can only be a loan word (Vietnamese).
    colon_languages: list[Literal["en", "nl", "vi"]] = Field(default_factory=list)
    examples: list[OpeningExample] = Field(default_factory=list)

    @cached_property
    def salt_words(self) -> frozenset[str]:
        """:attr:`salts` in lower case, as tokens are."""
        return frozenset(w.lower() for w in self.salts)

    @cached_property
    def form_words(self) -> frozenset[str]:
        """:attr:`forms` in lower case."""
        return frozenset(w.lower() for w in self.forms)

    @cached_property
    def purpose_words(self) -> frozenset[str]:
        """:attr:`purpose` in lower case."""
        return frozenset(w.lower() for w in self.purpose)

    @cached_property
    def not_name_words(self) -> frozenset[str]:
        """:attr:`not_names` in lower case."""
        return frozenset(w.lower() for w in self.not_names)

    @cached_property
    def subject_words(self) -> frozenset[str]:
        """:attr:`subject_verbs` in lower case."""
        return frozenset(w.lower() for w in self.subject_verbs)

    @cached_property
    def contains_words(self) -> frozenset[str]:
        """:attr:`contains` in lower case."""
        return frozenset(w.lower() for w in self.contains)


class DrugFile(_Strict):
    stems: list[str]
    stem_examples: list[DrugExample] = Field(default_factory=list)
    opening: Opening | None = None
    drugs: list[DrugEntry]


class GroupExample(_Strict):
    text: str = Field(min_length=1)
    language: Literal["en", "nl", "vi"]
    keys: list[str]


class GroupEntry(_Strict):
    key: str = Field(pattern=r"^[a-z][a-z_]*$")
    population: bool = False
    #: An activity a passage may pause for a time after a dose while the drug is taken ("take
    #: the tablet after a feed and do not breastfeed for 8 hours"): negated with a time, in a
    #: clause that says to take the drug, the drug is allowed in the group.
    pausable: bool = False
    en: list[str] = Field(min_length=1)
    nl: list[str] = Field(min_length=1)
    vi: list[str] = Field(min_length=1)
    examples: list[GroupExample] = Field(default_factory=list)


class Neutral(_Strict):
    en: list[str]
    nl: list[str]
    vi: list[str]


class NormalOrgans(_Strict):
    """Phrases that say an organ works normally, by the condition they rule out ("normal
    kidney function": ``renal``), per language."""

    en: dict[str, list[str]]
    nl: dict[str, list[str]]
    vi: dict[str, list[str]]


class PopulationFile(_Strict):
    neutral: Neutral
    #: Neutral phrases that rule a condition out: the sentence is not about a group carried
    #: from before with it (round 26).
    normal: NormalOrgans | None = None
    populations: list[GroupEntry]
    conditions: list[GroupEntry]
    #: Languages that write a condition as the first part of a compound ("nierklaring").
    compound_languages: list[Literal["en", "nl", "vi"]] = Field(default_factory=list)


class Scope(_Strict):
    before: int = Field(ge=0, le=8)
    after: int = Field(ge=0, le=8)


class ExpectedReading(_Strict):
    """What the reader must find in an example sentence; fields left out are not checked."""

    drug: str | None = None
    population: list[str] | None = None
    age: str | None = None
    amount: str | None = None
    basis: Basis | None = None
    qualifier: Qualifier | None = None
    frequency: str | None = None
    polarity: Polarity | None = None
    conditions: list[str] | None = None
    #: the course length in hours: "168 h", "max 120 h"
    duration: str | None = None
    #: a step of raising the dose: ``amount`` its size, ``frequency`` how often (round 25)
    step: bool | None = None


class ReadingExample(_Strict):
    text: str = Field(min_length=1)
    expect: list[ExpectedReading] = Field(min_length=1)


class Occasions(_Strict):
    """Per-dose basis phrases built from two lists: a quantifier and an occasion of taking
    ("with each meal", "bij elke maaltijd", "trong mỗi bữa ăn")."""

    each: list[str] = Field(min_length=1)
    occasions: list[str] = Field(min_length=1)

    def phrases(self) -> list[str]:
        return [f"{q} {o}" for q in self.each for o in self.occasions]


class Titration(_Strict):
    """Raising a dose step by step: the verbs that say so ("increase", "ophogen", "tăng"), the
    words right before the size of a step ("by", "met", "thêm") and right after it ("erbij")."""

    verbs: tuple[str, ...] = Field(min_length=1)
    by: tuple[str, ...] = ()
    after: tuple[str, ...] = ()

    @cached_property
    def verb_tokens(self) -> tuple[tuple[str, ...], ...]:
        return tuple(phrase_tokens(p) for p in self.verbs)

    @cached_property
    def by_tokens(self) -> tuple[tuple[str, ...], ...]:
        return tuple(phrase_tokens(p) for p in self.by)

    @cached_property
    def after_tokens(self) -> tuple[tuple[str, ...], ...]:
        return tuple(phrase_tokens(p) for p in self.after)


class FirstPeriod(_Strict):
    """The first days, weeks or months of a treatment ("for the first two weeks", "de eerste
    week", "trong 1–2 tuần đầu"): the dose given then is the starting dose (round 27). ``first``
    are the words for "first"; ``periods`` the time words they go with; ``first_after`` says
    the first word follows the period ("tuần đầu"); ``not_after`` are words that, before the
    phrase, make it the time after the start ("after the first week": the usual dose)."""

    first: frozenset[str] = Field(min_length=1)
    periods: frozenset[str] = Field(min_length=1)
    first_after: bool = False
    not_after: frozenset[str] = frozenset()


class LanguageCues(_Strict):
    qualifier: dict[Qualifier, list[str]]
    basis: dict[Basis, list[str]]
    #: More per-dose phrases: every quantifier with every occasion.
    dose_occasions: Occasions | None = None
    frequency: dict[str, int]
    interval_before: list[str]
    interval_after: list[str]
    #: A time of day that recurs, read as once a day ("every morning", "elke avond", "mỗi tối").
    daily: list[str] = Field(default_factory=list)
    #: Morning and evening, read as twice a day ("every morning and evening", "'s ochtends en
    #: 's avonds", "sáng và tối").
    twice_daily: list[str] = Field(default_factory=list)
    #: A month after a count ("once a month", "eens per maand", "2 lần mỗi tháng"), and once a
    #: month on its own ("monthly", "elke maand", "hằng tháng") (round 26).
    per_month: list[str] = Field(default_factory=list)
    monthly: list[str] = Field(default_factory=list)
    polarity: dict[Polarity, list[str]]
    #: Polarity phrases about stopping or going on with a drug: positive (a negated stop, "keep
    #: taking") they are a safety claim even without a risk condition. Each is a polarity phrase.
    keep_use: list[str] = Field(default_factory=list)
    modals: list[str]
    #: Modals written after the verb and its object (Vietnamese "dùng warfarin được").
    modals_after: list[str] = Field(default_factory=list)
    negators: list[str] = Field(min_length=1)
    #: Negated assertions that scope over the rest of their clause, however far the polarity
    #: phrase stands ("there is no reason to think X would be a problem", "niets wijst erop dat",
    #: "không có nghĩa là bạn phải ngừng").
    negated_frames: list[str] = Field(default_factory=list)
    negation_scope: Scope
    use_verbs: list[str]
    day_words_before: list[str]
    normal_words: list[str] = Field(default_factory=list)
    more_than: list[str] = Field(default_factory=list)
    #: Words for how long a treatment lasts ("duration", "behandelduur", "thời gian điều trị"):
    #: a limit right before one reaches the course time after it ("the maximum duration of
    #: treatment is 5 days").
    course_nouns: list[str] = Field(default_factory=list)
    #: Changing a dose ("reduce the dose", "de dosis verlagen", "giảm liều"): negated, it says
    #: the usual use is allowed ("no need to reduce the dose in the elderly"); not negated, it
    #: says nothing about use (the amount is the claim).
    dose_change: list[str] = Field(default_factory=list)
    #: "The same goes for …": the safety claim before, now about the drugs named here.
    same_for: list[str] = Field(default_factory=list)
    #: Words that take up the amount of the sentence before ("that amount", "die hoeveelheid",
    #: "lượng đó"): a frequency beside them is that amount's, taken each time.
    restated_amount: list[str] = Field(default_factory=list)
    #: A day's amount split into doses: the words before the count ("in", "divided into",
    #: "verdeeld over") and the dose nouns after it ("doses", "giften"): "20 mg/kg/day in three
    #: divided doses" is taken three times a day.
    split_before: list[str] = Field(default_factory=list)
    split_after: list[str] = Field(default_factory=list)
    #: Words that make the population after them a comparison ("the same as an adult"), not
    #: the group the statement is about.
    comparison: list[str] = Field(default_factory=list)
    #: Words right before an amount that set it aside ("not the usual 20 mg", "instead of
    #: 20 mg", "niet de gebruikelijke 20 mg", "chứ không phải 20 mg"): the dose not meant, no
    #: dose claim of the sentence (its number is still looked for among the passages).
    instead: list[str] = Field(default_factory=list)
    #: Words that move on to the next step of a schedule ("then", "daarna", "rồi"): a
    #: qualifier does not reach across one, so in "2 capsules at first, then 1 after each loose
    #: stool" only the first amount is the starting dose.
    then: list[str] = Field(default_factory=list)
    #: Words that say two things are used together ("together", "die combinatie", "cùng với"):
    #: a safety claim naming no drug or risk of its own is about the drugs named before.
    together: list[str] = Field(default_factory=list)
    #: Every other day ("every other day", "om de dag", "cách ngày"): half a dose a day, and the
    #: "once" said with it ("cách ngày uống một lần") is the period's own, not once a day.
    alternate_days: list[str] = Field(default_factory=list)
    #: Every other week ("every other week", "om de week", "cách tuần"): once in 14 days (round
    #: 27).
    alternate_weeks: list[str] = Field(default_factory=list)
    #: Once a week in one phrase ("tuần một lần", "mỗi tuần 1 lần"): how often, not a weekly
    #: amount (round 27).
    once_weekly: list[str] = Field(default_factory=list)
    #: A unit of the product after an amount, with at most the drug's name between ("4
    #: microgram tacalcitol per gram", "50 microgram per gram zalf", "trong mỗi gam"): the
    #: amount is a concentration, what the product holds, not a dose.
    per_product: list[str] = Field(default_factory=list)
    #: Words that restate a strength as another ("1.1 mg sodium fluoride tablets; each tablet
    #: provides 0.5 mg of fluoride", "6,94 mg amlodipinebesilaat, overeenkomend met 5 mg
    #: amlodipine", "tương đương 5 mg"): between two strengths of one form, the larger is the
    #: salt's and the smaller its active part's.
    equivalent: list[str] = Field(default_factory=list)
    #: Raising a dose step by step ("increase by 100 mg every 1 to 2 days", "telkens 2 mg erbij,
    #: niet sneller dan eens per week", "tăng thêm 5 mg mỗi tuần"): the size of a step and the
    #: time between steps are no dose and no frequency of one (round 25).
    titration: Titration | None = None
    #: Words that mark an amount as a total ("in total", "in all", "in totaal", "tổng cộng"):
    #: one the answer works out from its own figures is no dose (round 26,
    #: :mod:`services.grounding.totals`).
    totals: list[str] = Field(default_factory=list)
    #: The first days or weeks of a treatment: their dose is the starting dose (round 27).
    first_period: FirstPeriod | None = None
    examples: list[ReadingExample] = Field(default_factory=list)

    @cached_property
    def total_tokens(self) -> tuple[tuple[str, ...], ...]:
        return tuple(phrase_tokens(p) for p in self.totals)


class CueFile(_Strict):
    en: LanguageCues
    nl: LanguageCues
    vi: LanguageCues


@dataclass(frozen=True, slots=True)
class Cue:
    """What a matched phrase means to the reader: ``kind`` and its ``value``.

    Kinds: ``qual`` (max/min/start/usual), ``basis`` (dose/day/week), ``freq`` (a count),
    ``ivl_before``, ``ivl_after``, ``pol`` (a polarity), ``modal``, ``modal_after``, ``neg``,
    ``wneg`` (a negated assertion over the rest of its clause), ``use``, ``dayword``, ``cmp``
    (a comparison), ``change`` (a dose change), ``then`` (the next step of a schedule),
    ``together`` (used together), ``product`` (a unit of the product: a concentration's
    denominator), ``equiv`` (a strength restated as another), ``course`` (a course noun),
    ``same`` (the claim before, for other drugs), ``again`` (the amount before, restated),
    ``month`` (a month after a count; with ``count`` 1, once a month on its own),
    ``pop`` (a population key), ``cond`` (a
    condition key; ``value2`` is ``"population"`` when it also selects a dose).
    """

    kind: str
    value: str = ""
    count: int = 0
    population: bool = False
    #: a polarity phrase about stopping or going on with a drug (``keep_use``)
    keeps: bool = False
    #: a condition that is an activity a passage may pause for a time (``pausable``)
    pausable: bool = False


def _strip_marks(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFD", text) if not unicodedata.combining(ch))


@lru_cache(maxsize=8192)
def spelling_key(word: str) -> str:
    """A drug name's spelling key: ``Amoxicilline`` → ``amoxicilin``, ``codeïne`` →
    ``codein``, ``azithromycin`` = ``azitromycine``. Memoised (bounded)."""
    text = _strip_marks(word.lower())
    text = "".join(ch for ch in text if ch.isalnum())
    text = text.replace("ph", "f").replace("th", "t").replace("y", "i")
    out: list[str] = []
    for ch in text:
        if not out or out[-1] != ch:
            out.append(ch)
    key = "".join(out)
    return key[:-1] if len(key) > 4 and key.endswith("e") else key


def _read(path: Path) -> Any:
    try:
        return load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise LexiconError(f"{path}: cannot read: {exc}") from None


def _validate(model: type[BaseModel], data: Any, path: Path) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise LexiconError(f"{path}: {where}: {first['msg']}") from None


class MedicalLexicon:
    """Compiled lexicons: drug lookup, and one phrase matcher per language for every cue,
    population and condition phrase."""

    def __init__(self, drugs: DrugFile, groups: PopulationFile, cues: CueFile, where: Path):
        self.source = where
        self.drug_file, self.group_file, self.cue_file = drugs, groups, cues
        self._single: dict[str, str] = {}
        #: spelling key → drug, named by the event's own passages (see :meth:`with_names`)
        self._local: Mapping[str, str] = {}
        #: word → INN or None, memoised per lexicon; cleared when it reaches _WORD_MEMO words.
        self._memo: dict[str, str | None] = {}
        self._multi: PhraseMatcher[str] = PhraseMatcher()
        self.inns: frozenset[str] = frozenset(d.inn for d in drugs.drugs)
        for entry in drugs.drugs:
            for name in (*entry.en, *entry.nl, *entry.vi, *entry.brands, entry.inn):
                self._add_drug(name, entry.inn, where)
        self.stems = tuple(sorted({spelling_key(s) for s in drugs.stems}, key=len, reverse=True))
        self.matchers: dict[str, PhraseMatcher[Cue]] = {}
        for language in LANGUAGES:
            self.matchers[language] = self._compile(language, groups, getattr(cues, language))
        self.cues: dict[str, LanguageCues] = {lang: getattr(cues, lang) for lang in LANGUAGES}

        #: One-word condition phrases per compounding language: "nier" → renal.
        self._heads: dict[str, dict[str, Cue]] = {
            language: {
                p.lower(): Cue("cond", g.key, population=g.population)
                for g in groups.conditions
                for p in getattr(g, language)
                if len(phrase_tokens(p)) == 1 and len(p) >= 4
            }
            for language in groups.compound_languages
        }
        self._compound_memo: dict[tuple[str, str], Cue | None] = {}

    def _add_drug(self, name: str, inn: str, where: Path) -> None:
        words = phrase_tokens(name)
        if not words:
            raise LexiconError(f"{where / 'drugs.yaml'}: {inn}: empty name {name!r}")
        if len(words) > 1:
            try:
                self._multi.add(words, inn)
            except ValueError as exc:
                raise LexiconError(f"{where / 'drugs.yaml'}: {inn}: {exc}") from None
            return
        key = spelling_key(words[0])
        old = self._single.setdefault(key, inn)
        if old != inn:
            raise LexiconError(
                f"{where / 'drugs.yaml'}: {inn}: name {name!r} already names {old!r}"
            )

    @staticmethod
    def _compile(language: str, groups: PopulationFile, cues: LanguageCues) -> PhraseMatcher[Cue]:
        matcher: PhraseMatcher[Cue] = PhraseMatcher()
        entries: list[tuple[str, Cue]] = []
        for q, phrases in cues.qualifier.items():
            entries += [(p, Cue("qual", q)) for p in phrases]
        for b, phrases in cues.basis.items():
            entries += [(p, Cue("basis", b)) for p in phrases]
        if cues.dose_occasions is not None:
            entries += [(p, Cue("basis", "dose")) for p in cues.dose_occasions.phrases()]
        entries += [(w, Cue("freq", count=n)) for w, n in cues.frequency.items()]
        entries += [(p, Cue("ivl_before")) for p in cues.interval_before]
        entries += [(p, Cue("ivl_after")) for p in cues.interval_after]
        entries += [(p, Cue("freq", count=1, value="daily")) for p in cues.daily]
        entries += [(p, Cue("freq", count=2, value="daily")) for p in cues.twice_daily]
        entries += [(p, Cue("month")) for p in cues.per_month]
        entries += [(p, Cue("month", count=1)) for p in cues.monthly]
        entries += [(p, Cue("freq", count=1, value="alternate")) for p in cues.alternate_days]
        entries += [(p, Cue("freq", count=1, value="fortnight")) for p in cues.alternate_weeks]
        entries += [(p, Cue("freq", count=1, value="weekly")) for p in cues.once_weekly]
        keeps = {phrase_tokens(p) for p in cues.keep_use}
        listed = {phrase_tokens(p) for ps in cues.polarity.values() for p in ps}
        if keeps - listed:
            missing = sorted(" ".join(w) for w in keeps - listed)
            raise LexiconError(f"{language}: keep_use phrases not in polarity: {missing}")
        for pol, phrases in cues.polarity.items():
            entries += [(p, Cue("pol", pol, keeps=phrase_tokens(p) in keeps)) for p in phrases]
        entries += [(p, Cue("modal")) for p in cues.modals]
        entries += [(p, Cue("modal_after")) for p in cues.modals_after]
        entries += [(p, Cue("neg")) for p in cues.negators]
        entries += [(p, Cue("wneg")) for p in cues.negated_frames]
        entries += [(p, Cue("use")) for p in cues.use_verbs]
        entries += [(p, Cue("dayword")) for p in cues.day_words_before]
        entries += [(p, Cue("normal")) for p in cues.normal_words]
        entries += [(p, Cue("more")) for p in cues.more_than]
        entries += [(p, Cue("course")) for p in cues.course_nouns]
        entries += [(p, Cue("cmp")) for p in cues.comparison]
        entries += [(p, Cue("change")) for p in cues.dose_change]
        entries += [(p, Cue("same")) for p in cues.same_for]
        entries += [(p, Cue("again")) for p in cues.restated_amount]
        entries += [(p, Cue("instead")) for p in cues.instead]
        entries += [(p, Cue("then")) for p in cues.then]
        entries += [(p, Cue("together")) for p in cues.together]
        entries += [(p, Cue("product")) for p in cues.per_product]
        entries += [(p, Cue("equiv")) for p in cues.equivalent]
        entries += [(p, Cue("neutral")) for p in getattr(groups.neutral, language)]
        if groups.normal is not None:
            for key, phrases in getattr(groups.normal, language).items():
                entries += [(p, Cue("neutral", key)) for p in phrases]
        for g in groups.populations:
            entries += [(p, Cue("pop", g.key)) for p in getattr(g, language)]
        for g in groups.conditions:
            entries += [
                (p, Cue("cond", g.key, population=g.population, pausable=g.pausable))
                for p in getattr(g, language)
            ]
        for phrase, cue in entries:
            words = phrase_tokens(phrase)
            if not words:
                raise LexiconError(f"{language}: empty phrase for {cue.kind}")
            if words in matcher:
                continue  # the first listing wins (a phrase may sit in two lists on purpose)
            matcher.add(words, cue)
        return matcher

    # -- drugs -----------------------------------------------------------------------------
    def with_names(self, names: Mapping[str, str]) -> MedicalLexicon:
        """This lexicon, also knowing ``names`` (spelling key → drug): the drugs an event's
        passages name in their opening (:mod:`services.grounding.medical.names`). A shallow
        view: the compiled tables and memos are shared, ``self`` is unchanged."""
        if not names:
            return self
        view = copy.copy(self)
        view._local = {**self._local, **names}
        return view

    @property
    def local_names(self) -> Mapping[str, str]:
        return self._local

    def known_drug(self, word: str) -> str | None:
        """The drug one word names by the lexicon alone (listed name, compound or stem)."""
        return self._word_drug(word) if len(word) >= 3 and word[0].isalpha() else None

    def listed_drug(self, word: str) -> str | None:
        """The drug one word names as a listed name (or a compound of one), not by a stem."""
        return self._listed(spelling_key(word)) if len(word) >= 3 and word[0].isalpha() else None

    def drug_at(self, words: list[str], i: int, limit: int) -> tuple[int, str] | None:
        """The drug named at token ``i``: ``(tokens, INN)``, or ``None``."""
        hit = self._multi.at(words, i, limit)
        if hit is not None:
            return hit
        word = words[i]
        if len(word) < 3 or not word[0].isalpha():
            return None
        if self._local:
            local = self._local_drug(spelling_key(word))
            if local is not None:
                return (1, local)
        memo = self._memo
        if word in memo:
            inn = memo[word]
            return None if inn is None else (1, inn)
        found = self._word_drug(word)
        if len(memo) >= _WORD_MEMO:
            memo.clear()  # bounded: start again rather than grow
        memo[word] = found
        return None if found is None else (1, found)

    def _local_drug(self, key: str) -> str | None:
        """A name the passages taught, also as the first part of a Dutch compound written
        with a device or form ("apomorfinepomp" for a taught "apomorfine"), as :meth:`_listed`
        reads listed names."""
        local = self._local
        inn = local.get(key)
        if inn is not None or len(key) < _COMPOUND_SHORTEST:
            return inn
        for cut in range(len(key) - 3, 5, -1):
            inn = local.get(key[:cut])
            if inn is not None:
                return inn
        return None

    def _listed(self, key: str) -> str | None:
        inn = self._single.get(key)
        if inn is not None:
            return inn
        if len(key) >= _COMPOUND_SHORTEST:  # Dutch: "paracetamolzetpillen", "ibuprofendrank"
            for cut in range(len(key) - 3, 5, -1):
                inn = self._single.get(key[:cut])
                if inn is not None:
                    return inn
        return None

    def _word_drug(self, word: str) -> str | None:
        key = spelling_key(word)
        inn = self._listed(key)
        if inn is not None:
            return inn
        if len(key) >= 7:
            for stem in self.stems:
                if key.endswith(stem) and len(key) >= len(stem) + 3:
                    return key
        return None

    def find_drugs(self, words: list[str], start: int, stop: int) -> Iterator[tuple[int, int, str]]:
        """``(first, stop, INN)`` for every drug named in ``words[start:stop]``."""
        span = words[start:stop]
        # Where drug_at can find something, picked out in C: the first word of a name of
        # several words, a name the passages taught, or a word of three letters or more that
        # the memo does not already know to name none (most words, once seen).
        known = map(self._memo.get, span, itertools.repeat(_UNSEEN))
        maybe = map(
            operator.and_,
            map(operator.ge, map(len, span), itertools.repeat(3)),
            map(operator.is_not, known, itertools.repeat(None)),
        )
        maybe = map(operator.or_, maybe, map(self._multi.starts, span))
        if self._local:
            taught = map(self._local.__contains__, map(spelling_key, span))
            maybe = map(operator.or_, maybe, taught)
        resume = start
        for i in itertools.compress(range(start, stop), maybe):
            if i < resume:
                continue
            hit = self.drug_at(words, i, stop)
            if hit is not None:
                yield i, i + hit[0], hit[1]
                resume = i + hit[0]

    def compounds(self, language: str) -> bool:
        """Whether ``language`` writes conditions as the first part of compounds."""
        return language in self._heads

    def compound_conditions(
        self,
        words: list[str],
        lo: int,
        hi: int,
        language: str,
        found: Iterable[tuple[int, int, object]] = (),
    ) -> list[tuple[int, int, Cue]]:
        """Conditions written as the first part of a compound in a compounding language
        ("nierklaring", "leverwaarden", "zwangerschapsdiabetes"), for tokens outside the spans
        already ``found`` (cues, drug names)."""
        heads = self._heads.get(language)
        if not heads:
            return []
        taken = {k for s, e, _ in found for k in range(s, e)}
        out: list[tuple[int, int, Cue]] = []
        for k in range(lo, hi):
            word = words[k]
            if k in taken or len(word) < 8 or not word.isalpha():
                continue
            key = (language, word)
            if key not in self._compound_memo:
                if len(self._compound_memo) >= _WORD_MEMO:
                    self._compound_memo.clear()  # bounded: start again rather than grow
                self._compound_memo[key] = next(
                    (
                        heads[word[:cut]]
                        for cut in range(len(word) - 4, 3, -1)
                        if word[:cut] in heads
                    ),
                    None,
                )
            cue = self._compound_memo[key]
            if cue is not None:
                out.append((k, k + 1, cue))
        return out

    def matcher(self, language: str | None) -> PhraseMatcher[Cue]:
        return self.matchers.get(language or "en", self.matchers["en"])


@lru_cache(maxsize=8)
def _load(folder: str) -> MedicalLexicon:
    where = Path(folder)
    drugs = _validate(DrugFile, _read(where / "drugs.yaml"), where / "drugs.yaml")
    groups = _validate(
        PopulationFile, _read(where / "populations.yaml"), where / "populations.yaml"
    )
    cues = _validate(CueFile, _read(where / "medical_cues.yaml"), where / "medical_cues.yaml")
    return MedicalLexicon(drugs, groups, cues, where)


def load_lexicon(folder: Path | None = None) -> MedicalLexicon:
    """The lexicons of ``folder`` (default ``rules/grounding``), loaded once per folder."""
    return _load(str((folder or DEFAULT_LEXICON_DIR).resolve()))
