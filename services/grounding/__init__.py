"""Sampled claim-support checks (SPEC §5): facts, claims, grounding, citations.

Pure library code — no Kafka, no HTTP. The stage function is :func:`check`; the caller asks the
HTTP judge about :func:`claims_for_judge` and passes its labels back.

- :mod:`~services.grounding.facts` — :class:`FactRegistry` (the decision of ``claim_support``,
  indexed, no size limit)
- :mod:`~services.grounding.extractors` — YAML claim extractors (``rules/extractors/``)
- :mod:`~services.grounding.claims` — structured claims and atomic claims with a kind
- :mod:`~services.grounding.quantities` — numbers with units, normalised
- :mod:`~services.grounding.evidence` — the deterministic grounding test
- :mod:`~services.grounding.citations` — fabricated and unsupported citations
- :mod:`~services.grounding.medical` — structured dose / contraindication readings, compared
  bound to the drug (lexicons in ``rules/grounding/``)
- :mod:`~services.grounding.prepared` — prepared passages and their bounded cache
- :mod:`~services.grounding.grounding` — :func:`check`, :func:`claims_for_judge`
"""

from services.grounding.citations import CitationResult, check_citations
from services.grounding.claims import AtomicClaim, atomic_claims, claim_kind, fact_checks
from services.grounding.config import DEFAULT_SUPPORT_THRESHOLD, GroundingConfig
from services.grounding.evidence import Evidence, ground
from services.grounding.extractors import (
    ExtractorError,
    ExtractorSet,
    load_extractors,
    run_examples,
)
from services.grounding.facts import DEFAULT_FACTS_DIR, FactError, FactRegistry
from services.grounding.grounding import (
    check,
    claims_for_judge,
    critical_claims,
    medical_context,
    medical_reading,
)
from services.grounding.medical import LexiconError, MedicalLexicon, load_lexicon
from services.grounding.prepared import PassageCache, PreparedPassage
from services.grounding.quantities import Quantity, quantities
from services.grounding.sentences import Sentence, split_sentences

__all__ = [
    "DEFAULT_FACTS_DIR",
    "DEFAULT_SUPPORT_THRESHOLD",
    "AtomicClaim",
    "CitationResult",
    "Evidence",
    "ExtractorError",
    "ExtractorSet",
    "FactError",
    "FactRegistry",
    "GroundingConfig",
    "LexiconError",
    "MedicalLexicon",
    "PassageCache",
    "PreparedPassage",
    "Quantity",
    "Sentence",
    "atomic_claims",
    "check",
    "check_citations",
    "claim_kind",
    "claims_for_judge",
    "critical_claims",
    "fact_checks",
    "ground",
    "load_extractors",
    "load_lexicon",
    "medical_context",
    "medical_reading",
    "quantities",
    "run_examples",
    "split_sentences",
]
