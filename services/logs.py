"""Log lines that repeat are written once per interval: :class:`RepeatFilter`.

While the broker is down, aiokafka retries every connection every 100 ms (its fixed
``retry_backoff_ms``, which Faust does not expose) and logs every failed attempt: a hundred lines a
second from one worker, each the same few messages. The filter lets one record of a kind through
per ``every`` seconds and appends to it how many like it were held back since the last one; a
kind is the logger, the level and the message template (``record.msg`` before its arguments), or
the ``repeat_key`` a caller gives in ``extra``. Records below ``min_level`` always pass.

The worker puts one filter on the handlers of the root logger once Faust has set up logging
(:class:`services.streaming.logs.VigilWorker`), so it covers Faust, mode, aiokafka and Vigil
alike.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["RepeatFilter"]

#: Kinds remembered at once (oldest forgotten first): a bound on the filter's state.
MAX_KINDS = 1024


class RepeatFilter(logging.Filter):
    """At most one record per kind per ``every`` seconds (see the module docstring)."""

    def __init__(
        self,
        every: float,
        *,
        min_level: int = logging.WARNING,
        clock: Callable[[], float] = time.monotonic,
        max_kinds: int = MAX_KINDS,
    ) -> None:
        super().__init__()
        self.every = every
        self.min_level = min_level
        self.clock = clock
        self.max_kinds = max_kinds
        #: kind -> [time it last passed, records held back since]
        self._kinds: OrderedDict[Hashable, list[Any]] = OrderedDict()
        #: Records held back in all.
        self.held_back = 0

    @staticmethod
    def kind(record: logging.LogRecord) -> Hashable:
        key = getattr(record, "repeat_key", None)
        if key is not None:
            return (record.name, key)
        return (record.name, record.levelno, str(record.msg))

    def filter(self, record: logging.LogRecord) -> bool:
        if self.every <= 0 or record.levelno < self.min_level:
            return True
        kind = self.kind(record)
        now = self.clock()
        seen = self._kinds.get(kind)
        if seen is not None and now - seen[0] < self.every:
            seen[1] += 1
            self.held_back += 1
            return False
        held = seen[1] if seen is not None else 0
        self._kinds[kind] = [now, 0]
        self._kinds.move_to_end(kind)
        while len(self._kinds) > self.max_kinds:
            self._kinds.popitem(last=False)
        if held:
            # The note has no ``%``: formatting (``msg % args``) happens later.
            record.msg = (
                f"{record.msg} ({held} more like it in the last {self.every:g}s not logged)"
            )
        return True
