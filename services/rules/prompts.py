"""The prompt registry: canary strings and registered system prompts for prompt-leak rules."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from services.yamlload import safe_load as load_yaml

__all__ = ["PromptRegistry", "SystemPrompt", "load_prompt_registry", "word_list", "words"]

#: A word: a run of letters and digits (``str.isalnum``, the same set as RE2's ``[\pL\pN]``).
#: The standard library's engine is used on purpose: this pattern is one character class
#: repeated, which cannot backtrack (each character is examined at most twice), and its C-level
#: ``findall`` is far faster than iterating matches through google-re2's Python wrapper, which
#: made splitting words the dominant cost of screening an assistant message.
_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[tuple[str, int, int]]:
    """Lower-cased words of ``text`` with their code-point spans."""
    return [(m.group().lower(), m.start(), m.end()) for m in _WORD.finditer(text)]


def word_list(text: str) -> list[str]:
    """The lower-cased words of ``text``, without spans (the same words as :func:`words`)."""
    if text.isascii():  # lower-casing ASCII changes no length and no word boundary
        return _WORD.findall(text.lower())
    return [w.lower() for w in _WORD.findall(text)]


class SystemPrompt(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=1)
    text: str = Field(min_length=1)


class PromptRegistry(BaseModel):
    """Canaries (exact strings planted in system prompts) and the system prompts themselves.

    ``min_overlap_words`` is the length of the word shingles: an answer that repeats that many
    consecutive words of a registered system prompt is a prompt leak.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    canaries: list[str] = Field(default_factory=list)
    system_prompts: list[SystemPrompt] = Field(default_factory=list)
    min_overlap_words: int = Field(default=8, ge=3, le=64)

    def shingles(self) -> dict[tuple[str, ...], str]:
        """Map every ``min_overlap_words``-word shingle of every prompt to the prompt id."""
        n = self.min_overlap_words
        out: dict[tuple[str, ...], str] = {}
        for prompt in self.system_prompts:
            toks = [w for w, _, _ in words(prompt.text)]
            for i in range(len(toks) - n + 1):
                out.setdefault(tuple(toks[i : i + n]), prompt.id)
        return out


def load_prompt_registry(path: Path | str | None) -> PromptRegistry:
    if path is None:
        return PromptRegistry()
    path = Path(path)
    try:
        raw = load_yaml(path.read_text(encoding="utf-8")) or {}
        return PromptRegistry.model_validate(raw)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read prompt registry: {exc.strerror}") from None
    except (yaml.YAMLError, ValidationError) as exc:
        raise ValueError(f"{path}: invalid prompt registry: {exc}") from None
