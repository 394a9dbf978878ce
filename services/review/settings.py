"""``VIGIL_REVIEW_*`` settings: the policy, topics, timing and the bounds of the review state.

:class:`ReviewSettings` is what the dataflow needs (``vigil scan`` and the worker);
:class:`ReviewWorkerSettings` adds the reviewer tokens, which only the worker's API reads, so a
malformed token never stops a scan. No Faust import here.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from services.review.auth import ReviewAuthSettings
from services.review.explain import DEFAULT_EXPLANATIONS_PATH, load_explanations
from services.review.labels import DEFAULT_LABEL_SCHEMA_PATH, LabelSchema, load_label_schema
from services.review.policy import DEFAULT_POLICY_PATH, TriagePolicy, load_policy
from services.review.view import ViewContext

__all__ = [
    "DEFAULT_CACHE_BYTES",
    "DEFAULT_MAX_VALUE_BYTES",
    "ReviewConfigError",
    "ReviewSettings",
    "ReviewWorkerSettings",
    "load_review_policy",
    "load_reviewer_config",
    "load_settings",
    "load_worker_settings",
]

DAY = 24 * 3600.0
#: ``VIGIL_REVIEW_MAX_VALUE_BYTES`` when not set.
DEFAULT_MAX_VALUE_BYTES = 256 * 1024
#: ``VIGIL_REVIEW_CACHE_BYTES`` when not set.
DEFAULT_CACHE_BYTES = 64 * 1024 * 1024


class ReviewConfigError(ValueError):
    """A ``VIGIL_REVIEW_*`` setting or the policy is invalid (the message holds no token)."""


class ReviewSettings(BaseSettings):
    """``VIGIL_REVIEW_*``: policy, topics, timing and state bounds."""

    model_config = SettingsConfigDict(env_prefix="VIGIL_REVIEW_", extra="ignore", frozen=True)

    policy_file: Path = DEFAULT_POLICY_PATH
    #: What reviewers record (``rules/label-schema.yaml``) and the plain-language explanations
    #: of findings (``rules/explanations.yaml``).
    label_schema_file: Path = DEFAULT_LABEL_SCHEMA_PATH
    explanations_file: Path = DEFAULT_EXPLANATIONS_PATH
    #: The review table's changelog (compacted). Default ``<app_id>.review``: the queue is the
    #: app's state, so two apps never share one (like Faust's ``<app_id>-<table>-changelog``).
    topic: str | None = None
    actions_topic: str = "vigil.review.actions"
    labels_topic: str = "vigil.review.labels"
    #: Overrides the policy's ``queue.lease_seconds`` (at most its ``max_lease_seconds``).
    lease_seconds: int | None = Field(default=None, ge=1)
    #: How often the timer expires open items, takes lapsed leases back and purges old items.
    tick_seconds: float = Field(default=60.0, gt=0)
    #: Conversations whose last masked turns are kept as context for new items (per partition
    #: in the worker, per run in ``vigil scan``), and how long after their last turn.
    context_conversations: int = Field(default=100_000, ge=1)
    context_ttl_seconds: float = Field(default=2 * DAY, gt=0)
    #: Review items kept (per partition / per run). Items leave by the policy's lifetimes
    #: (``queue.open_ttl_hours``, ``queue.retention_hours``); this bound only guards the store.
    max_items: int = Field(default=200_000, ge=1)
    #: The largest review item or context ring, in bytes of JSON (one changelog record each):
    #: larger ones are shortened (``services/review/bounds.py``). Keep it well under the
    #: broker's ``max.message.bytes`` and the producer's ``max_request_size`` (1 MiB and
    #: 1,000,000 by default); the worker refuses to start above the producer's.
    max_value_bytes: int = Field(default=DEFAULT_MAX_VALUE_BYTES, ge=32 * 1024, le=64 * 1024 * 1024)
    #: Memory for decoded values kept between uses, in bytes of their JSON, per cache: the
    #: context rings of recent conversations (the dataflow) and recently read items (the API).
    cache_bytes: int = Field(default=DEFAULT_CACHE_BYTES, ge=1024 * 1024)
    #: How long an API state change waits for its changelog record before answering anyway.
    write_timeout_seconds: float = Field(default=10.0, gt=0)

    def table_topic(self, app_id: str) -> str:
        return self.topic or f"{app_id}.review"


class ReviewWorkerSettings(ReviewSettings, ReviewAuthSettings):
    """The worker's review settings: :class:`ReviewSettings` and the reviewer tokens."""

    model_config = SettingsConfigDict(env_prefix="VIGIL_REVIEW_", extra="ignore", frozen=True)


def _redacted(exc: ValidationError) -> str:
    """Field errors without inputs; a token used as a mapping key is replaced too."""
    parts = []
    for e in exc.errors(include_input=False, include_url=False):
        loc = [str(p) for p in e["loc"]]
        if loc[:1] == ["tokens"] and len(loc) > 1:
            loc[1] = "<token>"
        parts.append(f"{'.'.join(loc) or 'settings'}: {e['msg']}")
    return "; ".join(parts)


def _load(cls: type[ReviewSettings]) -> ReviewSettings:
    try:
        return cls()
    except ValidationError as exc:
        raise ReviewConfigError(f"VIGIL_REVIEW_*: {_redacted(exc)}") from None
    except SettingsError as exc:  # names the field and the source, never the value
        raise ReviewConfigError(f"VIGIL_REVIEW_*: {exc}") from None


def load_settings() -> ReviewSettings:
    """The review settings without tokens (what ``vigil scan`` and topic creation need)."""
    return _load(ReviewSettings)


def load_worker_settings() -> ReviewWorkerSettings:
    """The worker's review settings, tokens included."""
    found = _load(ReviewWorkerSettings)
    assert isinstance(found, ReviewWorkerSettings)
    return found


def load_review_policy(rs: ReviewSettings) -> TriagePolicy:
    """The triage policy, with ``VIGIL_REVIEW_LEASE_SECONDS`` applied."""
    policy = load_policy(rs.policy_file)
    if rs.lease_seconds is None:
        return policy
    if rs.lease_seconds > policy.queue.max_lease_seconds:
        raise ReviewConfigError(
            f"VIGIL_REVIEW_LEASE_SECONDS={rs.lease_seconds} is above the policy's "
            f"queue.max_lease_seconds ({policy.queue.max_lease_seconds})"
        )
    queue = policy.queue.model_copy(update={"lease_seconds": rs.lease_seconds})
    return policy.model_copy(update={"queue": queue})


def load_reviewer_config(
    rs: ReviewSettings, policy: TriagePolicy
) -> tuple[LabelSchema, ViewContext]:
    """The label schema and what the item view reads, from the settings' files."""
    return load_label_schema(rs.label_schema_file), ViewContext(
        policy=policy, explanations=load_explanations(rs.explanations_file)
    )
