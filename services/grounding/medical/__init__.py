"""Structured medical claims: read dose and contraindication statements from answers and
passages, and compare them bound to the same drug (SPEC §5, issue 10).

- :mod:`~services.grounding.medical.lexicon` — the YAML lexicons of ``rules/grounding/``
- :mod:`~services.grounding.medical.reading` — sentence → :class:`Reading`\\ s
- :mod:`~services.grounding.medical.compare` — answer reading vs passage readings
"""

from services.grounding.medical.lexicon import (
    DEFAULT_LEXICON_DIR,
    LexiconError,
    MedicalLexicon,
    load_lexicon,
    spelling_key,
)
from services.grounding.medical.reading import Carry, Reading, SentenceReading, read_sentence

__all__ = [
    "DEFAULT_LEXICON_DIR",
    "Carry",
    "LexiconError",
    "MedicalLexicon",
    "Reading",
    "SentenceReading",
    "load_lexicon",
    "read_sentence",
    "spelling_key",
]
