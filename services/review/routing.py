"""Which worker owns a conversation's review item, for routing API requests there.

The review table is keyed by conversation id like the input topic, so a conversation's item sits
in the partition Kafka's default partitioner picks for its key: ``murmur2(key bytes) & 0x7fffffff
% partitions`` (Java's ``Utils.toPositive(Utils.murmur2(key)) % numPartitions``; kafka-python and
aiokafka compute the same). :func:`owner_partition` is that formula. In the worker, let Faust
answer "which host has this partition" (:func:`faust_locator`); the API proxies a request for a
conversation it does not own to that host, and fans a list request out to every host.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from yarl import URL

from services.dataflow.partitioning import partition_of

__all__ = ["Locator", "faust_locator", "faust_peers", "owner_partition"]

#: ``locator(conversation_id)`` → base URL (``http://host:port``) of the owning worker, or
#: ``None`` when this process owns it (or routing is off).
Locator = Callable[[str], str | None]


def owner_partition(conversation_id: str, partitions: int) -> int:
    """The partition of ``conversation_id`` under Kafka's default partitioner (UTF-8 key)."""
    return partition_of(conversation_id, partitions)


def _ident(url: Any) -> tuple[str, int]:
    return (str(url.host or ""), int(url.port or 80))


def _host_of_partition(app: Any, table_name: str, partition: int) -> URL:
    """The URL of the worker whose active assignment of the table's changelog has ``partition``."""
    for host, assignment in app.router.table_metadata(table_name).items():
        if any(partition in parts for parts in assignment.values()):
            return URL(str(host))
    raise KeyError(partition)


def faust_locator(app: Any, table_name: str, partitions: int | None = None) -> Locator:
    """A locator over a running Faust app's partition assignment (``app.router``).

    With ``partitions``, the conversation's partition is :func:`owner_partition` (murmur2 of the
    raw UTF-8 id, where the worker's review table writes it) and the host comes from the table's
    assignment metadata. Without, Faust's ``router.key_store`` decides, which hashes the table's
    *serialized* key (JSON for ``key_type=str``) with the producer's metadata.

    Returns ``None`` for keys this worker owns and while the assignment is not known yet.
    """

    def locate(conversation_id: str) -> str | None:
        try:
            if partitions is None:
                url = app.router.key_store(table_name, conversation_id)
            else:
                part = owner_partition(conversation_id, partitions)
                url = _host_of_partition(app, table_name, part)
        except KeyError:
            return None
        if _ident(url) == _ident(app.conf.canonical_url):
            return None
        return f"{url.scheme}://{url.host}:{url.port}"

    return locate


def faust_peers(app: Any, table_name: str) -> Callable[[], Sequence[str]]:
    """The other workers' base URLs that hold partitions of the table (for list fan-out)."""

    def peers() -> list[str]:
        try:
            hosts = app.router.table_metadata(table_name)
        except KeyError:
            return []
        me = _ident(app.conf.canonical_url)
        out = []
        for host, assignment in hosts.items():
            if not any(assignment.values()):
                continue
            url = URL(str(host))
            if _ident(url) != me:
                out.append(f"{url.scheme}://{url.host}:{url.port}")
        return sorted(out)

    return peers
