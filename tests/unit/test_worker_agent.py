"""The Faust agent, driven with ``agent.test_context()`` and a memory store (no broker)."""

from __future__ import annotations

import json
from pathlib import Path
from unittest.mock import AsyncMock

from prometheus_client import CollectorRegistry

from schemas import DeadLetter, Finding, GroundingReport
from services.checking import CheckRequest
from services.settings import Settings
from services.streaming.app import create_app

PACK = Path(__file__).parent.parent / "data" / "mini-pack.yaml"


def _event(turn: int, role: str, content: str) -> bytes:
    return json.dumps(
        {
            "schema_version": 1,
            "event_id": f"e{turn}",
            "conversation_id": "c1",
            "turn_index": turn,
            "timestamp": "2026-11-02T10:00:00Z",
            "role": role,
            "content": content,
        }
    ).encode()


async def test_agent_screens_remembers_and_dead_letters(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    app = create_app(Settings(rules_dir=PACK, data_dir=tmp_path, web_port=6199), registry)
    findings_send = app.vigil_topics["findings"].send = AsyncMock()
    dlq_send = app.vigil_topics["dlq"].send = AsyncMock()
    checks_send = app.vigil_topics["checks"].send = AsyncMock()
    async with app.vigil_agent.test_context() as agent:
        await agent.put(_event(0, "user", "I am anna@example.nl"), key=b"c1")
        await agent.put(
            _event(1, "assistant", "Hi ANNA@example.nl, bob@example.com says hi"), key=b"c1"
        )
        await agent.put(b"\xff not utf-8", key=b"c1")
    sent = [Finding.model_validate_json(c.kwargs["value"]) for c in findings_send.call_args_list]
    assert [(f.event_id, f.direction) for f in sent] == [
        ("e0", "input"),
        ("e1", "echo"),
        ("e1", "leak"),
    ]
    assert all(c.kwargs["key"] == b"c1" for c in findings_send.call_args_list)
    (dead_call,) = dlq_send.call_args_list
    dead = DeadLetter.model_validate_json(dead_call.kwargs["value"])
    assert dead.reason == "bad_utf8" and dead.source.startswith("chat.events/")
    assert "anna" not in json.dumps(dict(app.vigil_memory))
    get = registry.get_sample_value
    assert get("vigil_events_total", {"role": "user", "tenant": "none"}) == 1
    assert get("vigil_invalid_events_total", {"reason": "bad_utf8"}) == 1
    labels = {"rule": "pii.email", "category": "pii", "severity": "high", "direction": "leak"}
    assert get("vigil_findings_total", labels) == 1
    # the answer has high-severity findings: always checked, handed to the claim-check agent
    (check_call,) = checks_send.call_args_list
    request = CheckRequest.model_validate_json(check_call.kwargs["value"])
    assert request.event.event_id == "e1" and request.decision.stratum == "always"
    assert get("vigil_answers_by_stratum_total", {"stratum": "always"}) == 1

    verdicts_send = app.vigil_topics["verdicts"].send = AsyncMock()
    findings_send.reset_mock()
    async with app.vigil_check_agent.test_context() as checker:
        await checker.put(check_call.kwargs["value"], key=b"c1")
        await checker.put(b"not a check request", key=b"c1")
    (verdict_call,) = verdicts_send.call_args_list
    report = GroundingReport.model_validate_json(verdict_call.kwargs["value"])
    assert report.event_id == "e1" and report.inclusion_probability == 1.0
    assert "bob@example.com" not in verdict_call.kwargs["value"].decode()
    assert get("vigil_sampled_checks_total", {"stratum": "always"}) == 1
    assert DeadLetter.model_validate_json(dlq_send.call_args_list[-1].kwargs["value"]).reason == (
        "processing_error"
    )
