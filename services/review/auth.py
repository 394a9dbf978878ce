"""Reviewer tokens from configuration: ``token → {name, roles}``.

Roles: ``reviewer`` may list, show, claim, label, correct, release and assign items to
themselves; ``reveal`` may in addition see the retained values behind masks (with a claim and a
stated purpose; every such look is logged as an event); ``assign`` may assign items to others.
Configure with ``VIGIL_REVIEW_TOKENS`` (JSON) or ``VIGIL_REVIEW_TOKENS_FILE`` (YAML or JSON, the
same mapping)::

    {"<a long random token>": {"name": "ann", "roles": ["reviewer", "reveal"]}}

Tokens are held only as SHA-256 digests after loading and never appear in a repr or an error.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    field_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from services.yamlload import safe_load as load_yaml

__all__ = ["ReviewAuthSettings", "Reviewer", "Role", "TokenAuth"]

Role = Literal["reviewer", "reveal", "assign"]
MIN_TOKEN_CHARS = 16


class Reviewer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: Annotated[str, StringConstraints(pattern=r"^[\w.@+-]{1,64}$")]
    roles: frozenset[Role] = frozenset({"reviewer"})

    def may(self, role: Role) -> bool:
        return role in self.roles


_TOKENS = TypeAdapter(dict[str, Reviewer])


def _checked(tokens: dict[str, Reviewer]) -> dict[str, Reviewer]:
    for token, reviewer in tokens.items():
        if len(token) < MIN_TOKEN_CHARS:
            raise ValueError(
                f"the token of reviewer {reviewer.name!r} is shorter than"
                f" {MIN_TOKEN_CHARS} characters"
            )
    return tokens


def _errors(exc: ValidationError) -> str:
    """Field errors without the input (which would be a token)."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc'][1:]) or 'tokens'}: {e['msg']}"
        for e in exc.errors(include_input=False, include_url=False)
    )


class ReviewAuthSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="VIGIL_REVIEW_", extra="ignore", frozen=True)

    tokens: dict[str, Reviewer] = Field(default_factory=dict, repr=False)
    tokens_file: Path | None = None

    @field_validator("tokens")
    @classmethod
    def _long_enough(cls, tokens: dict[str, Reviewer]) -> dict[str, Reviewer]:
        return _checked(tokens)

    def all_tokens(self) -> dict[str, Reviewer]:
        """Tokens from the environment and from ``tokens_file`` (which must not repeat one)."""
        tokens = dict(self.tokens)
        if self.tokens_file is not None:
            try:
                raw = load_yaml(self.tokens_file.read_text(encoding="utf-8")) or {}
            except (OSError, yaml.YAMLError) as exc:
                msg = f"{self.tokens_file}: cannot read tokens: {type(exc).__name__}"
                raise ValueError(msg) from None
            try:
                extra = _checked(_TOKENS.validate_python(raw))
            except ValidationError as exc:
                raise ValueError(f"{self.tokens_file}: {_errors(exc)}") from None
            if tokens.keys() & extra.keys():
                raise ValueError(f"{self.tokens_file}: a token is configured twice")
            tokens |= extra
        return tokens


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class TokenAuth:
    """Bearer-token lookup. ``authenticate(header)`` → the reviewer, or ``None``."""

    def __init__(self, tokens: dict[str, Reviewer]) -> None:
        self._by_digest = {_digest(t): r for t, r in tokens.items()}

    @classmethod
    def from_settings(cls, settings: ReviewAuthSettings | None = None) -> TokenAuth:
        return cls((settings or ReviewAuthSettings()).all_tokens())

    def __repr__(self) -> str:
        return f"TokenAuth({len(self._by_digest)} tokens)"

    def authenticate(self, authorization: str | None) -> Reviewer | None:
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or len(token) > 4096:
            return None
        digest = _digest(token)
        for known, reviewer in self._by_digest.items():
            if hmac.compare_digest(known, digest):
                return reviewer
        return None
