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
from services.ingest import decode_event
from services.metrics import VigilMetrics
from services.rules import RuleEngine, load_packs, load_prompt_registry
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
        rule_ids = [(r.id, r.category, r.severity) for r in self.engine.rules.values()]
        self.metrics = VigilMetrics(
            self.registry, rule_ids=rule_ids, tenants=settings.metric_tenants
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

    def reject(self, dead: DeadLetter) -> None:
        """Count a dead letter; the caller delivers it (file or topic)."""
        self.metrics.observe_dead_letter(dead.reason)
