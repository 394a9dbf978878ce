"""Kafka's default partition of a key: where a conversation's events, and its state, live.

``murmur2(key bytes) & 0x7fffffff % partitions`` (Java's ``Utils.toPositive(Utils.murmur2(key))
% numPartitions``; kafka-python and aiokafka compute the same, librdkafka's ``murmur2_random``
too). The hash is kafka-python's, imported only when there is more than one partition, so the
file runner never loads a Kafka client.
"""

from __future__ import annotations

from functools import cache
from typing import Any

__all__ = ["partition_of"]


@cache
def _murmur2() -> Any:
    from kafka.partitioner.default import murmur2

    return murmur2


def partition_of(key: str, partitions: int) -> int:
    """The partition of ``key`` (UTF-8) among ``partitions`` under Kafka's default partitioner.

    >>> partition_of("conv-1", 1)
    0
    """
    if partitions < 1:
        raise ValueError("partitions must be at least 1")
    if partitions == 1:
        return 0
    return (_murmur2()(key.encode("utf-8")) & 0x7FFFFFFF) % partitions
