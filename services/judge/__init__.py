"""The claim judge over HTTP (SPEC §5): entailment or OpenAI-compatible chat, bounded and safe.

A judge that is down, slow, refusing or malformed yields ``unverified`` — never ``entailment``.

- :mod:`~services.judge.config` — :class:`JudgeConfig`
- :mod:`~services.judge.client` — :class:`Judge` (async: timeouts, retries with full-jitter
  back-off, a concurrency cap, a circuit breaker, an LRU verdict cache)
- :mod:`~services.judge.batch` — :func:`judge_many` (sync, for ``vigil scan``)
- :mod:`~services.judge.protocols` — request bodies and strict reply validation
- :mod:`~services.judge.metrics` — :class:`JudgeMetrics` (``vigil_judge_calls_total{outcome}``,
  ``vigil_judge_seconds``)
"""

from __future__ import annotations

from services.judge.batch import judge_many
from services.judge.blocking import BlockingJudge
from services.judge.breaker import BreakerState, CircuitBreaker
from services.judge.client import Judge
from services.judge.config import JudgeConfig, JudgeProtocol
from services.judge.metrics import JudgeMetrics
from services.judge.protocols import PROTOCOLS, Verdict
from services.judge.result import OUTCOMES, JudgeOutcome, JudgeRequest, JudgeResult

__all__ = [
    "OUTCOMES",
    "PROTOCOLS",
    "BlockingJudge",
    "BreakerState",
    "CircuitBreaker",
    "Judge",
    "JudgeConfig",
    "JudgeMetrics",
    "JudgeOutcome",
    "JudgeProtocol",
    "JudgeRequest",
    "JudgeResult",
    "Verdict",
    "judge_many",
]
