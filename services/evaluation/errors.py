"""The one error type of :mod:`services.evaluation`.

It subclasses ``ValueError``, so callers that only know the SPEC's "raises ``ValueError``" keep
working, while callers that want to tell bad metric input apart from other bugs can catch it.
"""

from __future__ import annotations

__all__ = ["EvaluationInputError"]


class EvaluationInputError(ValueError):
    """An argument of an evaluation metric is malformed (wrong type, shape, size or value)."""
