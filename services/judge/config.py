"""Settings of the HTTP judge: where it is, how it is spoken to, and how patiently."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

__all__ = ["JudgeConfig", "JudgeProtocol"]

#: ``entailment``: ``POST /v1/entailment``; ``openai``: ``POST /v1/chat/completions``.
JudgeProtocol = Literal["entailment", "openai"]


class JudgeConfig(BaseModel):
    """Every knob of the judge client, validated.

    Waiting is bounded everywhere: one attempt takes at most ``timeout_seconds``, a call makes at
    most ``1 + max_retries`` attempts, and the pauses between them are capped by
    ``backoff_max_seconds`` (a ``Retry-After`` asking for longer ends the call instead).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(description="Base URL, e.g. http://127.0.0.1:8080 (no /v1 suffix).")
    protocol: JudgeProtocol = "entailment"
    model: str | None = Field(default=None, description="Model name; required for `openai`.")
    api_key: SecretStr | None = Field(default=None, description="Sent as `Authorization: Bearer`.")
    timeout_seconds: float = Field(default=5.0, gt=0, le=600)
    max_retries: int = Field(default=2, ge=0, le=10)
    backoff_base_seconds: float = Field(default=0.1, ge=0)
    backoff_max_seconds: float = Field(default=2.0, ge=0)
    jitter: bool = Field(default=True, description="Full jitter: sleep uniform(0, backoff).")
    max_concurrency: int = Field(default=8, ge=1, le=1024)
    breaker_failure_threshold: int = Field(default=5, ge=1)
    breaker_reset_seconds: float = Field(default=30.0, gt=0)
    cache_size: int = Field(default=4096, ge=0, description="Verdicts kept (LRU); 0 disables.")
    entailment_threshold: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Score an `entailment` needs to count; below it the verdict is `neutral`.",
    )
    max_response_bytes: int = Field(default=1 << 20, ge=256, description="Larger is malformed.")

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"judge url must be http(s)://host[:port][/prefix], got {value!r}")
        if parts.query or parts.fragment:
            raise ValueError("judge url must not carry a query or fragment")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _model_for_openai(self) -> JudgeConfig:
        if self.protocol == "openai" and not (self.model and self.model.strip()):
            raise ValueError("protocol 'openai' needs a model name")
        if self.backoff_max_seconds < self.backoff_base_seconds:
            raise ValueError("backoff_max_seconds must be >= backoff_base_seconds")
        return self
