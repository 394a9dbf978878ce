"""Settings from the environment (``VIGIL_*``), validated by pydantic-settings."""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal

import phonenumbers
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from schemas.events import DEFAULT_MAX_CONTENT_BYTES
from services.estimation import DEFAULT_MAX_CONVERSATIONS
from services.rules.validators import DEFAULT_PHONE_REGIONS
from services.screening.memory import MemoryLimits

__all__ = ["KNOWN_DEV_KEYS", "REPO_ROOT", "Settings", "dev_keys_in_use"]

REPO_ROOT = Path(__file__).resolve().parents[1]
_DEV_KEY = "vigil-development-key-change-me"
#: Keys printed in Vigil's source, docs or an earlier docker-compose.yml: anyone who read them can
#: recompute every keyed hash (conversation memory, masks, samples). ``vigil worker`` refuses
#: them unless ``VIGIL_ALLOW_DEV_KEYS=true``. Compared after stripping and lower-casing.
KNOWN_DEV_KEYS = frozenset(
    {
        _DEV_KEY,
        "vigil-evalset-development-key-change-me",
        "change-me-in-production",
        "change-me",
        "changeme",
        "secret",
        "",
    }
)


class Settings(BaseSettings):
    """Every knob of Vigil. Environment variables are ``VIGIL_`` + the field name in capitals."""

    model_config = SettingsConfigDict(env_prefix="VIGIL_", extra="ignore", frozen=True)

    # Kafka
    kafka_bootstrap: str = "127.0.0.1:9092"
    kafka_security_protocol: str = "PLAINTEXT"
    kafka_sasl_mechanism: str | None = None
    kafka_sasl_username: str | None = None
    kafka_sasl_password: SecretStr | None = None
    input_topic: str = "chat.events"
    findings_topic: str = "vigil.findings"
    dlq_topic: str = "vigil.dlq"
    verdicts_topic: str = "vigil.verdicts"
    #: Internal topic from the screening agent to the claim-check agent (sampled answers).
    checks_topic: str = "vigil.checks"
    topic_partitions: int = Field(default=4, ge=1)
    topic_replication: int = Field(default=1, ge=1)

    # Worker
    app_id: str = "vigil"
    web_host: str = "127.0.0.1"
    web_port: int = Field(default=6066, ge=1, le=65535)
    data_dir: Path = Path(".vigil-data")
    session_timeout_seconds: float = Field(default=10.0, gt=0)
    #: Where the worker keeps its table (the state of every stage): ``rocksdb://`` on disk under
    #: ``data_dir`` (the ``rocksdict`` package), or ``memory://`` (tests; state then lives only
    #: in the changelog and is replayed at every start).
    store: Literal["rocksdb://", "memory://"] = "rocksdb://"
    #: At-least-once (default) or Kafka transactions (``exactly_once``; ``docs/streaming.md``).
    processing_guarantee: Literal["at_least_once", "exactly_once"] = "at_least_once"
    #: Workers keeping a warm copy of each partition's state (faster failover, more work).
    standby_replicas: int = Field(default=1, ge=0, le=8)
    #: Records handed to the dataflow at once (a route's batch; ``docs/streaming.md``), and how
    #: long the one agent (the claim checks with a judge) waits to fill its batch.
    batch_size: int = Field(default=500, ge=1, le=100_000)
    batch_seconds: float = Field(default=0.05, gt=0, le=60)
    #: How often expired state is deleted from the table (tombstones in its changelog).
    state_sweep_seconds: float = Field(default=60.0, gt=0)
    #: Faust's own Prometheus sensors (``faust_*``: offsets per topic partition, timings), which
    #: run on every message; ``vigil_consumer_lag_records`` is computed at scrape time either way.
    faust_metrics: bool = True
    #: A warning or error the worker logs again and again (a broker that is down: aiokafka
    #: retries every 100 ms) is written once per this many seconds, with a count of the rest;
    #: 0 writes every line.
    log_repeat_seconds: float = Field(default=10.0, ge=0)
    #: How long ``vigil worker`` waits at start for an unreachable broker (retrying with
    #: backoff up to ``broker_retry_max_seconds`` apart) before it gives up; ``None``: forever.
    broker_wait_seconds: float | None = Field(default=None, ge=0)
    broker_retry_max_seconds: float = Field(default=30.0, gt=0)
    #: How often the worker hands the C heap's free pages back to the OS (glibc's
    #: ``malloc_trim``; without it the resident set creeps up with every event: ``BENCHMARKS.md``
    #: sections 9 and 10); 0 never does. Nothing to trim where jemalloc is preloaded.
    heap_trim_seconds: float = Field(default=30.0, ge=0)
    #: Allocations of container objects (net) between two collections of the youngest
    #: generation of Python's cyclic garbage collector (CPython's default is 700, which made
    #: collections ~15 % of the dataflow's CPU while finding next to nothing:
    #: ``services/cyclegc.py``); 0 keeps CPython's. ``vigil worker`` and ``vigil scan`` apply
    #: it at start.
    gc_gen0_threshold: int = Field(default=50_000, ge=0)
    #: RocksDB's memory in one worker, whatever the number of table partitions it holds: one
    #: block cache shared by all of them (index and filter blocks in it), with every
    #: partition's memtables charged to it; a memtable is flushed when all of them together
    #: take half of it. ``rocksdb_write_buffer_bytes`` is one memtable's size (two a partition).
    rocksdb_write_buffer_bytes: int = Field(default=4 * 1024 * 1024, ge=1024 * 1024)
    rocksdb_block_cache_bytes: int = Field(default=32 * 1024 * 1024, ge=1024 * 1024)

    # Rules and screening
    rules_dir: Path = REPO_ROOT / "rules" / "packs"
    prompts_file: Path | None = REPO_ROOT / "rules" / "prompts.yaml"
    max_content_bytes: int = Field(default=DEFAULT_MAX_CONTENT_BYTES, ge=1, le=16 * 1024 * 1024)
    dead_letter_keep_bytes: int = Field(default=4096, ge=0)
    #: Dead letters keep the raw bytes of the message (base64) besides the masked text. For
    #: debugging a producer only: they hold chat content, personal data included, as it came.
    dead_letter_raw: bool = False
    #: Secret for keyed hashes in conversation memory and hash masks. Set it in production.
    memory_key: SecretStr = SecretStr(_DEV_KEY)
    #: Values remembered per conversation, and for how long (also the TTL of a memory).
    memory_max_values: int = Field(default=256, ge=1)
    memory_max_age_seconds: float = Field(default=7 * 24 * 3600, gt=0)
    #: Conversations whose memory is kept (per partition in the worker, per run in a scan).
    memory_max_conversations: int = Field(default=100_000, ge=1)
    #: Idempotency by ``event_id``: a record whose event id an earlier record brought within this
    #: window is skipped (``vigil_duplicate_events_total``), and how many ids are kept (per
    #: partition in the worker, per run in a scan). The window is event time in a scan.
    duplicate_window_seconds: float = Field(default=24 * 3600, gt=0)
    duplicate_max_events: int = Field(default=1_000_000, ge=1)
    #: The claim check of an answer uses the drugs and population of the latest user turn before
    #: it (derived data, never the text): kept for at most this many user turns per
    #: conversation, this many conversations (per partition in the worker, per run in a scan),
    #: and this long after the conversation's last user turn that named any.
    question_context_max_turns: int = Field(default=4, ge=1, le=64)
    question_context_max_conversations: int = Field(default=100_000, ge=1)
    question_context_max_age_seconds: float = Field(default=7 * 24 * 3600, gt=0)
    #: Echo or leak by turn order: an answer with a leak is held this long (the runner's clock:
    #: event time in a scan, wall time in the worker) for a late user turn to arrive, then
    #: screened again; 0 holds nothing. At most ``reorder_max_held`` answers per conversation
    #: and ``reorder_max_held_total`` per partition (per run in a scan) are held at once.
    reorder_window_seconds: float = Field(default=10.0, ge=0)
    reorder_max_held: int = Field(default=16, ge=1, le=256)
    reorder_max_held_total: int = Field(default=10_000, ge=1)
    # Sampled claim checks (SPEC §5)
    #: Share of answers without medical or high/critical findings that are checked.
    sample_rate: float = Field(default=0.1, ge=0.0, le=1.0)
    #: Key of the per-conversation sampling hash; whoever knows it can predict the sample.
    sample_key: SecretStr = SecretStr(_DEV_KEY)
    #: Sampled conversations whose checked-answer counts each rate estimate keeps (the design
    #: effect of whole-conversation sampling needs them); the least recently checked go first.
    #: Two integers each, for the lifetime of the worker or scan.
    estimate_max_conversations: int = Field(default=DEFAULT_MAX_CONVERSATIONS, ge=1)
    facts_dir: Path = REPO_ROOT / "rules" / "facts"
    extractors_dir: Path = REPO_ROOT / "rules" / "extractors"
    support_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    #: Medical lexicons of the claim reader (drugs, populations, cue phrases).
    grounding_lexicon_dir: Path = REPO_ROOT / "rules" / "grounding"
    #: Prepared retrieved passages kept between answers (LRU, per process): bounded in entries
    #: and in estimated bytes, each kept at most ``grounding_cache_ttl_seconds``.
    grounding_cache_entries: int = Field(default=4096, ge=0, le=1_000_000)
    grounding_cache_bytes: int = Field(default=64 * 1024 * 1024, ge=0)
    grounding_cache_ttl_seconds: float = Field(default=3600.0, gt=0)
    #: Agent concurrency of the claim-check agent (screening always runs at 1; see app.py).
    check_concurrency: int = Field(default=1, ge=1, le=64)
    judge_url: str | None = None
    judge_protocol: Literal["entailment", "openai"] = "entailment"
    judge_model: str | None = None
    judge_api_key: SecretStr | None = None
    judge_timeout_seconds: float = Field(default=10.0, gt=0)
    judge_max_retries: int = Field(default=2, ge=0, le=10)
    judge_max_concurrency: int = Field(default=8, ge=1, le=256)

    #: Regions whose phone numbers in national form are found (ISO 3166 codes, comma-separated):
    #: NL, VN, GB and US have rules of their own, any other region is left to phonenumbers
    #: (rule ``pii.phone_national``). International numbers (+ or 00) are found for every region.
    phone_regions: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(DEFAULT_PHONE_REGIONS), min_length=1
    )
    #: Let ``vigil worker`` start with a key from :data:`KNOWN_DEV_KEYS` (tests, demos).
    allow_dev_keys: bool = False

    #: Tenants that get their own metric label; every other tenant is counted as ``other``.
    metric_tenants: Annotated[list[str], NoDecode] = Field(default_factory=list)

    @field_validator("metric_tenants", "phone_regions", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        """Comma-separated (``a,b``) or a JSON list (``["a","b"]``)."""
        if isinstance(value, str):
            if value.lstrip().startswith("["):
                return json.loads(value)
            return [v.strip() for v in value.split(",") if v.strip()]
        return value

    @field_validator("phone_regions")
    @classmethod
    def _regions(cls, value: list[str]) -> list[str]:
        upper = [v.upper() for v in value]
        unknown = sorted(set(upper) - phonenumbers.SUPPORTED_REGIONS)
        if unknown:
            raise ValueError(f"not phone regions phonenumbers knows: {', '.join(unknown)}")
        return list(dict.fromkeys(upper))

    @property
    def key_bytes(self) -> bytes:
        return self.memory_key.get_secret_value().encode("utf-8")

    @property
    def sample_key_bytes(self) -> bytes:
        return self.sample_key.get_secret_value().encode("utf-8")

    @cached_property
    def memory_limits(self) -> MemoryLimits:
        return MemoryLimits(
            max_values=self.memory_max_values,
            max_age_seconds=self.memory_max_age_seconds,
        )


def dev_keys_in_use(settings: Settings) -> list[str]:
    """The ``VIGIL_*`` key settings that hold a known development key (:data:`KNOWN_DEV_KEYS`)."""
    from services.evalsets.settings import EvalsetSettings

    evalset = EvalsetSettings()
    keys = {
        "VIGIL_MEMORY_KEY": settings.memory_key,
        "VIGIL_SAMPLE_KEY": settings.sample_key,
    }
    if evalset.enabled:
        keys["VIGIL_EVALSET_KEY"] = evalset.key
    return [
        name
        for name, key in keys.items()
        if key.get_secret_value().strip().lower() in KNOWN_DEV_KEYS
    ]
