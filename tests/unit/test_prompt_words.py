"""Prompt-overlap words: ``word_list`` is the words of ``words`` without their spans, whichever
path (ASCII or not) it takes; a leak needs the configured number of prompt words in a row."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from services.rules import PromptRegistry, RuleEngine, RulePack
from services.rules.prompts import SystemPrompt, word_list, words


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="aZ9_ -.İıΣσςßẞĳǅ\u0307é😀", max_size=60))
def test_word_list_is_the_words_without_spans(text: str) -> None:
    assert word_list(text) == [w for w, _, _ in words(text)]


def _engine(n: int) -> RuleEngine:
    rule = {
        "id": "prompt_leak.system_prompt",
        "category": "prompt_leak",
        "entity": "SYSTEM_PROMPT",
        "severity": "high",
        "description": "overlap",
        "source": "system_prompts",
        "roles": ["assistant"],
        "examples": {"match": ["x"], "no_match": ["y"]},
    }
    pack = RulePack.model_validate({"pack": "t", "version": 1, "description": "t", "rules": [rule]})
    prompt = SystemPrompt(id="p", text="one two three four five six seven eight nine ten")
    return RuleEngine([pack], PromptRegistry(system_prompts=[prompt], min_overlap_words=n))


def test_a_leak_needs_n_prompt_words_in_a_row() -> None:
    e = _engine(4)
    assert e.scan("one two three and four five six", "assistant") == []
    assert e.scan("ten nine eight seven six", "assistant") == []  # prompt words, wrong order
    (m,) = e.scan("so: Two Three FOUR five!", "assistant")
    assert m.value == "Two Three FOUR five"
    (m,) = e.scan("Ｏne two three four five six", "assistant")  # fullwidth O: not 'one'
    assert m.value == "two three four five six"
