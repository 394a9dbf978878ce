"""The example log cycled into a larger file: the RAG traffic the parity and memory tests use.

Each cycle is a copy of ``examples/chat-events.jsonl`` (valid events only) whose conversation and
event ids get a cycle suffix and whose timestamps move ``shift`` further, so every event id is
unique, every conversation keeps its turn order, and a long file spans several ISO weeks (the
evaluation sets then close, rotate and archive periods). Deterministic: the same arguments give
the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tests.support.chat_events import EXAMPLES_PATH, invalid_lines, load_example_conversations

__all__ = ["cycled_example_events", "write_cycled_example"]


def _shifted(stamp: str, shift: timedelta) -> str:
    moved = datetime.fromisoformat(stamp.replace("Z", "+00:00")) + shift
    return moved.isoformat()


def cycled_example_events(
    n: int, *, shift: timedelta = timedelta(days=1), path: Path = EXAMPLES_PATH
) -> Iterator[dict[str, Any]]:
    """``n`` events: the example log's valid events, cycle after cycle, re-keyed and shifted."""
    conversations = load_example_conversations(path)
    if not conversations:
        raise FileNotFoundError(f"no valid events in {path}")
    # File order of the original events (conversations interleave in the example log).
    order: list[dict[str, Any]] = []
    with open(path, "rb") as fh:
        wanted = {id(e): e for conv in conversations for e in conv}
        by_event = {e["event_id"]: e for e in wanted.values()}
        for raw in fh:
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            original = by_event.get(obj.get("event_id")) if isinstance(obj, dict) else None
            if original is not None:
                order.append(original)
    produced = 0
    cycle = 0
    while True:
        for original in order:
            if produced >= n:
                return
            ev = dict(original)
            if cycle:
                ev["event_id"] = f"{original['event_id']}.c{cycle:04d}"
                ev["conversation_id"] = f"{original['conversation_id']}.c{cycle:04d}"
                ev["timestamp"] = _shifted(original["timestamp"], shift * cycle)
            produced += 1
            yield ev
        cycle += 1


def write_cycled_example(
    path: Path, n: int, *, shift: timedelta = timedelta(days=1), invalid_every: int = 0
) -> Path:
    """Write :func:`cycled_example_events` as compact JSON lines; with ``invalid_every``, one of
    :func:`~tests.support.chat_events.invalid_lines` (in turn) after every that many events."""
    bad = [raw for _, raw in invalid_lines("cyc")]
    with open(path, "wb") as fh:
        for i, ev in enumerate(cycled_example_events(n, shift=shift), start=1):
            line = json.dumps(ev, ensure_ascii=False, separators=(",", ":"))
            fh.write(line.encode("utf-8") + b"\n")
            if invalid_every and i % invalid_every == 0:
                fh.write(bad[(i // invalid_every) % len(bad)] + b"\n")
    return path
