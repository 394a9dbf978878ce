"""A typed view of a byte/str-valued mapping (a Faust table) as a mapping of pydantic models.

The sampler and the case accumulators keep their state in ``MutableMapping``s of pydantic models.
A Faust table stores raw values; wrap it so the same code runs on a ``dict`` in ``vigil scan``
and on a changelog-backed table in the workers::

    members = ModelMapping(app_tables.evalset_members, MemberRecord)   # value_serializer="raw"
    sampler = EvalsetSampler(config, secret, states=..., members=members, shard=str(partition))

Every assignment serialises the whole value, so write back after changing a model in place (the
sampler does). Values are compact JSON.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Generic, TypeVar

from pydantic import BaseModel

__all__ = ["ModelMapping"]

M = TypeVar("M", bound=BaseModel)


class ModelMapping(MutableMapping[str, M], Generic[M]):
    """``MutableMapping[str, M]`` over a ``MutableMapping[str, bytes | str]``.

    >>> from services.evalsets.sampler import PeriodState
    >>> raw: dict[str, bytes | str] = {}
    >>> view = ModelMapping(raw, PeriodState)
    >>> view["2026-W45"] = PeriodState(period="2026-W45")
    >>> raw["2026-W45"]
    b'{"period":"2026-W45","closed":false,"strata":{},"late_after_close":0}'
    >>> view["2026-W45"].period
    '2026-W45'
    """

    def __init__(self, raw: MutableMapping[str, bytes | str], model: type[M]) -> None:
        self._raw = raw
        self._model = model

    def __getitem__(self, key: str) -> M:
        return self._model.model_validate_json(self._raw[key])

    def __setitem__(self, key: str, value: M) -> None:
        self._raw[key] = value.model_dump_json().encode("utf-8")

    def __delitem__(self, key: str) -> None:
        del self._raw[key]

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)
