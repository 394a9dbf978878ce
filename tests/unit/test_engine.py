"""The rule engine: value groups, boundaries, context words, roles and languages, overlap
resolution, prompt-leak sources, and linear time on hostile input. Small inline packs, no broker."""

from __future__ import annotations

import time
from typing import Any

from services.rules import PromptRegistry, RuleEngine, RulePack
from services.rules.prompts import SystemPrompt

EXAMPLES = {"match": ["x"], "no_match": ["y"]}


def _rule(rule_id: str, regex: str | list[str], **kw: Any) -> dict[str, Any]:
    regexes = [regex] if isinstance(regex, str) else regex
    group = kw.pop("group", 0)
    score = kw.pop("score", 0.6)
    return {
        "id": rule_id,
        "category": kw.pop("category", "pii"),
        "entity": kw.pop("entity", "THING"),
        "severity": "low",
        "description": "test",
        "patterns": [
            {"name": f"p{i}", "regex": r, "group": group, "score": score}
            for i, r in enumerate(regexes)
        ],
        "examples": EXAMPLES,
        **kw,
    }


def _engine(*rules: dict[str, Any], prompts: PromptRegistry | None = None) -> RuleEngine:
    pack = RulePack.model_validate(
        {"pack": "t", "version": 1, "description": "test", "rules": list(rules)}
    )
    return RuleEngine([pack], prompts)


def _found(engine: RuleEngine, text: str, role: str = "user", lang: str | None = None) -> list:
    return [(m.rule.id, m.value) for m in engine.scan(text, role, lang)]  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- value groups


def test_named_value_group_is_the_span() -> None:
    e = _engine(_rule("secret.pw", r"password=(?P<value>\S+)", group="value", category="secret"))
    (m,) = e.scan("set password=hunter22 now", "user")
    assert (m.value, m.start, m.end) == ("hunter22", 13, 21)


def test_numbered_value_group() -> None:
    e = _engine(_rule("pii.n", r"#(\d+)", group=1))
    assert _found(e, "ticket #123") == [("pii.n", "123")]


def test_offsets_are_code_points_after_non_ascii_text() -> None:
    e = _engine(_rule("pii.n", r"(?:^|\D)(?P<v>\d{4})(?:$|\D)", group="v"))
    text = "Số điện thoại: 1234 và 5678 ✓"
    ms = e.scan(text, "user")
    assert [(text[m.start : m.end], m.value) for m in ms] == [("1234", "1234"), ("5678", "5678")]


def test_a_consumed_boundary_still_starts_the_next_value() -> None:
    """RE2 has no lookaround, so patterns consume a boundary character after the value; the
    engine resumes after the value, so "1.1.1.1,8.8.8.8" yields both addresses."""
    boundary = r"(?:^|[^\w.])(?P<v>\d{1,3}(?:\.\d{1,3}){3})(?:$|[^\w.])"
    e = _engine(_rule("pii.ip", boundary, group="v"))
    assert [v for _, v in _found(e, "1.1.1.1,8.8.8.8 9.9.9.9")] == [
        "1.1.1.1",
        "8.8.8.8",
        "9.9.9.9",
    ]


def test_validator_rejects_checksum_failures() -> None:
    e = _engine(_rule("pii.card", r"\b\d{16}\b", validator="luhn", entity="CREDIT_CARD"))
    assert _found(e, "4111111111111111 and 4111111111111112") == [("pii.card", "4111111111111111")]


# ---------------------------------------------------------------------------------- context


def _bsn_rule(**kw: Any) -> dict[str, Any]:
    return _rule(
        "pii.bsn",
        r"\b\d{9}\b",
        validator="nl_bsn",
        context=["bsn", "burgerservicenummer"],
        context_window=20,
        **kw,
    )


def test_context_required_drops_a_match_without_a_context_word() -> None:
    e = _engine(_bsn_rule(context_required=True))
    assert _found(e, "Bestelling 123456782 is verzonden") == []
    assert _found(e, "Mijn BSN: 123456782") == [("pii.bsn", "123456782")]


def test_context_must_be_within_the_window() -> None:
    e = _engine(_bsn_rule(context_required=True))
    far = "BSN" + " bla" * 10 + " 123456782"
    assert _found(e, far) == []


def test_context_words_match_whole_words_only() -> None:
    e = _engine(_bsn_rule(context_required=True))
    assert _found(e, "xbsnx 123456782") == []
    assert _found(e, "bsn-nummer 123456782") == [("pii.bsn", "123456782")]
    ip = _engine(_rule("pii.ip", r"\b\d{1,3}(?:\.\d{1,3}){3}\b", context=["ip"]))
    (m,) = ip.scan("zip 10.1.2.3", "user")
    assert m.score == 0.6 and "context" not in m.explanation


def test_context_boosts_the_score_and_is_explained() -> None:
    e = _engine(_bsn_rule(context_boost=0.3))
    (bare,) = e.scan("nummer 123456782", "user")
    (near,) = e.scan("BSN 123456782", "user")
    assert bare.score == 0.6 and near.score == 0.9
    assert "context word 'bsn'" in near.explanation and "validator nl_bsn" in near.explanation


# ---------------------------------------------------------------------- roles and languages


def test_roles_and_languages_filter_rules() -> None:
    e = _engine(
        _rule("medical.en", r"\bmg\b", roles=["assistant"], languages=["en"], category="medical"),
    )
    assert _found(e, "500 mg", "assistant", "en") == [("medical.en", "mg")]
    assert _found(e, "500 mg", "user", "en") == []
    assert _found(e, "500 mg", "assistant", "nl") == []
    assert _found(e, "500 mg", "assistant", None) == [("medical.en", "mg")]


# ----------------------------------------------------------------------- overlap resolution


def test_overlaps_within_a_category_keep_the_best_score() -> None:
    e = _engine(
        _rule("pii.iban", r"NL\d\d(?: ?[A-Z0-9]{4}){3} ?\d\d", score=0.9, entity="IBAN_CODE"),
        _rule("pii.phone", r"0417 ?1643 ?00", score=0.6, entity="PHONE_NUMBER"),
    )
    assert _found(e, "IBAN NL91 ABNA 0417 1643 00") == [("pii.iban", "NL91 ABNA 0417 1643 00")]


def test_equal_scores_keep_the_longest_then_the_first() -> None:
    e = _engine(_rule("pii.short", r"\d{4}"), _rule("pii.long", r"\d{4}-\d{4}"))
    assert _found(e, "1234-5678") == [("pii.long", "1234-5678")]
    e = _engine(_rule("pii.a", r"ab"), _rule("pii.b", r"bc"))
    assert _found(e, "abc") == [("pii.a", "ab")]


def test_overlaps_across_categories_are_all_kept() -> None:
    e = _engine(
        _rule("pii.n", r"\d{3}", category="pii"),
        _rule("medical.dose", r"\d{3} mg", category="medical"),
    )
    assert _found(e, "500 mg") == [("pii.n", "500"), ("medical.dose", "500 mg")]


def test_disjoint_matches_are_all_kept_in_text_order() -> None:
    e = _engine(_rule("pii.n", r"\d+", score=0.5), _rule("pii.w", r"[a-z]+", score=0.9))
    assert [v for _, v in _found(e, "ab 12 cd 34")] == ["ab", "12", "cd", "34"]


# ---------------------------------------------------------------------- prompt-leak sources

PROMPTS = PromptRegistry(
    canaries=["VGL-CANARY-7F3A91C2"],
    system_prompts=[
        SystemPrompt(
            id="p1",
            text="You are MedAssist. Answer only from the retrieved leaflets and cite each one.",
        )
    ],
    min_overlap_words=5,
)


def test_canaries_are_matched_literally() -> None:
    e = _engine(
        {
            "id": "prompt_leak.canary",
            "category": "prompt_leak",
            "entity": "PROMPT_CANARY",
            "severity": "critical",
            "description": "canary",
            "source": "canaries",
            "examples": EXAMPLES,
        },
        prompts=PROMPTS,
    )
    assert _found(e, "ref VGL-CANARY-7F3A91C2.", "assistant") == [
        ("prompt_leak.canary", "VGL-CANARY-7F3A91C2")
    ]
    assert _found(e, "ref VGL-CANARY-7F3A91C", "assistant") == []


def test_system_prompt_overlap_reports_the_shared_run() -> None:
    e = _engine(
        {
            "id": "prompt_leak.system_prompt",
            "category": "prompt_leak",
            "entity": "SYSTEM_PROMPT",
            "severity": "high",
            "description": "overlap",
            "source": "system_prompts",
            "roles": ["assistant"],
            "examples": EXAMPLES,
        },
        prompts=PROMPTS,
    )
    (m,) = e.scan("I must answer ONLY from the retrieved leaflets, sorry.", "assistant")
    assert m.value == "answer ONLY from the retrieved leaflets"
    assert "6 consecutive words of system prompt 'p1'" in m.explanation
    assert e.scan("answer only from the", "assistant") == []


# -------------------------------------------------------------------------- hostile input


def test_hostile_input_stays_fast() -> None:
    e = _engine(
        _rule("pii.ip", r"(?:^|[^\w.])(?P<v>\d{1,3}(?:\.\d{1,3}){3})(?:$|[^\w.])", group="v"),
        _rule("pii.card", r"\b\d{13,19}\b", validator="luhn"),
        _rule("pii.mail", r"(?i)[a-z0-9._%+-]{1,64}@[a-z0-9.-]{1,253}\.[a-z]{2,24}"),
    )
    texts = ["1." * 32_000, "a" * 64_000 + "@", "1.1.1.1 " * 8_000, "4111111111111111 " * 3_800]
    start = time.perf_counter()
    counts = [len(e.scan(t, "user")) for t in texts]
    assert counts == [0, 0, 8_000, 3_800]
    assert time.perf_counter() - start < 5.0


def test_empty_text_and_no_rules() -> None:
    e = _engine(_rule("pii.n", r"\d"))
    assert e.scan("", "user") == []
    assert RuleEngine([], PromptRegistry()).scan("anything 123", "user") == []


def test_lone_surrogates_do_not_crash_and_offsets_stay_right() -> None:
    e = _engine(_rule("pii.n", r"(?:^|\D)(?P<v>\d{4})(?:$|\D)", group="v"))
    text = "\udcff 1234 \ud800x 5678"
    assert [text[m.start : m.end] for m in e.scan(text, "user")] == ["1234", "5678"]
