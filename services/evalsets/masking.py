"""Masking of personal data in case texts with the findings' own spans and masked evidence.

A case must not turn the evaluation set into a copy of the chat log's personal data (SPEC §1).
Screening already found the spans (``Finding.start``/``end``, code points into the content) and
masked them (``Finding.evidence``); here each span of a masked category is replaced by its
evidence (:func:`mask_text`). Texts derived from the content — claim and citation sentences, the
evidence of findings of unmasked categories — have each matched value replaced wherever it occurs
(:func:`mask_values`). Fail-safe rules: overlapping spans merge into one replacement; evidence
equal to the matched text (a rule with mask ``none``) is replaced by ``[ENTITY]``; a span that
does not fit the text (the finding belongs to another version of it) masks the whole text.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Final

from schemas.outputs import Finding

__all__ = ["MASKED_TEXT", "mask_text", "mask_values", "masked_values", "replace_values"]

MASKED_TEXT: Final = "[MASKED]"


def _spans(
    text: str, findings: Sequence[Finding], categories: Collection[str], offset: int
) -> list[tuple[int, int, str]]:
    spans = []
    for f in findings:
        if f.category not in categories or f.end <= f.start:
            continue
        start, end = f.start - offset, f.end - offset
        if end <= 0 or start >= len(text):
            continue
        start, end = max(start, 0), min(end, len(text))
        matched = text[start:end]
        evidence = f.evidence if f.evidence and f.evidence != matched else f"[{f.entity}]"
        spans.append((start, end, evidence))
    return sorted(spans)


def mask_text(
    text: str, findings: Sequence[Finding], categories: Collection[str], *, offset: int = 0
) -> str:
    """``text`` with every finding span of ``categories`` replaced by the finding's evidence.

    ``text`` is ``content[offset:offset + len(text)]`` of the message the findings were raised
    on (``offset`` 0 for the whole content); spans partly outside the fragment are clipped.
    With ``offset`` 0 a span ending past the text masks the whole text.
    """
    if offset == 0 and any(f.category in categories and f.end > len(text) for f in findings):
        return MASKED_TEXT
    spans = _spans(text, findings, categories, offset)
    if not spans:
        return text
    out: list[str] = []
    cursor = 0
    group_start, group_end, group_ev = spans[0]
    evidences = [group_ev]
    for start, end, evidence in spans[1:]:
        if start < group_end:  # overlap: extend the group
            group_end = max(group_end, end)
            if evidence not in evidences:
                evidences.append(evidence)
            continue
        out += [text[cursor:group_start], " ".join(evidences)]
        cursor = group_end
        group_start, group_end, evidences = start, end, [evidence]
    out += [text[cursor:group_start], " ".join(evidences), text[group_end:]]
    return "".join(out)


def mask_values(
    text: str, content: str, findings: Sequence[Finding], categories: Collection[str]
) -> str:
    """Replace, anywhere in ``text``, each value the findings matched in ``content``.

    For texts derived from the content (claim and citation sentences, other findings' evidence)
    whose offsets are unknown or already shifted. Longest values first; idempotent (an already
    masked text has no raw value left), as ``services.checking`` redacts its reports. Several
    texts derived from one message: :func:`masked_values` once, then :func:`replace_values`.
    """
    return replace_values(text, masked_values(content, findings, categories))


def masked_values(
    content: str, findings: Sequence[Finding], categories: Collection[str]
) -> list[tuple[str, str]]:
    """The ``(value, mask)`` pairs :func:`mask_values` replaces, longest value first."""
    pairs = []
    for f in findings:
        if f.category not in categories or f.end <= f.start or f.end > len(content):
            continue
        value = content[f.start : f.end]
        evidence = f.evidence if f.evidence and f.evidence != value else f"[{f.entity}]"
        pairs.append((value, evidence))
    return sorted(pairs, key=lambda p: -len(p[0]))


def replace_values(text: str, pairs: Sequence[tuple[str, str]]) -> str:
    """``text`` with each value of :func:`masked_values`' ``pairs`` replaced, in their order."""
    for value, evidence in pairs:
        text = text.replace(value, evidence)
    return text
