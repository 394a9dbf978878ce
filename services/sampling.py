"""Deterministic, keyed-hash sampling of assistant answers for claim-support checks (SPEC §5).

Which answers get the (expensive) claim-support, grounding and citation checks is decided here,
per assistant answer (*event*), in two strata:

``always``
    The answer has at least one finding of category ``medical`` or of severity ``high`` or
    ``critical``. It is always checked: inclusion probability 1.0.
``sampled``
    Every other answer. It is checked when the conversation's hash value falls under the configured
    rate: ``u(conversation_id) < rate``; inclusion probability ``rate``.

The hash value is::

    d = HMAC-SHA256(key, b"vigil.sample.v1\\x00" + conversation_id.encode("utf-8"))
    u = (first 8 bytes of d, big-endian, as an unsigned integer  >> 11) / 2**53

so ``u`` is uniform on ``[0, 1)`` (53 bits: every value is an exact double below 1.0) and cannot
be predicted or steered without the key. Because ``u`` depends on the conversation only, the
``sampled``-stratum answers of one conversation are checked together (the sampling unit is the
conversation), and the decision is the same in the embedded ``vigil scan`` and in every streaming
worker, whatever the order or partition in which events arrive.

The stratum is decided per *event*, from that event's own findings: one conversation can have
answers in both strata. The estimator's unit (``services.estimation``) is therefore the assistant
answer, with inclusion probability 1.0 (``always``) or ``rate`` (``sampled``); the decision for an
unsampled answer still carries its stratum and inclusion probability, which is what the population
counts of the estimator need.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ALWAYS_CATEGORIES",
    "ALWAYS_SEVERITIES",
    "HASH_DOMAIN",
    "HmacSha256",
    "SampleDecision",
    "Sampler",
    "Stratum",
    "is_always",
]

Stratum = Literal["always", "sampled"]

#: A finding of one of these categories puts its answer in the ``always`` stratum.
ALWAYS_CATEGORIES: frozenset[str] = frozenset({"medical"})
#: A finding of one of these severities puts its answer in the ``always`` stratum.
ALWAYS_SEVERITIES: frozenset[str] = frozenset({"high", "critical"})
#: Domain-separation prefix of the hashed message, so the same key can serve other purposes
#: (for example evaluation-set salts) without correlating the samples.
HASH_DOMAIN = b"vigil.sample.v1\x00"

_MIN_KEY_BYTES = 1
_U_BITS = 53
_U_SCALE = 2.0**-_U_BITS
#: RFC 2104's pads as byte translations (as the standard library's ``hmac`` module builds them).
_IPAD = bytes(x ^ 0x36 for x in range(256))
_OPAD = bytes(x ^ 0x5C for x in range(256))
_BLOCK = 64  # SHA-256's block size in bytes


class HmacSha256:
    """HMAC-SHA256 under one key, the key's inner and outer pads hashed once.

    The result is ``hmac.digest(key, msg, "sha256")`` (RFC 2104: a key longer than the block is
    hashed first, a shorter one padded with zeros). ``hmac.digest`` sets up OpenSSL's HMAC for
    every call, which with OpenSSL 3 costs several microseconds, more than hashing a short
    message; here each message costs two copies of a hash state and two short updates.
    """

    __slots__ = ("_inner", "_outer")

    def __init__(self, key: bytes) -> None:
        if len(key) > _BLOCK:
            key = hashlib.sha256(key).digest()
        key = key.ljust(_BLOCK, b"\0")
        self._inner: Any = hashlib.sha256(key.translate(_IPAD))
        self._outer: Any = hashlib.sha256(key.translate(_OPAD))

    def digest(self, msg: bytes) -> bytes:
        inner = self._inner.copy()
        inner.update(msg)
        outer = self._outer.copy()
        outer.update(inner.digest())
        digest: bytes = outer.digest()
        return digest


class _FindingLike(Protocol):
    """What the sampler reads of a ``schemas.outputs.Finding``."""

    @property
    def conversation_id(self) -> str: ...
    @property
    def category(self) -> str: ...
    @property
    def severity(self) -> str: ...


class SampleDecision(BaseModel):
    """Whether one assistant answer is checked, its stratum and its inclusion probability.

    ``inclusion_probability`` is the probability with which an answer of this stratum is checked
    (1.0 or the rate), also for an answer that was *not* sampled; an answer is checked iff
    ``sampled`` is true.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    sampled: bool
    stratum: Stratum
    inclusion_probability: float = Field(ge=0.0, le=1.0)


def is_always(findings: Sequence[_FindingLike]) -> bool:
    """True when any finding is ``medical`` or ``high``/``critical`` (the ``always`` stratum)."""
    return any(f.category in ALWAYS_CATEGORIES or f.severity in ALWAYS_SEVERITIES for f in findings)


def _validate_rate(rate: object) -> float:
    if isinstance(rate, bool) or not isinstance(rate, int | float):
        raise ValueError(f"rate must be a number in [0, 1], got {type(rate).__name__}")
    value = float(rate)
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"rate must be in [0, 1], got {value!r}")
    return value


class Sampler:
    """Keyed-hash sampler of assistant answers.

    >>> s = Sampler(b"secret key", 0.25)
    >>> d = s.decide("conv-1", [])
    >>> d.stratum, d.inclusion_probability, d.sampled == (s.unit("conv-1") < 0.25)
    ('sampled', 0.25, True)
    >>> Sampler(b"k", 0.0).decide("conv-1", []).sampled
    False
    >>> Sampler(b"k", 1.0).decide("conv-1", []).sampled
    True

    ``key`` must be non-empty bytes (keep it secret: whoever knows it can tell which conversations
    are checked); ``rate`` a number in ``[0, 1]``. Anything else raises ``ValueError``. A text
    seed can be used as ``seed.encode("utf-8")``.
    """

    __slots__ = ("_decisions", "_hmac", "_key", "_rate")

    def __init__(self, key: bytes | bytearray, rate: float) -> None:
        if not isinstance(key, bytes | bytearray):
            raise ValueError(f"key must be bytes, got {type(key).__name__}")
        if len(key) < _MIN_KEY_BYTES:
            raise ValueError("key must not be empty")
        self._key = bytes(key)
        self._rate = _validate_rate(rate)
        self._hmac = HmacSha256(self._key)
        #: The three decisions there are (built at the first ``decide``; frozen, so shared).
        self._decisions: tuple[SampleDecision, SampleDecision, SampleDecision] | None = None

    @property
    def rate(self) -> float:
        """The sampling rate of the ``sampled`` stratum (its inclusion probability)."""
        return self._rate

    def unit(self, conversation_id: str) -> float:
        """The conversation's hash value ``u`` in ``[0, 1)`` (see the module docstring)."""
        if not isinstance(conversation_id, str):
            raise ValueError(f"conversation_id must be str, got {type(conversation_id).__name__}")
        if not conversation_id:
            raise ValueError("conversation_id must not be empty")
        digest = self._hmac.digest(HASH_DOMAIN + conversation_id.encode("utf-8", "surrogatepass"))
        return (int.from_bytes(digest[:8], "big") >> (64 - _U_BITS)) * _U_SCALE

    def in_sample(self, conversation_id: str) -> bool:
        """Whether the conversation's ``sampled``-stratum answers are checked: ``u < rate``."""
        return self.unit(conversation_id) < self._rate

    def decide(self, conversation_id: str, findings: Sequence[_FindingLike]) -> SampleDecision:
        """Decide for one assistant answer, from its conversation id and its own findings.

        ``findings`` are the findings of this answer (event) only; each must belong to
        ``conversation_id`` (``ValueError`` otherwise). With a ``medical`` or ``high``/``critical``
        finding the answer is in the ``always`` stratum (checked, probability 1.0); otherwise it
        is in the ``sampled`` stratum, checked iff ``u(conversation_id) < rate``, with probability
        ``rate`` (so with rate 0 it is never checked, with rate 1 always).
        """
        u = self.unit(conversation_id)
        for f in findings:
            if f.conversation_id != conversation_id:
                raise ValueError("a finding belongs to another conversation than the one decided")
        if self._decisions is None:
            self._decisions = (
                SampleDecision(sampled=True, stratum="always", inclusion_probability=1.0),
                SampleDecision(sampled=True, stratum="sampled", inclusion_probability=self._rate),
                SampleDecision(sampled=False, stratum="sampled", inclusion_probability=self._rate),
            )
        always, sampled, unsampled = self._decisions
        if is_always(findings):
            return always
        return sampled if u < self._rate else unsampled

    def __repr__(self) -> str:  # never shows the key
        return f"Sampler(rate={self._rate!r})"
