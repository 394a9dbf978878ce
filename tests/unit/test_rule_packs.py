"""The default rule packs: every rule's own examples, coverage of SPEC §4, and load-time errors.

``test_example`` is the same check as ``vigil rules test``: each rule runs alone against its
``match`` and ``no_match`` examples (one test id per example, e.g. ``pii.email/match/0``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from services.rules import PackError, RuleEngine, load_pack, load_packs, load_prompt_registry
from services.rules.examples import ExampleResult, run_examples

REPO = Path(__file__).resolve().parents[2]
PACK_DIR = REPO / "rules" / "packs"
PACKS = load_packs([PACK_DIR])
REGISTRY = load_prompt_registry(REPO / "rules" / "prompts.yaml")


def _numbered(results: list[ExampleResult]) -> list[tuple[str, ExampleResult]]:
    seen: Counter[tuple[str, str]] = Counter()
    out = []
    for r in results:
        key = (r.rule_id, r.kind)
        out.append((f"{r.rule_id}/{r.kind}/{seen[key]}", r))
        seen[key] += 1
    return out


EXAMPLES = _numbered(list(run_examples(PACKS, REGISTRY)))


@pytest.mark.parametrize("result", [r for _, r in EXAMPLES], ids=[i for i, _ in EXAMPLES])
def test_example(result: ExampleResult) -> None:
    assert result.ok, f"{result.rule_id} {result.kind} {result.text!r}: {result.detail}"


def test_the_five_default_packs_load() -> None:
    assert sorted(p.pack for p in PACKS) == [
        "abstention",
        "medical",
        "pii",
        "prompt_leak",
        "secrets",
    ]
    assert {p.name for p in PACK_DIR.glob("*.yaml")} == {
        "abstention.yaml",
        "medical.yaml",
        "pii.yaml",
        "prompt_leak.yaml",
        "secrets.yaml",
    }


def test_packs_cover_the_spec_entities() -> None:
    entities = {(r.category, r.entity) for p in PACKS for r in p.rules}
    for entity in (
        "EMAIL_ADDRESS",
        "PHONE_NUMBER",
        "CREDIT_CARD",
        "IBAN_CODE",
        "IP_ADDRESS",
        "US_SSN",
        "NL_BSN",
        "VN_CCCD",
    ):
        assert ("pii", entity) in entities
    for entity in ("AWS_ACCESS_KEY", "GITHUB_TOKEN", "SLACK_TOKEN", "JWT", "PASSWORD"):
        assert ("secret", entity) in entities
    assert ("secret", "PRIVATE_KEY") in entities
    assert ("prompt_leak", "PROMPT_CANARY") in entities
    assert ("prompt_leak", "SYSTEM_PROMPT") in entities
    assert ("medical", "DOSE_STATEMENT") in entities
    assert ("medical", "CONTRAINDICATION") in entities
    assert ("abstention", "ABSTENTION") in entities


def test_medical_and_abstention_rules_exist_per_language() -> None:
    langs: dict[str, set[str]] = {}
    for p in PACKS:
        for r in p.rules:
            if r.category in ("medical", "abstention"):
                langs.setdefault(r.entity, set()).update(r.languages)
    assert langs == {
        "DOSE_STATEMENT": {"en", "nl", "vi"},
        "CONTRAINDICATION": {"en", "nl", "vi"},
        "ABSTENTION": {"en", "nl", "vi"},
    }


def test_every_rule_has_near_misses_and_secrets_are_never_shown() -> None:
    for p in PACKS:
        for r in p.rules:
            assert r.examples.match and r.examples.no_match, r.id
            if r.category == "secret":
                assert r.mask in ("hash", "full"), r.id
            if r.category in ("medical", "abstention"):
                assert r.mask == "none" and r.roles == ["assistant"], r.id


def test_the_default_engine_builds_from_all_packs() -> None:
    engine = RuleEngine(PACKS, REGISTRY)
    every = {r.id for p in PACKS for r in p.rules}
    # pii.phone_national covers configured regions without a rule of their own: none by default.
    assert set(engine.rule_ids) == every - {"pii.phone_national"}


# ----------------------------------------------------------------------------- load errors

RULE = """
  - id: {id}
    category: pii
    entity: EMAIL_ADDRESS
    severity: low
    description: test rule
    patterns:
      - name: p
        regex: '{regex}'
    {extra}
    examples:
      match: ["a@b.nl"]
      no_match: ["nothing here"]
"""


def _pack(path: Path, *rules: str) -> Path:
    path.write_text("pack: t\nversion: 1\ndescription: test\nrules:" + "".join(rules), "utf-8")
    return path


def _rule(rule_id: str = "pii.test", regex: str = r"\S+@\S+", extra: str = "") -> str:
    return RULE.format(id=rule_id, regex=regex, extra=extra)


def _error(*paths: Path) -> str:
    with pytest.raises(PackError) as info:
        load_packs(paths)
    return str(info.value)


def test_unknown_validator_names_file_rule_and_known_validators(tmp_path: Path) -> None:
    f = _pack(tmp_path / "p.yaml", _rule("pii.bad", extra="validator: luhnn"))
    msg = _error(f)
    assert str(f) in msg and "pii.bad" in msg
    assert "unknown validator 'luhnn'" in msg and "luhn" in msg


def test_invalid_regex_names_file_and_rule(tmp_path: Path) -> None:
    f = _pack(tmp_path / "p.yaml", _rule("pii.ok"), _rule("pii.broken", regex=r"(unclosed"))
    msg = _error(f)
    assert str(f) in msg and "pii.broken" in msg and "not valid RE2" in msg
    assert "pii.ok" not in msg


def test_lookahead_is_rejected_as_not_re2(tmp_path: Path) -> None:
    f = _pack(tmp_path / "p.yaml", _rule("pii.lookahead", regex=r"\d{9}(?!\d)"))
    msg = _error(f)
    assert str(f) in msg and "pii.lookahead" in msg and "not valid RE2" in msg


def test_backreference_is_rejected_as_not_re2(tmp_path: Path) -> None:
    f = _pack(tmp_path / "p.yaml", _rule("pii.backref", regex=r"(\d)\1"))
    assert "pii.backref" in _error(f)


def test_duplicate_id_within_a_file(tmp_path: Path) -> None:
    f = _pack(tmp_path / "p.yaml", _rule("pii.twice"), _rule("pii.twice"))
    msg = _error(f)
    assert str(f) in msg and "pii.twice" in msg and "duplicate" in msg


def test_duplicate_id_across_files_names_both(tmp_path: Path) -> None:
    a = _pack(tmp_path / "a.yaml", _rule("pii.shared"))
    b = _pack(tmp_path / "b.yaml", _rule("pii.shared"))
    msg = _error(tmp_path)
    assert str(b) in msg and str(a) in msg and "pii.shared" in msg and "duplicate" in msg
    assert load_pack(a).rules[0].id == "pii.shared"


def test_missing_examples(tmp_path: Path) -> None:
    rule = _rule("pii.untested").replace(
        '    examples:\n      match: ["a@b.nl"]\n      no_match: ["nothing here"]\n', ""
    )
    f = _pack(tmp_path / "p.yaml", rule)
    msg = _error(f)
    assert str(f) in msg and "pii.untested" in msg and "examples" in msg


def test_missing_near_misses(tmp_path: Path) -> None:
    rule = _rule("pii.onesided").replace('      no_match: ["nothing here"]\n', "")
    msg = _error(_pack(tmp_path / "p.yaml", rule))
    assert "pii.onesided" in msg and "no_match" in msg


def test_unknown_value_group(tmp_path: Path) -> None:
    rule = _rule("pii.group").replace("regex: '\\S+@\\S+'", "regex: '\\S+@\\S+'\n        group: v")
    msg = _error(_pack(tmp_path / "p.yaml", rule))
    assert "pii.group" in msg and "no group named 'v'" in msg


def test_context_required_without_context_words(tmp_path: Path) -> None:
    msg = _error(_pack(tmp_path / "p.yaml", _rule("pii.ctx", extra="context_required: true")))
    assert "pii.ctx" in msg and "context" in msg


def test_not_yaml_and_not_a_mapping(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules: [unclosed", "utf-8")
    assert str(bad) in _error(bad) and "not valid YAML" in _error(bad)
    listy = tmp_path / "list.yaml"
    listy.write_text("- a\n- b\n", "utf-8")
    assert "mapping" in _error(listy)


def test_missing_path_and_empty_folder(tmp_path: Path) -> None:
    assert "no such rule pack" in _error(tmp_path / "nope.yaml")
    (tmp_path / "empty").mkdir()
    assert "no rule packs found" in _error(tmp_path / "empty")
