"""The review queue over a ``vigil scan`` output folder, without Kafka (``vigil review serve``).

The same API and page as the worker's, over the same :class:`~services.review.store.TableStore`
— here over a durable SQLite table (:meth:`SpillFile.durable
<services.dataflow.spill.SpillFile.durable>`, the standard library's ``sqlite3``) beside the
scan's outputs. What the worker publishes to topics goes to append-only files in the folder:

==========================  ==============================================================
``review-state.sqlite``     the items (current state; private, mode 0600)
``review-actions.jsonl``    every reviewer action, applied or rejected, and every reveal
                            (the worker's ``vigil.review.actions``)
``review-labels.jsonl``     every :class:`~schemas.review.ReviewLabel` (``vigil.review.labels``)
``labels.jsonl``            the same labels as :class:`~schemas.evalset.EvalLabel`, the form
                            ``vigil evalset export --labels`` and ``vigil eval run --labels`` join
==========================  ==============================================================

At start the folder's ``review.jsonl`` is imported (an item already in the table is kept, with
its reviewers' work, unless the file holds a later round of its conversation), and so are the
random unflagged cases of ``evalset.jsonl`` (:mod:`services.review.audit`), so reviewers can say
what the rules missed. A scan stamps items with event time; an imported open item stays open for
``open_ttl_hours`` from the import. A timer applies the passage of time as the worker's does
(:meth:`ReviewCore.tick <services.review.core.ReviewCore.tick>`): leases lapse, items expire,
finished items are purged after ``retention_hours``. Labels and actions are files the scan's
owner reads: like ``review.jsonl`` they hold masked text only (a scan keeps no values to reveal).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from aiohttp import web
from pydantic import ValidationError

from schemas.evalset import EvalCase
from schemas.review import ReviewItem, ReviewLabel
from services.dataflow.spill import SpillFile, SqliteStore
from services.dataflow.state import MemoryStore
from services.evalsets.labels import label_from_review
from services.review.api import ReviewAPI, create_review_app
from services.review.audit import item_from_case
from services.review.auth import TokenAuth
from services.review.core import ReviewCore, ReviewState, review_specs
from services.review.policy import TriagePolicy
from services.review.settings import ReviewSettings, load_reviewer_config
from services.review.store import TableStore

__all__ = ["FolderError", "FolderImport", "FolderQueue", "JsonlLog", "folder_app"]

STATE_FILE = "review-state.sqlite"
ACTIONS_FILE = "review-actions.jsonl"
REVIEW_LABELS_FILE = "review-labels.jsonl"
LABELS_FILE = "labels.jsonl"
log = logging.getLogger("vigil.review")
_TIMER = web.AppKey("vigil.review.timer", asyncio.Task[None])


class FolderError(ValueError):
    """The folder cannot be served (not a scan output, an unreadable file); names file and line."""


class JsonlLog:
    """An append-only JSONL file (mode 0600): each record is written and synced at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._fh: IO[bytes] = os.fdopen(fd, "ab")

    def write(self, line: bytes) -> None:
        self._fh.write(line.rstrip(b"\n") + b"\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()


class _Durable(MutableMapping[str, bytes]):
    """The items table as the API's store writes it: every write committed at once."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store

    def __getitem__(self, key: str) -> bytes:
        return self.store[key]

    def __setitem__(self, key: str, value: bytes) -> None:
        self.store.now = time.time()
        self.store[key] = value
        self.store.flush()

    def __delitem__(self, key: str) -> None:
        del self.store[key]
        self.store.flush()

    def __contains__(self, key: object) -> bool:
        return key in self.store

    def __iter__(self) -> Iterator[str]:
        return iter(self.store)

    def __len__(self) -> int:
        return len(self.store)


@dataclass(frozen=True)
class FolderImport:
    """What :meth:`FolderQueue.import_folder` did."""

    imported: int
    kept: int
    replaced: int
    audit: int


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise FolderError(f"{path}: cannot read: {exc.strerror}") from None
    with fh:
        for number, raw in enumerate(fh, start=1):
            if raw.strip():
                yield number, raw


class FolderQueue:
    """The review queue of one scan output folder (see the module docstring)."""

    def __init__(self, folder: Path, policy: TriagePolicy) -> None:
        if not folder.is_dir():
            raise FolderError(f"{folder}: no such folder")
        if not (folder / "review.jsonl").is_file():
            raise FolderError(f"{folder}: no review.jsonl (is it a `vigil scan --out` folder?)")
        self.folder = folder
        self.policy = policy
        rs = ReviewSettings()
        specs = review_specs(rs, policy)
        self.spill = SpillFile.durable(folder / STATE_FILE)
        self.items = self.spill.store(specs["review-items"])
        self.core = ReviewCore(
            policy,
            key=b"",
            max_value_bytes=rs.max_value_bytes,
            cache_bytes=rs.cache_bytes,
            retain_originals=False,
        )
        self.state = ReviewState(
            items=self.items,
            context=MemoryStore(specs["review-context"]),
            caps=MemoryStore(specs["review-caps"]),
        )
        self.actions = JsonlLog(folder / ACTIONS_FILE)
        self.review_labels = JsonlLog(folder / REVIEW_LABELS_FILE)
        self.labels = JsonlLog(folder / LABELS_FILE)
        self.store = TableStore(
            _Durable(self.items),
            actions=self._send_action,
            labels=self._send_label,
            encode=self.core.bound.encode_item,
            cache_bytes=rs.cache_bytes,
        )

    async def _send_action(self, *, key: bytes, value: bytes) -> None:
        self.actions.write(value)

    async def _send_label(self, *, key: bytes, value: bytes) -> None:
        self.review_labels.write(value)
        label = label_from_review(ReviewLabel.model_validate_json(value))
        self.labels.write(label.model_dump_json().encode())

    def _put(self, item: ReviewItem) -> None:
        self.items.now = time.time()
        self.items[item.conversation_id] = self.core.bound.encode_item(item)[1]

    def import_folder(self, now: datetime | None = None) -> FolderImport:
        """Import ``review.jsonl`` and the unflagged cases of ``evalset.jsonl``."""
        moment = now or datetime.now(UTC)
        ttl = timedelta(hours=self.policy.queue.open_ttl_hours)
        imported = kept = replaced = audit = 0
        path = self.folder / "review.jsonl"
        for number, raw in _lines(path):
            try:
                item = ReviewItem.model_validate_json(raw)
            except ValidationError as exc:
                raise FolderError(
                    f"{path}:{number}: not a review item ({exc.error_count()} error(s))"
                ) from None
            stored = self.store.get(item.conversation_id)
            if stored is not None and stored.round >= item.round:
                kept += 1
                continue
            if item.status == "open":
                item = item.model_copy(update={"expires_at": max(item.expires_at, moment + ttl)})
            self._put(item)
            imported += stored is None
            replaced += stored is not None
        cases = self.folder / "evalset.jsonl"
        if cases.is_file():
            latest: dict[str, EvalCase] = {}
            for number, raw in _lines(cases):
                try:
                    case = EvalCase.model_validate(json.loads(raw))
                except (ValueError, ValidationError):
                    raise FolderError(f"{cases}:{number}: not an evaluation case") from None
                old = latest.get(case.conversation_id)
                if old is None or (case.timestamp or moment) > (old.timestamp or moment):
                    latest[case.conversation_id] = case
            for cid, case in sorted(latest.items()):
                if cid in self.items:
                    continue
                found = item_from_case(case, self.policy, now=moment)
                if found is not None:
                    self._put(found)
                    audit += 1
        self.items.flush()
        return FolderImport(imported=imported, kept=kept, replaced=replaced, audit=audit)

    def tick(self, now: datetime | None = None) -> int:
        """The passage of time over every item; how many changed."""
        moment = now or datetime.now(UTC)
        self.items.now = moment.timestamp()
        changed = self.core.tick(self.state, moment)
        self.items.expire(moment.timestamp())
        self.items.flush()
        return len(changed)

    def close(self) -> None:
        for log in (self.actions, self.review_labels, self.labels):
            log.close()
        self.spill.close()

    def __enter__(self) -> FolderQueue:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def folder_app(
    queue: FolderQueue,
    auth: TokenAuth,
    rs: ReviewSettings,
    *,
    tick_seconds: float | None = None,
) -> web.Application:
    """The API and the page over ``queue``, with its timer; closes the queue on cleanup."""
    schema, view = load_reviewer_config(rs, queue.policy)
    api = ReviewAPI(queue.store, auth, queue.policy.queue, schema=schema, view=view)
    app = create_review_app(api)
    every = tick_seconds if tick_seconds is not None else rs.tick_seconds

    async def timer() -> None:
        while True:
            await asyncio.sleep(every)
            try:
                queue.tick()
            except Exception as exc:  # the timer must live on
                log.error("review timer failed: %s", type(exc).__name__)

    async def start(_: web.Application) -> None:
        app[_TIMER] = asyncio.create_task(timer())

    async def stop(_: web.Application) -> None:
        task = app[_TIMER]
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        queue.close()

    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    return app
