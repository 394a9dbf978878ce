"""Citations checked against what was retrieved (SPEC §5).

Where citations come from:

- markers in the answer: ``[doc:ID]`` (also ``[doc:a, doc:b]``) names a document; ``[n]``
  (also ``[1, 3]``, ``[2-4]``) is the n-th retrieved passage, 1-based, counted by ``rank`` when
  every passage has one and by list order otherwise;
- the event's ``citations`` list: document ids cited by the answer as a whole.

Outcomes:

- **fabricated**: a cited id that is not among the retrieved passages, or an ``[n]`` out of range
  (reported as written, ``[7]``). Markers count wherever they are, even in a question;
- **unsupported**: a retrieved document cited by a sentence that it does not ground — the same
  test as grounding (the structured medical comparison for dose and contraindication
  sentences; numbers present and content-word support at the threshold for others), against
  the passages of that document alone. Sentences that are not claims (questions, courtesy) are not
  tested. A document that only the ``citations`` list names is unsupported when it grounds none
  of the answer's claims; the issue then names the claim it supports best. A sentence that
  cites several documents may be grounded by them together: a cited document that does not
  ground it alone is still supported when another cited document grounds it and this one
  states a part of the sentence that one does not (its indication beside the other's dose).
  A cited document that names drugs, none of those the sentence names, supports none of it
  (another product's leaflet cited for the one the sentence speaks of).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from schemas.verdicts import CitationIssue
from services.grounding.claims import AtomicClaim
from services.grounding.evidence import Evidence, Verdict
from services.grounding.sentences import Marker, find_markers

__all__ = ["CitationResult", "check_citations", "resolve"]


@dataclass(frozen=True, slots=True)
class CitationResult:
    fabricated: list[str]
    unsupported: list[CitationIssue]
    #: Per atomic claim, the documents it cites (fabricated ones as written), in marker order.
    cited: list[list[str]]


def resolve(marker: Marker, evidence: Evidence) -> list[tuple[str, bool]]:
    """``(doc_id, retrieved)`` for every citation in a marker; ``[n]`` out of range → ``"[n]"``."""
    out: list[tuple[str, bool]] = [(d, d in evidence.by_doc) for d in marker.doc_ids]
    for n in marker.indices:
        passage = evidence.nth(n)
        out.append((f"[{n}]", False) if passage is None else (passage.doc_id, True))
    return out


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


#: Content units a co-cited document must add to what the grounding one states.
_ADDED_UNITS = 2


def _adds_to(claim: AtomicClaim, doc_id: str, backing: Sequence[str], evidence: Evidence) -> bool:
    """Whether ``doc_id``, cited beside documents that ground the sentence (``backing``), states
    a part of it they do not: a sentence citing "[1-2]" for "only for adults with spasticity
    after a stroke, 150 to 450 mg a day" takes the indication from one and the dose from the
    other. It must add at least :data:`_ADDED_UNITS` of the sentence's content units; a
    document that adds nothing is unsupported, as is every document when none grounds it."""
    if not backing:
        return False
    passages = evidence.passages
    told = frozenset().union(*[passages[i].units for d in backing for i in evidence.by_doc[d]])
    own = frozenset().union(*[passages[i].units for i in evidence.by_doc[doc_id]])
    return len((claim.units & own) - told) >= _ADDED_UNITS


def _about_other_drugs(named: frozenset[str], doc_id: str, evidence: Evidence) -> bool:
    """Whether a cited document is about other drugs than the sentence: it names drugs, and
    none of those the sentence names ("leave Natroba on for 10 minutes [doc:ulesfia-label]").
    A chunk that names no drug is about none here (its siblings' drug is not looked up)."""
    if not named:
        return False
    passages = evidence.passages
    theirs = frozenset().union(*[passages[i].drugs for i in evidence.by_doc[doc_id]])
    return bool(theirs) and evidence.renamed(theirs).isdisjoint(evidence.renamed(named))


def _no_drugs(claim: AtomicClaim) -> frozenset[str]:
    return frozenset()


def check_citations(
    content: str,
    listed: Sequence[str],
    claims: Sequence[AtomicClaim],
    evidence: Evidence,
    test: Callable[[AtomicClaim, str], Verdict],
    named: Callable[[AtomicClaim], frozenset[str]] = _no_drugs,
    said: Callable[[str], bool] = lambda doc_id: False,
) -> CitationResult:
    """Fabricated and unsupported citations of one answer, and what each claim cites.
    ``test(claim, doc_id)`` is the grounding test against one document's passages;
    ``named(claim)`` the drugs the sentence names itself (a cited document about other drugs
    supports none of it); ``said(doc_id)`` whether a sentence that is no claim (a referral: "let
    your doctor know if you have heart failure") says what a document the ``citations`` list
    names says, so that the list may name it."""
    fabricated: list[str] = []
    marked: set[str] = set()
    for marker in find_markers(content):
        for doc_id, retrieved in resolve(marker, evidence):
            if retrieved:
                marked.add(doc_id)
            else:
                fabricated.append(doc_id)
    fabricated.extend(d for d in listed if d not in evidence.by_doc)

    verdicts: dict[tuple[int, str], Verdict] = {}

    def verdict_of(claim: AtomicClaim, doc_id: str) -> Verdict:
        """``test(claim, doc_id)``, worked out once per claim and document."""
        key = (id(claim), doc_id)
        if key not in verdicts:
            verdicts[key] = test(claim, doc_id)
        return verdicts[key]

    def grounds(claim: AtomicClaim, doc_id: str) -> tuple[bool, float]:
        verdict = verdict_of(claim, doc_id)
        return verdict.grounded, verdict.support

    def _shared(claim: AtomicClaim, doc_id: str, docs: Sequence[str]) -> bool:
        """Whether ``doc_id`` grounds the claim, or grounds its part of a sentence that cites it
        beside other documents: what it fails on (numbers it lacks, readings it does not back)
        the others hold, and it holds a number or backs a reading of the claim ("… down to 250
        mg once a day [3], instead of the usual 500 mg a day [2]"; round 27)."""
        verdict = verdict_of(claim, doc_id)
        if verdict.grounded or len(docs) < 2:
            return verdict.grounded
        others = [d for d in docs if d != doc_id and d in evidence.by_doc]
        if not others:
            return False
        keys = evidence.doc_keys
        beside = frozenset().union(*(keys.get(d, frozenset()) for d in others))
        if not all(k in beside for k in verdict.numbers_missing):
            return False
        backed = [verdict_of(claim, d).medical for d in others]
        for i, c in enumerate(verdict.medical):
            if c.status != "supported" and not any(
                len(m) > i and m[i].status == "supported" for m in backed
            ):
                return False
        own = keys.get(doc_id, frozenset())
        return any(c.status == "supported" for c in verdict.medical) or any(
            q.key in own for q in claim.quantities if q.has_unit
        )

    unsupported: list[CitationIssue] = []
    cited: list[list[str]] = []
    for claim in claims:
        docs = _unique([d for m in claim.markers for d, _ in resolve(m, evidence)])
        cited.append(docs)
        if not docs:
            continue
        failed = [d for d in docs if d in evidence.by_doc and not _shared(claim, d, docs)]
        if len(failed) < len(docs):  # a grounding document about other drugs grounds nothing
            drugs = named(claim)
            failed = [
                d
                for d in docs
                if d in failed or (d in evidence.by_doc and _about_other_drugs(drugs, d, evidence))
            ]
        if failed and len(docs) > 1:
            backing = [d for d in docs if d in evidence.by_doc and d not in failed]
            failed = [d for d in failed if not _adds_to(claim, d, backing, evidence)]
        unsupported.extend(CitationIssue(doc_id=d, claim=claim.text) for d in failed)
    for doc_id in _unique([d for d in listed if d in evidence.by_doc and d not in marked]):
        if not claims:
            continue
        best, best_support = 0, -1.0
        for i, claim in enumerate(claims):
            ok, support = grounds(claim, doc_id)
            if ok:
                break
            if support > best_support:
                best, best_support = i, support
        else:
            if not said(doc_id):
                unsupported.append(CitationIssue(doc_id=doc_id, claim=claims[best].text))
    unique_issues = list(dict.fromkeys(unsupported))
    return CitationResult(_unique(fabricated), unique_issues, cited)
