"""Run every rule's own ``match`` / ``no_match`` examples (``vigil rules test``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from services.rules.engine import RuleEngine
from services.rules.pack import Rule, RulePack
from services.rules.prompts import PromptRegistry

__all__ = ["EXAMPLE_PHONE_REGIONS", "ExampleResult", "run_examples"]

#: The phone regions examples run with: the four with rules of their own and a wider set left to
#: phonenumbers (``pii.phone_national``), whose ``no_match`` examples must stay out in all of
#: them. Also the wider set ``benchmarks/detection_quality.py`` reports recall with.
EXAMPLE_PHONE_REGIONS = (
    *("NL", "VN", "GB", "US"),
    *("DE", "FR", "BE", "CH", "AT", "ES", "IT", "IE", "SE", "PL", "PT", "AU", "ZA"),
)


@dataclass(frozen=True, slots=True)
class ExampleResult:
    pack: str
    rule_id: str
    kind: str  # "match" | "no_match"
    text: str
    ok: bool
    detail: str


def _engine_for(pack: RulePack, rule: Rule, prompts: PromptRegistry) -> RuleEngine:
    """The rule alone, with :data:`EXAMPLE_PHONE_REGIONS` configured."""
    alone = pack.model_copy(update={"rules": [rule]})
    return RuleEngine([alone], prompts, phone_regions=EXAMPLE_PHONE_REGIONS)


def run_examples(packs: Sequence[RulePack], prompts: PromptRegistry) -> Iterator[ExampleResult]:
    """Yield one result per example. Each rule is run alone, so an example tests its own rule."""
    for pack in packs:
        for rule in pack.rules:
            engine = _engine_for(pack, rule, prompts)
            for ex in rule.examples.match:
                role = ex.role or rule.roles[0]
                lang = ex.language or (None if "*" in rule.languages else rule.languages[0])
                hits = [m for m in engine.scan(ex.text, role, lang) if m.rule.id == rule.id]
                values = [m.value for m in hits]
                if not hits:
                    ok, detail = False, "expected a match, found none"
                elif ex.value is not None and ex.value not in values:
                    ok, detail = False, f"expected value {ex.value!r}, matched {values!r}"
                else:
                    ok, detail = True, f"matched {values!r}"
                yield ExampleResult(pack.pack, rule.id, "match", ex.text, ok, detail)
            for nex in rule.examples.no_match:
                role = nex.role or rule.roles[0]
                lang = nex.language or (None if "*" in rule.languages else rule.languages[0])
                hits = [m for m in engine.scan(nex.text, role, lang) if m.rule.id == rule.id]
                ok = not hits
                detail = "no match" if ok else f"unexpected match {[m.value for m in hits]!r}"
                yield ExampleResult(pack.pack, rule.id, "no_match", nex.text, ok, detail)
