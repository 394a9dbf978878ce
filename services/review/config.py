"""One loader for the review queue's YAML files (triage policy, label schema, explanations).

A file is read as YAML and validated by a pydantic model; every error names the file and the
place in it, with the ``code`` / ``name`` / ``value`` of list entries when they have one
(``rules/triage.yaml: findings[3] (code pii_leak).when.severity: Input should be ...``). The
caller chooses the error type, a subclass of :class:`ReviewFileError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from services.yamlload import safe_load as load_yaml

__all__ = ["ReviewFileError", "load_yaml_model", "where"]

M = TypeVar("M", bound=BaseModel)
_NAMES = ("code", "name", "value", "id")


class ReviewFileError(ValueError):
    """A configuration file of the review queue is invalid; the message names file and field."""


def where(raw: Any, loc: tuple[Any, ...]) -> str:
    """``findings[2] (code pii_leak).when.severity`` from a pydantic error location."""
    parts: list[str] = []
    node: Any = raw
    for p in loc:
        if isinstance(p, int):
            parts[-1:] = [f"{parts[-1] if parts else ''}[{p}]"]
            node = node[p] if isinstance(node, list) and p < len(node) else None
            if isinstance(node, dict):
                for key in _NAMES:
                    if isinstance(node.get(key), str):
                        parts[-1] += f" ({key} {node[key]})"
                        break
        else:
            parts.append(str(p))
            node = node.get(p) if isinstance(node, dict) else None
    return ".".join(parts) or "file"


def load_yaml_model(path: Path | str, model: type[M], error: type[ReviewFileError], what: str) -> M:
    """Read ``path`` and validate it as ``model``; raise ``error`` naming file and field.
    ``what`` completes "a <what> is a mapping" in the message for a file that is not one."""
    path = Path(path)
    try:
        raw = load_yaml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise error(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise error(f"{path}: a {what} is a mapping")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        lines = [
            f"{path}: {where(raw, tuple(err['loc']))}: {err['msg']}"
            for err in exc.errors(include_input=False, include_url=False)
        ]
        raise error("\n".join(lines)) from None
