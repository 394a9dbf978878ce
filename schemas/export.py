"""Generate ``schemas/json/*.schema.json`` from the models (``vigil schemas export``)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from schemas.alerts import Alert
from schemas.estimates import PopulationEstimates
from schemas.evalset import EvalCase, EvalLabel
from schemas.events import ChatEvent
from schemas.outputs import DeadLetter, Finding
from schemas.review import RevealEvent, ReviewAction, ReviewFlag, ReviewItem, ReviewLabel
from schemas.verdicts import ClaimVerdict, GroundingReport

__all__ = ["JSON_DIR", "MODELS", "export", "render"]

JSON_DIR = Path(__file__).resolve().parent / "json"
MODELS: dict[str, type[BaseModel]] = {
    "ChatEvent": ChatEvent,
    "Finding": Finding,
    "DeadLetter": DeadLetter,
    "ClaimVerdict": ClaimVerdict,
    "GroundingReport": GroundingReport,
    "ReviewItem": ReviewItem,
    "ReviewFlag": ReviewFlag,
    "ReviewAction": ReviewAction,
    "ReviewLabel": ReviewLabel,
    "RevealEvent": RevealEvent,
    "EvalCase": EvalCase,
    "EvalLabel": EvalLabel,
    "Alert": Alert,
    "PopulationEstimates": PopulationEstimates,
}


def render(model: type[BaseModel]) -> str:
    """The JSON Schema of ``model`` (validation mode), as stable, sorted, indented text."""
    schema = model.model_json_schema(mode="validation")
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def export(out_dir: Path = JSON_DIR) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in MODELS.items():
        path = out_dir / f"{name}.schema.json"
        path.write_text(render(model), encoding="utf-8")
        written.append(path)
    return written
