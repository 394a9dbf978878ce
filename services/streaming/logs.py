"""The worker process: Faust's worker with :class:`~services.logs.RepeatFilter` on the root
logger's handlers (a broker that is down must not flood the log) and no terminal spinner."""

from __future__ import annotations

import logging
from typing import Any

import faust

from services.logs import RepeatFilter

__all__ = ["VigilWorker"]


class VigilWorker(faust.Worker):
    """Faust's worker with :class:`RepeatFilter` on the root logger's handlers."""

    def __init__(self, *args: Any, repeat_seconds: float = 10.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Faust's terminal spinner sets the root logger to DEBUG so that it can spin on every
        # log record: every debug call of aiokafka and Faust then builds a record (a tenth of
        # the worker's CPU). A service has no terminal to spin on.
        self.spinner = None
        self.repeat_filter = RepeatFilter(repeat_seconds) if repeat_seconds > 0 else None

    def on_setup_root_logger(self, logger: logging.Logger, level: int) -> None:
        super().on_setup_root_logger(logger, level)
        if self.repeat_filter is not None:
            for handler in logger.handlers:
                handler.addFilter(self.repeat_filter)
