"""Word lists that the grounding check uses, per language (``en``, ``nl``, ``vi``).

Hand-written for this project (not copied from a stop-word package), kept small on purpose and
reviewed against English, Dutch and Vietnamese patient-leaflet text. The stop words include a
few reporting and hedging words (``suggest``, ``study``, ``therefore``, ``lijkt``) that state no
checkable fact, and the light verbs of dose statements (``take``, ``use``, ``innemen``,
``uống``) and of going on with one (``keep going``, ``blijven``, ``tiếp tục``), whose content is
the drug and the amount. They are part of the
algorithm rather than operator data, so they live next to the code that explains them:

- stop words are dropped before content-word support is computed. Negations (``not``, ``no``,
  ``niet``, ``geen``, ``không``) are *kept* — English and Dutch ones all read as ``not`` — so
  "do not take with alcohol" does not match "take with alcohol";
- abbreviations never end a sentence (``e.g.``, ``bijv.``, ``i.v.``, ``BS.``);
- cues: phrases (lower case, whole words) that make a sentence a dose statement, a
  contraindication, or a non-claim (greeting, abstention, referral to a professional).

Unknown languages use the union of all lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Final

from services.yamlload import safe_load as load_yaml

__all__ = [
    "ABBREVIATIONS",
    "ABSTENTION_CUES",
    "ACKNOWLEDGEMENTS",
    "CAUTION_IDIOMS",
    "CONTRA_CUES",
    "DOSE_CUES",
    "LANGUAGES",
    "NEGATIONS",
    "NONCLAIM_EXAMPLES",
    "NONCLAIM_FRAMES",
    "PLEASANTRY_CUES",
    "REFERRAL_CUES",
    "STOP_WORDS",
    "SYNONYMS",
    "NonclaimFrames",
    "SynonymFile",
    "cues_for",
    "for_language",
    "frames_for",
]

LANGUAGES: Final = ("en", "nl", "vi")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _phrases(text: str) -> tuple[str, ...]:
    """Phrases separated by ``|``, lower-cased, with single spaces."""
    return tuple(" ".join(item.lower().split()) for item in text.split("|") if item.strip())


STOP_WORDS: Final[dict[str, frozenset[str]]] = {
    "en": _words(
        """a about above after again against all also am an and any are as at be because been
        before being below between both but by can could did do does doing down during each
        either else ever every few for from further had has have having he her here hers herself
        him himself his how however i if in into is it its itself just may me might more most
        much must my myself of off on once only or other our ours ourselves out over own per
        please same shall she should so some such than that the their theirs them themselves
        then there these they this those through thus to too under until up upon us very via was
        we were what when where which while who whom whose why will with would yet you your
        yours yourself yourselves anything something everything anyone someone everyone
        suggest suggests suggested seem seems seemed appear appears appeared indicate indicates
        indicated show shows showed shown demonstrate demonstrates demonstrated conclude
        concluded conclusion conclusions result results finding findings find found data study
        studies present therefore hence overall furthermore moreover additionally likely
        possibly generally usually important importantly respectively regard regarding
        take takes taking taken took use uses used using give gives given
        keep keeps kept keeping going go goes continue continues continued continuing carry"""
    ),
    "nl": _words(
        """aan al alle alleen als alsof ben bij binnen dan dat de deze die dit doch doen door dus
        een eens en er erg ge had heb hebben heeft hem het hier hij hoe hun iets ik in is ja je
        jij jou jouw kan kon kunnen maar me meer men met mij mijn moet moeten na naar nog nu of
        om omdat onder ons ook op over per te tegen toch toen tot u uit uw van veel voor want
        waren was wat we wel werd wie wij wil worden wordt zal ze zelf zich zij zijn zo zodat zou
        zouden lijkt lijken blijkt blijken suggereert toont tonen laat resultaat resultaten
        studie onderzoek daarom echter bovendien belangrijk mogelijk waarschijnlijk meestal
        doorgaans gewoonlijk neem neemt nemen innemen gebruik gebruikt gebruiken geef geeft
        geven blijf blijft blijven doorgaan ga gaat"""
    ),
    "vi": _words(
        """là và của các những được có cho này với trong thì mà một để khi từ về cũng như nên
        hay hoặc bạn tôi người vào ra lên đã sẽ đang rất nếu sau trước bị do vì ở tại lại nhiều
        ít đó kia nào gì ai hơn nhất cần phải theo bằng vẫn còn thể uống dùng sử tiếp tục"""
    ),
}

ABBREVIATIONS: Final[dict[str, frozenset[str]]] = {
    "en": _words(
        """e.g. i.e. etc. vs. dr. mr. mrs. ms. prof. approx. fig. st. jr. incl. max. min. tab.
        caps. cf. al. ca. resp. i.v. i.m. s.c. p.o. b.i.d. t.i.d. q.d. a.m. p.m."""
    ),
    "nl": _words(
        """bijv. bv. o.a. d.w.z. z.n. ca. dhr. mevr. drs. dr. nr. incl. max. min. resp. enz. evt.
        i.v.m. m.b.t. a.u.b. tabl. i.v. i.m. s.c. p.o. zgn. t.a.v. vs. excl. mr."""
    ),
    "vi": _words("""bs. ts. ths. pgs. gs. tp. tt. ks. ds. v.v. vd. i.v. tr."""),
}

#: Negations, read as one word ``not``: "no more than" and "not more than" say the same.
NEGATIONS: Final = _words("not no never none nor cannot niet geen nooit")

#: A sentence made only of these words ("OK.", "Yes!", "Vâng.") asserts nothing checkable.
ACKNOWLEDGEMENTS: Final = _words(
    "ok okay oké oke sure yes yeah no nope indeed correct right not yet quite exactly absolutely "
    "ja nee neen jawel klopt inderdaad nog niet precies helemaal vâng dạ ừ được không có đúng "
    "rồi chưa nhé nha ạ bạn vậy"
)

#: Words that make a number with a dose unit a dose statement (drug names come from the registry).
DOSE_CUES: Final[dict[str, tuple[str, ...]]] = {
    "en": _phrases(
        """dose | doses | dosage | dosing | take | taking | taken | give | administer | tablet |
        tablets | capsule | capsules | daily | a day | per day | every | maximum | max | up to |
        no more than | do not exceed | once | twice | times | syrup | injection | inject |
        injected | given | be given | inhale | inhaled | instil | instill | instilled | apply |
        applied | insert | inserted | use | used | injections | shot | shots | jab | jabs"""
    ),
    "nl": _phrases(
        """dosis | doses | dosering | innemen | inname | neem | neemt | nemen | geef | tablet |
        tabletten | capsule | capsules | per dag | daags | elke | iedere | maximaal | maximum |
        hoogstens | niet meer dan | keer | maal | stroop | injectie | gegeven | toegediend |
        toedienen | spuiten | inhaleren | gebruik | gebruiken | gebruikt | aanbrengen | breng |
        inbrengen | druppel | druppelen | smeer | smeren | injecties | prik | prikken"""
    ),
    "vi": _phrases(
        """liều | liều dùng | liều lượng | uống | dùng | viên | mỗi ngày | một ngày | hằng ngày |
        tối đa | không quá | lần | tiêm | siro | cách nhau | xịt | hít | nhỏ | bôi | mũi"""
    ),
}


#: Phrases that make a sentence a contraindication statement.
CONTRA_CUES: Final[dict[str, tuple[str, ...]]] = {
    "en": _phrases(
        """contraindicated | contraindication | contraindications | contra-indicated | must not
        take | must not use | must not be | do not take | do not use | don't take | don't use |
        should not take | should not use | should not be used | should not be taken | never take
        | not suitable | not recommended | avoid | not be given | do not give"""
    ),
    "nl": _phrases(
        """gecontra-indiceerd | gecontraindiceerd | contra-indicatie | contra-indicaties |
        contraindicatie | niet gebruiken | niet innemen | niet nemen | niet geven | mag niet |
        mogen niet | gebruik geen | neem geen | niet geschikt | vermijd | afgeraden | niet
        aanbevolen | gebruik het niet | neem het niet"""
    ),
    "vi": _phrases(
        """chống chỉ định | không được dùng | không nên dùng | không dùng | không được uống | không
        nên uống | không uống | không được sử dụng | không nên sử dụng | tránh dùng | tránh sử
        dụng | không thích hợp"""
    ),
}


#: Idioms of caution whose words hold a contraindication cue but tell the reader to be careful,
#: not to avoid a drug ("Neem geen risico: bel meteen 112", "don't take any chances"): taken out
#: of a sentence before it is asked whether it states a contraindication.
CAUTION_IDIOMS: Final[dict[str, tuple[str, ...]]] = {
    "en": _phrases(
        """don't take any chances | do not take any chances | don't take chances | don't take
        any risks | do not take any risks | don't take risks"""
    ),
    "nl": _phrases(
        """neem geen risico | neem geen risico's | neem geen enkel risico | neem het zekere voor
        het onzekere"""
    ),
    "vi": _phrases("""đừng chủ quan | không nên chủ quan | không được chủ quan"""),
}

#: Openings of courtesy sentences (a greeting with at most two more content words).
PLEASANTRY_CUES: Final[dict[str, tuple[str, ...]]] = {
    "en": _phrases(
        """hello | hi | hey | good morning | good afternoon | good evening | thanks | thank you |
        you're welcome | you are welcome | you're very welcome | you are very welcome |
        you're most welcome | very welcome | i hope this helps | hope this helps | feel free |
        let me know | glad to help | happy to help | sure | of course | great question |
        good question | that's a good question | that's a great question | good point |
        take care | best wishes | get well soon | i'm sorry to hear | sorry to hear | sorry |
        apologies | my apologies | here is what | here's what | here is some information |
        here's some information"""
    ),
    "nl": _phrases(
        """hallo | hoi | goedemorgen | goedemiddag | goedenavond | dank je | dank u | bedankt |
        graag gedaan | ik hoop dat dit helpt | hopelijk helpt dit | laat het weten |
        laat het me weten | natuurlijk | goede vraag | beterschap | sterkte | excuses | sorry |
        vervelend om te horen | hier is wat | hier is informatie"""
    ),
    "vi": _phrases(
        """xin chào | chào bạn | chào | cảm ơn | cám ơn | không có gì | hy vọng | hi vọng |
        chúc bạn | rất vui | tất nhiên | xin lỗi | dưới đây là thông tin | sau đây là thông tin |
        câu hỏi hay | câu hỏi rất hay"""
    ),
}


#: Phrases of a pure abstention ("I don't know", "the leaflets do not mention it").
ABSTENTION_CUES: Final[dict[str, tuple[str, ...]]] = {
    "en": _phrases(
        """i don't know | i do not know | i'm not sure | i am not sure | i cannot answer |
        i can't answer | i'm unable to | i am unable to | i'm not able to | i am not able to |
        i cannot help | i can't help | i cannot provide | i can't provide |
        i don't have information | i do not have information | no information |
        i couldn't find | i could not find | i can't find | i cannot find | do not mention |
        don't mention | does not mention | doesn't mention"""
    ),
    "nl": _phrases(
        """ik weet het niet | ik weet niet | weet ik niet | ik ben niet zeker |
        ik kan geen antwoord | kan ik geen antwoord | ik kan deze vraag niet | ik kan daar geen |
        ik kan je niet | ik kan u niet | geen informatie | daar kan ik niet |
        kan ik niet vinden | ik kan niet vinden | noemen dit niet | gaan daar niet over"""
    ),
    "vi": _phrases(
        """tôi không biết | tôi không chắc | tôi không thể trả lời | tôi không thể giúp |
        không có thông tin | tôi không có thông tin | không tìm thấy | không đề cập"""
    ),
}


#: "Ask your doctor" advice: kept out of grounding unless it carries a number or a contraindication.
REFERRAL_CUES: Final[dict[str, tuple[str, ...]]] = {
    "en": _phrases(
        """consult your doctor | consult a doctor | consult your pharmacist | ask your doctor |
        ask your pharmacist | ask your gp | talk to your doctor | speak to your doctor |
        see your doctor | see a doctor | contact your doctor | consult a healthcare |
        seek medical | check with your | discuss this with your | your pharmacist can |
        your doctor can | your gp can"""
    ),
    "nl": _phrases(
        """raadpleeg uw arts | raadpleeg je arts | raadpleeg een arts | vraag uw arts |
        vraag je arts | vraag uw apotheker | vraag je apotheker | vraag het uw | vraag het je |
        overleg met uw | overleg met je | overleg met de | bespreek dit met |
        neem contact op met | ga naar de huisarts | bel de huisarts | uw apotheker kan |
        uw apotheker weet | uw huisarts kan"""
    ),
    "vi": _phrases(
        """hỏi ý kiến bác sĩ | tham khảo ý kiến bác sĩ | hỏi bác sĩ | gặp bác sĩ |
        liên hệ bác sĩ | báo cho bác sĩ | hỏi dược sĩ | tham khảo ý kiến dược sĩ |
        đến cơ sở y tế"""
    ),
}


def for_language(table: dict[str, frozenset[str]], language: str | None) -> frozenset[str]:
    """The list for ``language``, or the union of every language's list when it is unknown."""
    if language in table:
        return table[language]
    return frozenset().union(*table.values())


def cues_for(table: dict[str, tuple[str, ...]], language: str | None) -> tuple[str, ...]:
    """The cue phrases for ``language``, or every language's when it is unknown."""
    if language in table:
        return table[language]
    return tuple(phrase for phrases in table.values() for phrase in phrases)


@dataclass(frozen=True, slots=True)
class NonclaimFrames:
    """Word sets of one language from ``rules/grounding/nonclaims.yaml`` (phrases as padded
    keys, like :func:`~services.grounding.text.phrase_key`)."""

    speakers: tuple[str, ...]
    sources: tuple[str, ...]
    negators: tuple[str, ...]
    verbs: tuple[str, ...]
    hedges: tuple[str, ...]
    professionals: tuple[str, ...]
    #: Heads of compound professional nouns ("kinderarts", "diabetesverpleegkundige").
    professional_heads: tuple[str, ...]
    contact_verbs: tuple[str, ...]
    urgency: tuple[str, ...]
    contrast: tuple[str, ...]
    #: Concessive conjunctions ("even though", "ook al", "kể cả khi"): they concede the user's
    #: circumstance and bring in no claim, so they do not count as a contrast.
    concessions: tuple[str, ...]
    courtesy: tuple[str, ...]
    limits: tuple[str, ...]
    #: Openings that say back what the user asked ("You're asking whether", "U wilt weten").
    restatements: tuple[str, ...]
    #: Words of acting alone ("on your own", "op eigen houtje", "tự ý") and the negators that
    #: make them a caution ("don't change the dose on your own").
    alone: tuple[str, ...]
    alone_negators: tuple[str, ...]
    #: Openings of gladness ("glad to hear", "fijn dat"): courtesy like a greeting.
    gladness: tuple[str, ...]
    #: A speaker offering to work something out ("I'll work", "reken ik", "mình sẽ tính") and
    #: the words that say it is for the user ("for you", "voor u", "giúp bạn").
    offers: tuple[str, ...]
    for_you: tuple[str, ...]
    #: The user asked to tell more ("tell me", "laat me weten", "cho tôi biết"): a question
    #: back in the imperative.
    requests: tuple[str, ...]
    #: Words that may stand beside an answer word in an elliptic reply ("Not in your case.",
    #: "Nee, dat hoeft niet.", "Không cần đâu."): pronouns, words of need, "in your case".
    ellipsis: tuple[str, ...]
    #: Words that open what an answer sets aside ("rather than the standard 10 mg", "in plaats
    #: van de gewone twee keer per dag", "thay vì 2 lần"): up to the clause's end, no claim.
    rejections: tuple[str, ...]
    #: Verbs of telling or reporting to someone ("tell", "vertellen", "báo") and the
    #: complementizers of what is told ("that", "dat", "là"): a sentence with both reports.
    reports: tuple[str, ...]
    report_that: tuple[str, ...]
    #: Verbs that say what the sources cover ("explain", "beschrijft", "mô tả"): a sentence
    #: that says so and, after a contrast, that they say nothing of what was asked, abstains.
    describes: tuple[str, ...]
    #: Phrases that place the patient in a band the passages give ("falls in the 16–30 mL/min
    #: band", "valt in de groep van 30 tot 60 ml/min", "thuộc nhóm 20–30 kg"): the band's
    #: numbers carry the sentence, not its words (round 27).
    placements: tuple[str, ...]


def _load_frames(path: Path) -> tuple[dict[str, NonclaimFrames], list[dict[str, object]]]:
    data = load_yaml(path.read_text(encoding="utf-8"))
    frames: dict[str, NonclaimFrames] = {}
    for language in LANGUAGES:
        entry = data[language]
        try:
            frames[language] = NonclaimFrames(
                **{
                    name: tuple(" ".join(str(p).lower().split()) for p in entry[name])
                    for name in NonclaimFrames.__slots__
                }
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{path}: {language}: {exc}") from None
    return frames, list(data.get("examples", []))


#: Abstention, hedge and referral frames per language (``rules/grounding/nonclaims.yaml``).
NONCLAIM_FRAMES, NONCLAIM_EXAMPLES = _load_frames(
    Path(__file__).resolve().parents[2] / "rules" / "grounding" / "nonclaims.yaml"
)


@lru_cache(maxsize=8)
def frames_for(language: str | None) -> tuple[NonclaimFrames, ...]:
    """The nonclaim frames of ``language`` (``nonclaims.yaml``), or every language's when it
    has none of its own."""
    if language in NONCLAIM_FRAMES:
        return (NONCLAIM_FRAMES[language],)
    return tuple(NONCLAIM_FRAMES.values())


@dataclass(frozen=True, slots=True)
class SynonymFile:
    """``rules/grounding/synonyms.yaml``: concept families per language, discourse words and
    the examples the suite runs (phrases lower-cased with single spaces)."""

    #: ``(concept keys, {language: phrases})`` per family.
    families: tuple[tuple[tuple[str, ...], dict[str, tuple[str, ...]]], ...]
    discourse: dict[str, tuple[str, ...]]
    examples: tuple[dict[str, object], ...]


def _load_synonyms(path: Path) -> SynonymFile:
    data = load_yaml(path.read_text(encoding="utf-8"))
    families = []
    for entry in data["families"]:
        raw = entry["key"]
        keys = tuple(str(k) for k in (raw if isinstance(raw, list) else [raw]))
        phrases = {
            lang: tuple(" ".join(str(p).lower().split()) for p in entry.get(lang, []))
            for lang in LANGUAGES
        }
        families.append((keys, phrases))
    discourse = {
        lang: tuple(" ".join(str(p).lower().split()) for p in data["discourse"].get(lang, []))
        for lang in LANGUAGES
    }
    return SynonymFile(tuple(families), discourse, tuple(data.get("examples", [])))


#: Synonym families for content-word support (``rules/grounding/synonyms.yaml``).
SYNONYMS: Final = _load_synonyms(
    Path(__file__).resolve().parents[2] / "rules" / "grounding" / "synonyms.yaml"
)
