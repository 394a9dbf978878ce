"""The Alert contract and the detector settings: validation at the edges."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from schemas.alerts import Alert, DetectorSettings

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def alert(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "alert_id": "a" * 32,
        "category": "pii",
        "tenant": "acme",
        "direction": "leak",
        "state": "firing",
        "window_start": T0,
        "window_end": T0 + timedelta(seconds=60),
        "observed": 30,
        "expected": 10.0,
        "baseline_windows": 60,
        "test": "poisson",
        "p_value": 1e-6,
        "adjusted_threshold": 1e-4,
        "floor": 3,
        "started_at": T0,
        "settings": DetectorSettings(),
    }
    base.update(over)
    return base


def test_a_valid_alert_round_trips_through_json() -> None:
    a = Alert(**alert())
    assert Alert.model_validate_json(a.model_dump_json()) == a


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"state": "resolved"}, "resolved_at"),
        ({"resolved_at": T0 + timedelta(seconds=60)}, "resolved_at"),
        ({"test": "binomial"}, "messages"),
        ({"messages": 1000}, "messages"),
        ({"window_end": T0}, "window_end"),
        ({"state": "resolved", "resolved_at": T0 - timedelta(seconds=1)}, "before started_at"),
        ({"p_value": 1.5}, "less than or equal"),
        ({"category": "weather"}, "category"),
        ({"direction": "sideways"}, "direction"),
        ({"surprise": 1}, "Extra inputs"),
        ({"window_start": datetime(2024, 5, 1, 12, 0)}, "timezone"),
    ],
)
def test_invalid_alerts_are_refused(over: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Alert(**alert(**over))


def test_alert_is_frozen() -> None:
    a = Alert(**alert())
    with pytest.raises(ValidationError):
        a.observed = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    "over",
    [
        {"alpha": 0},
        {"baseline_half_life": 0.5},
        {"guard_windows": -1},
        {"cusum_ratio": 1.0},
        {"cusum_threshold": 0},
        {"dispersion_half_life": 0},
        {"baseline_windows": 60},  # replaced by baseline_half_life: refused, not ignored
    ],
)
def test_detector_settings_refuse_bad_values(over: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        DetectorSettings(**over)


def test_an_alert_carries_the_evidence_of_both_tests() -> None:
    a = Alert(
        **alert(
            fired_by="cusum",
            dispersion=0.01,
            variance_factor=1.2,
            cusum={
                "statistic": 10.5,
                "threshold": 10.0,
                "ratio": 3.0,
                "windows": 6,
                "observed": 17,
                "expected": 5.5,
            },
        )
    )
    assert a.cusum is not None and a.cusum.windows == 6
    with pytest.raises(ValidationError):
        Alert(**alert(fired_by="magic"))
    with pytest.raises(ValidationError):
        Alert(**alert(variance_factor=0.5))
