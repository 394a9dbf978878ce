"""The wire contract: strictness of ChatEvent and drift of the generated JSON Schema files."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from schemas import ChatEvent, DeadLetter, Finding
from schemas.export import JSON_DIR, MODELS, render

BASE = {
    "schema_version": 1,
    "event_id": "evt-1",
    "conversation_id": "conv-1",
    "turn_index": 0,
    "timestamp": "2026-11-02T10:00:00+01:00",
    "role": "user",
    "content": "Hallo",
}


def _errors(**changes: object) -> str:
    data = {**BASE, **changes}
    with pytest.raises(ValidationError) as info:
        ChatEvent.model_validate_json(json.dumps(data))
    return str(info.value)


def test_valid_event_round_trips() -> None:
    ev = ChatEvent.model_validate_json(json.dumps({**BASE, "language": "nl-BE", "confidence": 0.5}))
    assert ev.base_language == "nl"
    assert ChatEvent.model_validate_json(ev.model_dump_json()) == ev


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"role": "bot"}, "role"),
        ({"event_id": ""}, "event_id"),
        ({"conversation_id": " padded "}, "conversation_id"),
        ({"turn_index": -1}, "turn_index"),
        ({"turn_index": "3"}, "turn_index"),
        ({"timestamp": "2026-11-02T10:00:00"}, "timestamp"),
        ({"schema_version": 2}, "schema_version"),
        ({"confidence": 1.5}, "confidence"),
        ({"language": "not a tag"}, "language"),
        ({"content": "x" * (64 * 1024 + 1)}, "content"),
        ({"retrieval": [{"text": "no id"}]}, "retrieval.0.doc_id"),
        ({"claims": [{"entity": "a", "attribute": "b"}]}, "claims.0.value"),
    ],
)
def test_invalid_events_name_the_field(changes: dict[str, object], field: str) -> None:
    assert field in _errors(**changes)


def test_content_limit_is_configurable() -> None:
    data = json.dumps({**BASE, "content": "é" * 600})  # 1200 bytes
    ChatEvent.model_validate_json(data, context={"max_content_bytes": 1200})
    with pytest.raises(ValidationError, match="1200 bytes, over the limit of 1199"):
        ChatEvent.model_validate_json(data, context={"max_content_bytes": 1199})


def test_unknown_fields_are_ignored_for_forward_compatibility() -> None:
    ev = ChatEvent.model_validate_json(json.dumps({**BASE, "future_field": 1}))
    assert not hasattr(ev, "future_field")


def test_outputs_forbid_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        DeadLetter.model_validate({"reason": "bad_json", "surprise": 1})
    assert "evidence" in Finding.model_fields


@pytest.mark.parametrize("name", sorted(MODELS))
def test_json_schema_files_match_models(name: str) -> None:
    path = JSON_DIR / f"{name}.schema.json"
    assert path.exists(), f"{path} missing: run `vigil schemas export`"
    assert path.read_text(encoding="utf-8") == render(MODELS[name]), (
        f"{path} drifted from the model: run `vigil schemas export`"
    )


def test_metric_tenants_setting_takes_a_list_or_commas(monkeypatch: pytest.MonkeyPatch) -> None:
    from services.settings import Settings

    monkeypatch.setenv("VIGIL_METRIC_TENANTS", "rivierland, saigon-clinic")
    assert Settings().metric_tenants == ["rivierland", "saigon-clinic"]
    monkeypatch.setenv("VIGIL_METRIC_TENANTS", '["a", "b"]')
    assert Settings().metric_tenants == ["a", "b"]
