"""``vigil_flagged_messages_total``: messages with findings, what the leak-spike rule counts."""

from __future__ import annotations

import json

from prometheus_client import CollectorRegistry

from schemas.events import ChatEvent
from services.pipeline import Pipeline
from services.screening import ConversationMemory
from services.settings import Settings
from tests.support.chat_events import event


def test_one_answer_leaking_three_values_is_one_flagged_message() -> None:
    registry = CollectorRegistry()
    pipe = Pipeline(Settings(), registry)
    memory: ConversationMemory | None = None
    user = ChatEvent.model_validate_json(
        json.dumps(event("e0", "c1", 0, "user", "mijn mail is anna@example.nl"))
    )
    memory = pipe.screen(user, memory).memory
    answer = ChatEvent.model_validate_json(
        json.dumps(
            event(
                "e1",
                "c1",
                1,
                "assistant",
                "Ook: piet@example.com, kees@example.org, joop@example.net, anna@example.nl.",
            )
        )
    )
    out = pipe.screen(answer, memory)
    leaks = [f for f in out.findings if f.direction == "leak"]
    assert len(leaks) == 3

    def get(name: str, **labels: str) -> float:
        value = registry.get_sample_value(name, labels)
        assert value is not None, (name, labels)
        return value

    assert get("vigil_flagged_messages_total", category="pii", direction="leak") == 1
    assert get("vigil_flagged_messages_total", category="pii", direction="echo") == 1
    assert get("vigil_flagged_messages_total", category="pii", direction="input") == 1
    # Every (category, direction) exists at zero before its first message.
    assert get("vigil_flagged_messages_total", category="secret", direction="leak") == 0
    findings = sum(
        get(
            "vigil_findings_total",
            rule=f.rule_id,
            category="pii",
            severity=f.severity,
            direction="leak",
        )
        for f in {f.rule_id: f for f in leaks}.values()
    )
    assert findings == 3
