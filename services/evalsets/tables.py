"""A typed view of a byte/str-valued mapping (a Faust table) as a mapping of pydantic models.

The sampler and the case accumulators keep their state in ``MutableMapping``s of pydantic models.
A Faust table stores raw values; wrap it so the same code runs on a ``dict`` in ``vigil scan``
and on a changelog-backed table in the workers::

    members = ModelMapping(app_tables.evalset_members, MemberRecord)   # value_serializer="raw"
    sampler = EvalsetSampler(config, secret, states=..., members=members, shard=str(partition))

Every assignment serialises the whole value, so write back after changing a model in place (the
sampler does). Values are compact JSON.

:class:`PrefixedMapping` gives one table several namespaces (``"M|"`` for members, ...), and
:class:`StagedMapping` holds writes back until :meth:`~StagedMapping.commit` (or drops them all
on failure): the worker's sampler writes one message's changes together, behind a journal record
(``services.evalsets.streaming``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, MutableMapping
from typing import Any, Final, Generic, TypeVar

from pydantic import BaseModel

__all__ = ["ModelMapping", "PrefixedMapping", "StagedMapping", "keys_with_prefix"]

M = TypeVar("M", bound=BaseModel)
V = TypeVar("V")
_DELETED: Final = object()


def keys_with_prefix(mapping: Any, prefix: str) -> list[str]:
    """The keys of ``mapping`` that start with ``prefix``: by the mapping's own prefix scan
    where it has one (a :class:`~services.dataflow.state.KeyedStore` on RocksDB reads only
    those keys, and no value), else by a filter over all of them.

    >>> keys_with_prefix({"M|a": b"1", "S|b": b"2"}, "M|")
    ['M|a']
    """
    own = getattr(mapping, "keys_with_prefix", None)
    if own is not None:
        return list(own(prefix))
    return [k for k in list(mapping) if k.startswith(prefix)]


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

    ``memo`` > 0 (frozen models only: a value is handed out again, not a copy): the last
    ``memo`` values read or written, at most ``memo_bytes`` of their encodings, are kept
    decoded, and a read whose raw value is the one they came from (the same or equal bytes)
    decodes nothing. The raw mapping stays the truth: a key deleted or changed there is read
    from there.
    """

    def __init__(
        self,
        raw: MutableMapping[str, bytes | str],
        model: type[M],
        *,
        memo: int = 0,
        memo_bytes: int = 0,
    ) -> None:
        if memo and not model.model_config.get("frozen"):
            raise ValueError(f"{model.__name__} is not frozen: its values cannot be shared")
        self._raw = raw
        self._model = model
        self._memo_size = memo
        self._memo_bytes = memo_bytes
        #: key -> (the raw value, its decoded model), least recently used first
        self._memo: OrderedDict[str, tuple[bytes | str, M]] = OrderedDict()
        self._held = 0

    def __getitem__(self, key: str) -> M:
        raw = self._raw[key]
        hit = self._memo.get(key)
        if hit is not None and (hit[0] is raw or hit[0] == raw):
            self._memo.move_to_end(key)
            return hit[1]
        value = self._model.model_validate_json(raw)
        self._remember(key, raw, value)
        return value

    def __setitem__(self, key: str, value: M) -> None:
        raw = value.model_dump_json().encode("utf-8")
        self._raw[key] = raw
        self._remember(key, raw, value)

    def __delitem__(self, key: str) -> None:
        self._forget(key)
        del self._raw[key]

    def _remember(self, key: str, raw: bytes | str, value: M) -> None:
        if not self._memo_size:
            return
        self._forget(key)
        self._memo[key] = (raw, value)
        self._held += len(raw)
        while len(self._memo) > self._memo_size or self._held > self._memo_bytes:
            _, (gone, _) = self._memo.popitem(last=False)
            self._held -= len(gone)

    def _forget(self, key: str) -> None:
        hit = self._memo.pop(key, None)
        if hit is not None:
            self._held -= len(hit[0])

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def keys_with_prefix(self, prefix: str) -> list[str]:
        return keys_with_prefix(self._raw, prefix)

    def __len__(self) -> int:
        return len(self._raw)


class PrefixedMapping(MutableMapping[str, V], Generic[V]):
    """The keys of ``raw`` that start with ``prefix``, seen without it.

    >>> raw = {"M|a": 1, "S|b": 2}
    >>> view = PrefixedMapping(raw, "M|")
    >>> dict(view), "b" in view
    ({'a': 1}, False)
    >>> view["c"] = 3
    >>> sorted(raw)
    ['M|a', 'M|c', 'S|b']
    """

    def __init__(self, raw: MutableMapping[str, V], prefix: str) -> None:
        if not prefix:
            raise ValueError("prefix must not be empty")
        self._raw = raw
        self.prefix = prefix

    def __getitem__(self, key: str) -> V:
        return self._raw[self.prefix + key]

    def __setitem__(self, key: str, value: V) -> None:
        self._raw[self.prefix + key] = value

    def __delitem__(self, key: str) -> None:
        del self._raw[self.prefix + key]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and (self.prefix + key) in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys_with_prefix(""))

    def keys_with_prefix(self, prefix: str) -> list[str]:
        n = len(self.prefix)
        return [k[n:] for k in keys_with_prefix(self._raw, self.prefix + prefix)]

    def __len__(self) -> int:
        return sum(1 for _ in self)


class StagedMapping(MutableMapping[str, V], Generic[V]):
    """``raw`` with writes and deletions held back until :meth:`commit` (or dropped by
    :meth:`discard`); reads see the staged writes.

    >>> raw = {"a": 1}
    >>> staged = StagedMapping(raw)
    >>> staged["b"] = 2
    >>> del staged["a"]
    >>> dict(staged), raw
    ({'b': 2}, {'a': 1})
    >>> staged.commit()
    2
    >>> raw
    {'b': 2}
    """

    def __init__(self, raw: MutableMapping[str, V]) -> None:
        self._raw = raw
        self._staged: dict[str, Any] = {}

    def __getitem__(self, key: str) -> V:
        if key in self._staged:
            value = self._staged[key]
            if value is _DELETED:
                raise KeyError(key)
            return value  # type: ignore[no-any-return]
        return self._raw[key]

    def __setitem__(self, key: str, value: V) -> None:
        self._staged[key] = value

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._staged[key] = _DELETED

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str) and key in self._staged:
            return self._staged[key] is not _DELETED
        return key in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys_with_prefix(""))

    def keys_with_prefix(self, prefix: str) -> list[str]:
        keys = [k for k in keys_with_prefix(self._raw, prefix) if k not in self._staged]
        keys += [k for k, v in self._staged.items() if v is not _DELETED and k.startswith(prefix)]
        return keys

    def __len__(self) -> int:
        return sum(1 for _ in self)

    @property
    def dirty(self) -> bool:
        return bool(self._staged)

    def changes(self) -> dict[str, V | None]:
        """The staged writes in order, ``None`` for a deletion (so values must not be None)."""
        return {k: None if v is _DELETED else v for k, v in self._staged.items()}

    def commit(self) -> int:
        """Apply the staged writes and deletions to ``raw``; returns how many."""
        n = len(self._staged)
        for key, value in self._staged.items():
            if value is _DELETED:
                self._raw.pop(key, None)
            else:
                self._raw[key] = value
        self._staged.clear()
        return n

    def discard(self) -> None:
        self._staged.clear()
