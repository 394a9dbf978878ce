"""The screening pipeline: raw bytes → event or dead letter → findings, with metrics.

Built once from :class:`Settings`; ``vigil scan`` and the Faust worker both call
:meth:`Pipeline.process`, so the two paths cannot drift apart.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from schemas.events import ChatEvent
from schemas.outputs import DeadLetter, Finding
from schemas.verdicts import JudgeLabel, MedicalContext
from services.checking import GROUNDING_RULES, Checked, ClaimChecker
from services.ingest import decode_event
from services.metrics import VigilMetrics
from services.rules import RuleEngine, load_packs, load_prompt_registry
from services.sampling import SampleDecision
from services.screening import ConversationMemory, Screener
from services.settings import Settings

__all__ = ["Pipeline", "Processed"]


@dataclass(frozen=True, slots=True)
class Processed:
    """The outcome for one input message: either an event with its findings, or a dead letter."""

    event: ChatEvent | None
    findings: list[Finding]
    dead_letter: DeadLetter | None
    memory: ConversationMemory | None
    abstained: bool | None = None


class Pipeline:
    def __init__(self, settings: Settings, registry: CollectorRegistry | None = None) -> None:
        self.settings = settings
        packs = load_packs([settings.rules_dir])
        prompts = load_prompt_registry(settings.prompts_file)
        self.engine = RuleEngine(packs, prompts)
        self.screener = Screener(self.engine, settings.key_bytes, settings.memory_limits)
        self.registry = registry if registry is not None else CollectorRegistry()
        self.checker = ClaimChecker(settings)
        rule_ids = [(r.id, r.category, r.severity) for r in self.engine.rules.values()]
        rule_ids += [(rid, i.category, i.severity) for rid, i in GROUNDING_RULES.items()]
        self.metrics = VigilMetrics(
            self.registry,
            rule_ids=rule_ids,
            tenants=settings.metric_tenants,
            estimate_max_conversations=settings.estimate_max_conversations,
        )

    def decode(self, raw: bytes, source: str) -> ChatEvent | DeadLetter:
        return decode_event(
            raw,
            source=source,
            max_content_bytes=self.settings.max_content_bytes,
            keep_bytes=self.settings.dead_letter_keep_bytes,
        )

    def screen(self, event: ChatEvent, memory: ConversationMemory | None) -> Processed:
        t0 = time.perf_counter()
        out = self.screener(event, memory)
        self.metrics.observe_event(event, out.findings, out.abstained, time.perf_counter() - t0)
        return Processed(event, out.findings, None, out.memory, out.abstained)

    def decide(self, event: ChatEvent, findings: list[Finding]) -> SampleDecision | None:
        """Sampling decision for an assistant answer (counted into the population); else None."""
        decision = self.checker.decide(event, findings)
        if decision is not None:
            self.metrics.observe_decision(decision)
        return decision

    def check(
        self,
        event: ChatEvent,
        decision: SampleDecision,
        judge_results: dict[str, JudgeLabel] | None = None,
        screened: list[Finding] | None = None,
        context: MedicalContext | None = None,
    ) -> Checked:
        """Run the claim checks on a sampled answer and count them. ``context``: drugs and
        population of the user's preceding turn (``checker.medical_context``), when kept."""
        t0 = time.perf_counter()
        checked = self.checker.check(event, decision, judge_results, screened, context)
        self.metrics.observe_report(checked.report, time.perf_counter() - t0)
        for finding in checked.findings:
            self.metrics.observe_finding(finding)
        return checked

    def reject(self, dead: DeadLetter) -> None:
        """Count a dead letter; the caller delivers it (file or topic)."""
        self.metrics.observe_dead_letter(dead.reason)
