"""Evaluation metrics as pure library functions (SPEC §5 claim support, §6 metrics).

Nothing here touches Kafka, files or the network: the streaming workers, ``vigil scan`` and
``vigil eval run`` all call these functions. Every function validates its whole input first and
raises :class:`EvaluationInputError` (a ``ValueError``) naming the argument, index and key.

- :mod:`~services.evaluation.claims` — :func:`claim_support`, :func:`support_status`
- :mod:`~services.evaluation.abstention` — :func:`abstention_metrics`
- :mod:`~services.evaluation.risk_coverage` — :func:`risk_coverage_curve`
- :mod:`~services.evaluation.retrieval` — :func:`recall_at_k`, :func:`reciprocal_rank`,
  :func:`ndcg_at_k`
- :mod:`~services.evaluation.grounding_score` — :func:`faithfulness`
"""

from __future__ import annotations

from services.evaluation.abstention import AbstentionMetrics, abstention_metrics
from services.evaluation.claims import (
    CLAIM_STATUSES,
    ClaimStatus,
    ClaimSupport,
    SupportDecision,
    claim_support,
    support_status,
)
from services.evaluation.errors import EvaluationInputError
from services.evaluation.grounding_score import FaithfulnessResult, faithfulness
from services.evaluation.retrieval import ndcg_at_k, recall_at_k, reciprocal_rank
from services.evaluation.risk_coverage import RiskCoverageRow, risk_coverage_curve

__all__ = [
    "CLAIM_STATUSES",
    "AbstentionMetrics",
    "ClaimStatus",
    "ClaimSupport",
    "EvaluationInputError",
    "FaithfulnessResult",
    "RiskCoverageRow",
    "SupportDecision",
    "abstention_metrics",
    "claim_support",
    "faithfulness",
    "ndcg_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "risk_coverage_curve",
    "support_status",
]
