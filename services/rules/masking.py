"""Masking of matched values before they are stored as evidence (SPEC §1: the monitor must not
become a leak itself)."""

from __future__ import annotations

import hashlib
import hmac

__all__ = ["EVIDENCE_MAX_CHARS", "mask"]

EVIDENCE_MAX_CHARS = 200


def _partial(value: str) -> str:
    """Keep separators and the last few alphanumerics (at most a quarter, at most four)."""
    alnum = sum(ch.isalnum() for ch in value)
    keep = min(4, alnum // 4)
    out: list[str] = []
    seen = 0
    for ch in value:
        if ch.isalnum():
            seen += 1
            out.append(ch if seen > alnum - keep else "*")
        else:
            out.append(ch)
    return "".join(out)


def _email(value: str) -> str:
    local, _, domain = value.rpartition("@")
    if not local:
        return _partial(value)
    tld = domain.rsplit(".", 1)[-1] if "." in domain else ""
    return f"{local[:1]}***@***.{tld}" if tld else f"{local[:1]}***@***"


def mask(value: str, strategy: str, entity: str, key: bytes) -> str:
    """Return the evidence string for ``value`` under a mask strategy.

    ``partial`` keeps the shape and the last characters (emails keep their first letter and
    top-level domain), ``full`` names only the entity, ``hash`` adds a keyed 8-hex fingerprint so
    reviewers can correlate values without seeing them, ``none`` keeps the text (truncated).
    """
    if strategy == "none":
        return value if len(value) <= EVIDENCE_MAX_CHARS else value[: EVIDENCE_MAX_CHARS - 1] + "…"
    if strategy == "full":
        return f"[{entity}]"
    if strategy == "hash":
        digest = hmac.new(key, value.encode("utf-8", "surrogatepass"), hashlib.blake2b).hexdigest()
        return f"[{entity}:{digest[:8]}]"
    if strategy == "partial":
        masked = _email(value) if entity == "EMAIL_ADDRESS" else _partial(value)
        return masked[:EVIDENCE_MAX_CHARS]
    raise ValueError(f"unknown mask strategy {strategy!r}")
