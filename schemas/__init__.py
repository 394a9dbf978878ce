"""Vigil's wire contract: pydantic v2 models of every message on the wire.

JSON Schema files generated from these models live in ``schemas/json/``; ``vigil schemas export``
regenerates them and a test fails when they drift.
"""

from schemas.alerts import Alert, DetectorSettings
from schemas.estimates import PopulationEstimates, RateEstimate
from schemas.evalset import EvalCase, EvalLabel
from schemas.events import (
    SCHEMA_VERSION,
    ChatEvent,
    Claim,
    Passage,
    Role,
)
from schemas.outputs import (
    Category,
    DeadLetter,
    DeadLetterReason,
    Direction,
    Finding,
    Severity,
)
from schemas.verdicts import (
    CitationIssue,
    ClaimCheck,
    ClaimStatus,
    ClaimVerdict,
    GroundingReport,
    JudgeLabel,
)

__all__ = [
    "SCHEMA_VERSION",
    "Alert",
    "Category",
    "ChatEvent",
    "CitationIssue",
    "Claim",
    "ClaimCheck",
    "ClaimStatus",
    "ClaimVerdict",
    "DeadLetter",
    "DeadLetterReason",
    "DetectorSettings",
    "Direction",
    "EvalCase",
    "EvalLabel",
    "Finding",
    "GroundingReport",
    "JudgeLabel",
    "Passage",
    "PopulationEstimates",
    "RateEstimate",
    "Role",
    "Severity",
]
