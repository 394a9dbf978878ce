"""The claim-check stage in `vigil scan`: sampling, the judge over real HTTP, metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from schemas.estimates import PopulationEstimates
from services.scan import run_scan
from services.settings import Settings
from tests.support.judge_server import JudgeServer

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "examples" / "chat-events.jsonl"


def _verdicts(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "verdicts.jsonl").read_text().splitlines()]


def _sample(out: Path, name: str, **labels: str) -> float | None:
    for fam in text_string_to_metric_families((out / "metrics.prom").read_text()):
        for s in fam.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return None


def _metric(out: Path, name: str, **labels: str) -> float:
    value = _sample(out, name, **labels)
    assert value is not None, f"no sample {name} {labels}"
    return value


def test_sampling_is_deterministic_and_always_stratum_is_complete(tmp_path: Path) -> None:
    a, b, other = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    run_scan(str(LOG), a, Settings(sample_rate=0.3))
    run_scan(str(LOG), b, Settings(sample_rate=0.3))
    run_scan(str(LOG), other, Settings(sample_rate=0.3, sample_key="another key"))
    va, vb, vo = _verdicts(a), _verdicts(b), _verdicts(other)
    assert va == vb
    ids = lambda vs, s: {v["event_id"] for v in vs if v["stratum"] == s}  # noqa: E731
    assert ids(va, "always") == ids(vo, "always")  # medical/high answers: always checked
    assert ids(va, "sampled") != ids(vo, "sampled")  # the key decides the random share
    assert {v["inclusion_probability"] for v in va if v["stratum"] == "sampled"} == {0.3}
    # the whole random share of a sampled conversation is checked together
    sampled_convs = {v["conversation_id"] for v in va if v["stratum"] == "sampled"}
    assert _metric(a, "vigil_sampled_checks_total", stratum="sampled") == len(ids(va, "sampled"))
    assert sampled_convs


def test_estimates_are_exposed_with_bounds(tmp_path: Path) -> None:
    run_scan(str(LOG), tmp_path, Settings(sample_rate=0.5))
    est = _metric(tmp_path, "vigil_estimated_rate", measure="fabricated_citation", bound="estimate")
    low = _metric(tmp_path, "vigil_estimated_rate", measure="fabricated_citation", bound="lower")
    high = _metric(tmp_path, "vigil_estimated_rate", measure="fabricated_citation", bound="upper")
    assert 0.0 <= low <= est <= high <= 1.0
    assert _metric(tmp_path, "vigil_estimated_rate_estimable", measure="fabricated_citation") == 1
    n_eff = _metric(
        tmp_path, "vigil_estimated_rate_effective_sample_size", measure="fabricated_citation"
    )
    assert n_eff > 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["estimates"]["fabricated_citation"]["population"] == 201
    # estimates.json is the published contract, and the summary carries the same numbers
    text = (tmp_path / "estimates.json").read_text()
    estimates = PopulationEstimates.model_validate_json(text)
    assert estimates.confidence == 0.95
    fabricated = estimates.measures["fabricated_citation"]
    assert fabricated.estimable and fabricated.lower == low and fabricated.upper == high
    assert summary["estimates"] == json.loads(text)["measures"]


def test_rate_zero_is_not_estimable_in_summary_metrics_and_file(tmp_path: Path) -> None:
    """Sampling rate 0: answers outside the always stratum are counted and none is checked. The
    rate is not estimable, and nothing says otherwise: no bounds are exported as if it were."""
    run_scan(str(LOG), tmp_path, Settings(sample_rate=0.0))
    for measure in ("fabricated_citation", "unsupported_claim"):
        assert _metric(tmp_path, "vigil_estimated_rate_estimable", measure=measure) == 0
        for bound in ("estimate", "lower", "upper"):
            assert _sample(tmp_path, "vigil_estimated_rate", measure=measure, bound=bound) is None
    estimates = PopulationEstimates.model_validate_json((tmp_path / "estimates.json").read_text())
    for e in estimates.measures.values():
        assert not e.estimable and e.not_estimable == "unchecked-stratum"
        assert (e.estimate, e.lower, e.upper) == (None, None, None)
        assert e.sampled_population > 0 and e.sampled_checked == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["estimates"]["unsupported_claim"]["estimable"] is False


@pytest.mark.parametrize("protocol", ["entailment", "openai"])
def test_healthy_judge_decides_claims(tmp_path: Path, protocol: str) -> None:
    with JudgeServer() as server:
        settings = Settings(
            sample_rate=0.2,
            judge_url=server.url,
            judge_protocol=protocol,
            judge_model="fake-judge" if protocol == "openai" else None,
        )
        run_scan(str(LOG), tmp_path, settings)
        assert server.requests > 0
    claims = [c for v in _verdicts(tmp_path) for c in v["claims"]]
    assert any(c["method"] == "judge" for c in claims)
    assert all(
        c["judge"] in {"entailment", "neutral", "contradiction"} for c in claims if c["judge"]
    )
    assert _metric(tmp_path, "vigil_judge_calls_total", outcome="ok") > 0


def test_judge_down_means_unverified_never_supported(tmp_path: Path) -> None:
    with JudgeServer() as server:
        server.set_mode("down")
        settings = Settings(
            sample_rate=0.2, judge_url=server.url, judge_timeout_seconds=0.5, judge_max_retries=0
        )
        run_scan(str(LOG), tmp_path, settings)
    baseline = tmp_path / "baseline"
    run_scan(str(LOG), baseline, Settings(sample_rate=0.2))
    judged = _verdicts(tmp_path)
    claims = [c for v in judged for c in v["claims"]]
    assert claims and all(c["method"] == "deterministic" for c in claims)
    assert {c["judge"] for c in claims} <= {"unverified", None}
    assert any(c["judge"] == "unverified" for c in claims)
    # with the judge down the verdicts are exactly the deterministic ones
    strip = lambda vs: [  # noqa: E731
        [(c["text"], c["grounded"]) for c in v["claims"]] for v in vs
    ]
    assert strip(judged) == strip(_verdicts(baseline))
    assert _metric(tmp_path, "vigil_judge_calls_total", outcome="ok") == 0
