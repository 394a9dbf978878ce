"""Triage policy: priorities, loading errors, caps with overflow sampling (overflow counted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.review.caps import CapCounter, admit, counter_key
from services.review.evidence import make_flag
from services.review.policy import (
    DEFAULT_POLICY_PATH,
    Caps,
    PolicyError,
    TriagePolicy,
    band,
    load_policy,
)
from tests.unit.test_review_support import POLICY, at, event, finding, leak_flag, verdict

KEY = b"test-key"


# --- priorities ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "value", "rule_id", "direction", "role", "code", "priority"),
    [
        (
            "Take 9 g daily.",
            "Take 9 g daily.",
            "grounding.ungrounded_dose",
            None,
            "assistant",
            "ungrounded_dose",
            100,
        ),
        ("key sk-abc", "sk-abc", "secret.openai_key", "echo", "assistant", "secret_in_answer", 95),
        ("canary XYZ", "XYZ", "prompt_leak.canary", "leak", "assistant", "prompt_leak", 95),
        ("mail bob@x.nl", "bob@x.nl", "pii.email", "leak", "assistant", "pii_leak", 90),
        (
            "see [doc:9]",
            "doc:9",
            "grounding.fabricated_citation",
            None,
            "assistant",
            "fabricated_citation",
            75,
        ),
        ("key sk-abc", "sk-abc", "secret.openai_key", None, "user", "secret_in_input", 60),
        ("ip 10.0.0.1", "10.0.0.1", "pii.ipv4", "leak", "assistant", "pii_leak_low", 45),
        ("iban NL91ABNA", "NL91ABNA", "pii.iban", "echo", "assistant", "sensitive_pii_echo", 30),
    ],
)
def test_findings_get_the_reason_of_their_best_rule(
    content: str,
    value: str,
    rule_id: str,
    direction: str | None,
    role: str,
    code: str,
    priority: int,
) -> None:
    ev = event(content, role=role)
    (reason,) = POLICY.reasons([finding(ev, value, rule_id, direction=direction)])
    assert (reason.code, reason.priority, reason.source, reason.rule_id) == (
        code,
        priority,
        "finding",
        rule_id,
    )


@pytest.mark.parametrize(
    ("content", "value", "rule_id", "direction", "role"),
    [
        ("mail bob@x.nl", "bob@x.nl", "pii.email", "input", "user"),  # users give their own data
        ("mail bob@x.nl", "bob@x.nl", "pii.email", "echo", "assistant"),  # medium echo: fine
        ("Take 500 mg.", "Take 500 mg.", "medical.dose_en", None, "assistant"),  # grounded dose
        ("I cannot say.", "I cannot say.", "abstention.en", None, "assistant"),
    ],
)
def test_findings_that_do_not_go_to_review(
    content: str, value: str, rule_id: str, direction: str | None, role: str
) -> None:
    ev = event(content, role=role)
    assert POLICY.reasons([finding(ev, value, rule_id, direction=direction)]) == []


def test_reasons_are_sorted_by_priority_and_verdicts_count() -> None:
    ev = event("mail bob@x.nl; Take 9 g daily.")
    reasons = POLICY.reasons(
        [finding(ev, "bob@x.nl"), finding(ev, "Take 9 g daily.", "grounding.ungrounded_dose")],
        verdict(ev, status="contradicted", faithfulness=0.2),
    )
    assert [(r.code, r.priority) for r in reasons] == [
        ("ungrounded_dose", 100),
        ("pii_leak", 90),
        ("contradicted_fact", 85),  # the best verdict rule, not also low_faithfulness
    ]
    assert reasons[2].source == "verdict" and reasons[2].finding_id is None


def test_verdict_rules_on_both_sides() -> None:
    ev = event("x")
    assert POLICY.reasons([], verdict(ev, status="supported", faithfulness=0.5)) == []
    (low,) = POLICY.reasons([], verdict(ev, status="supported", faithfulness=0.49))
    assert low.code == "low_faithfulness"
    (conflict,) = POLICY.reasons([], verdict(ev, status="conflict"))
    assert conflict.code == "conflicting_facts"


def test_critical_items_come_first_in_bands() -> None:
    assert [band(p) for p in (100, 90, 89, 70, 69, 40, 39, 0)] == [
        "critical",
        "critical",
        "high",
        "high",
        "medium",
        "medium",
        "low",
        "low",
    ]


def test_ties_go_to_the_first_rule_in_the_file() -> None:
    policy = TriagePolicy.model_validate(
        {
            "version": 1,
            "findings": [
                {"code": "first", "priority": 50, "description": "d", "when": {"category": "pii"}},
                {
                    "code": "second",
                    "priority": 50,
                    "description": "d",
                    "when": {"rule_id": "pii.*"},
                },
            ],
        }
    )
    ev = event("mail bob@x.nl")
    assert [r.code for r in policy.reasons([finding(ev, "bob@x.nl")])] == ["first"]


# --- loading ------------------------------------------------------------------------------------


def test_default_policy_loads_and_its_examples_hold() -> None:
    policy = load_policy(DEFAULT_POLICY_PATH)
    assert {r.code for r in policy.findings} >= {"ungrounded_dose", "pii_leak", "secret_in_answer"}
    assert max(policy.findings, key=lambda r: r.priority).code == "ungrounded_dose"


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (
            "version: 1\nfindings:\n"
            "  - {code: a, priority: 5, description: d, when: {severity: huge}}\n",
            "findings[0] (code a).when.severity",
        ),
        (
            "version: 1\nfindings:\n"
            "  - {code: a, priority: 500, description: d, when: {category: pii}}\n",
            "findings[0] (code a).priority",
        ),
        (
            "version: 1\nfindings:\n  - {code: a, priority: 5, description: d, when: {}}\n",
            "findings[0] (code a).when",
        ),
        ("version: 1\ncaps: {overflow_sample_rate: 2}\n", "caps.overflow_sample_rate"),
        ("version: 1\nqueue: {leese_seconds: 5}\n", "queue.leese_seconds"),
        ("version: 2\n", "version"),
        (
            "version: 1\nfindings:\n"
            "  - {code: a, priority: 5, description: d, when: {category: pii}}\n"
            "verdicts:\n"
            "  - {code: a, priority: 5, description: d, when: {fact_status: conflict}}\n",
            "duplicate reason code 'a'",
        ),
        (
            "version: 1\nfindings:\n  - code: a\n    priority: 5\n    description: d\n"
            "    when: {category: pii}\n    examples: {match: [{category: secret}]}\n",
            "examples.match[0] does not match",
        ),
    ],
)
def test_broken_policies_name_file_and_field(tmp_path: Path, body: str, where: str) -> None:
    path = tmp_path / "triage.yaml"
    path.write_text(body)
    with pytest.raises(PolicyError) as err:
        load_policy(path)
    assert str(path) in str(err.value) and where in str(err.value)


def test_unreadable_and_non_mapping_policies(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read"):
        load_policy(tmp_path / "missing.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n")
    with pytest.raises(PolicyError, match="mapping"):
        load_policy(tmp_path / "list.yaml")
    (tmp_path / "bad.yaml").write_text("version: [1\n")
    with pytest.raises(PolicyError, match="not valid YAML"):
        load_policy(tmp_path / "bad.yaml")


# --- caps ---------------------------------------------------------------------------------------


def test_cap_limits_per_tenant_and_partition_share() -> None:
    caps = Caps(per_tenant_per_hour=10, tenants={"big": 100, "free": None, "": 3})
    assert caps.limit("t1") == 10 and caps.limit("t1", partitions=4) == 3  # rounded up
    assert caps.limit("big", 4) == 25 and caps.limit("free") is None and caps.limit(None) == 3
    assert counter_key("t1", 2) == "2|t1" and counter_key(None) == "|-"


def _run(caps: Caps, n: int) -> tuple[CapCounter, list[str]]:
    policy = POLICY.model_copy(update={"caps": caps})
    counter = None
    outcomes: list[str] = []
    for i in range(n):
        counter, decision = admit(counter, leak_flag(f"c{i}", policy=policy), caps, key=KEY)
        outcomes.append(decision.outcome)
    assert counter is not None
    return counter, outcomes


def test_under_the_cap_everything_is_admitted_then_overflow_is_sampled_and_counted() -> None:
    caps = Caps(per_tenant_per_hour=5, overflow_sample_rate=0.25, exempt_priority=None)
    counter, outcomes = _run(caps, 400)
    assert outcomes[:5] == ["admitted"] * 5
    sampled, overflowed = outcomes.count("sampled"), outcomes.count("overflowed")
    assert sampled + overflowed == 395
    assert 0.17 < sampled / 395 < 0.33  # keyed hash, rate 0.25
    assert (counter.admitted, counter.sampled, counter.overflowed) == (5, sampled, overflowed)
    assert counter.overflowed_flags == overflowed
    assert counter.overflowed_reasons == {"pii_leak": overflowed}  # never silently dropped


def test_overflow_sampling_is_deterministic_and_repeats_count_once() -> None:
    caps = Caps(per_tenant_per_hour=0, overflow_sample_rate=0.5, exempt_priority=None)
    first = [admit(None, leak_flag(f"c{i}"), caps, key=KEY)[1].outcome for i in range(50)]
    again = [admit(None, leak_flag(f"c{i}"), caps, key=KEY)[1].outcome for i in range(50)]
    other_key = [admit(None, leak_flag(f"c{i}"), caps, key=b"k2")[1].outcome for i in range(50)]
    assert first == again and first != other_key
    cid = f"c{first.index('overflowed')}"
    counter, d1 = admit(None, leak_flag(cid, "e1"), caps, key=KEY)
    counter, d2 = admit(counter, leak_flag(cid, "e2"), caps, key=KEY)
    assert (d1.repeat, d2.repeat) == (False, True)
    assert (counter.overflowed, counter.overflowed_flags) == (1, 2)
    assert d1.inclusion_probability == 0.5


def test_exempt_priority_always_enters_and_uses_up_the_cap() -> None:
    caps = Caps(per_tenant_per_hour=1, overflow_sample_rate=0.0, exempt_priority=90)
    counter, d = admit(None, leak_flag("c1"), caps, key=KEY)  # pii_leak = 90: exempt
    assert d.outcome == "exempt" and counter.exempt == 1
    low = POLICY.model_copy(update={"caps": caps})
    ev = event("ip 10.0.0.1", cid="c2")
    flag = make_flag(ev, [finding(ev, "10.0.0.1", "pii.ipv4")], None, low, at=at())
    assert flag is not None and flag.priority == 45
    counter, d = admit(counter, flag, caps, key=KEY)
    assert d.outcome == "overflowed" and d.band == "medium"


def test_counters_reset_every_hour_and_are_per_tenant() -> None:
    caps = Caps(per_tenant_per_hour=1, overflow_sample_rate=0.0, exempt_priority=None)
    counter, d = admit(None, leak_flag("c1", minutes=0), caps, key=KEY)
    counter, d2 = admit(counter, leak_flag("c2", minutes=30), caps, key=KEY)
    assert (d.outcome, d2.outcome) == ("admitted", "overflowed")
    counter, d3 = admit(counter, leak_flag("c3", minutes=61), caps, key=KEY)
    assert d3.outcome == "admitted" and counter.admitted == 1 and counter.overflowed == 0
    _, d4 = admit(counter, leak_flag("c4", minutes=62, tenant="t2"), caps, key=KEY)
    assert d4.outcome == "admitted"
