"""The benchmarks' data generators make the traffic their figures claim to describe.

Figures of ``BENCHMARKS.md`` are only as good as the files they were measured on: an earlier
``write_events_file`` gave every event the same event and conversation id (issue 9), so a
"200,000-event scan" described one conversation. These tests read the generated files back the
way ``vigil scan`` does and check what the benchmarks assume: distinct event ids, many
conversations of about six turns, turn order, alternating roles, three languages, retrieval
passages on RAG answers, and the event size of each mix.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from statistics import mean
from typing import Any

import pytest

from benchmarks import _common as C
from schemas.events import ChatEvent

KIB = 1024


def _read(path: Path) -> list[tuple[bytes, dict[str, Any]]]:
    raw = [ln for ln in path.read_bytes().splitlines() if ln.strip()]
    return [(ln, json.loads(ln)) for ln in raw]


def _conversations(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for ev in events:  # file order
        by[ev["conversation_id"]].append(ev)
    return by


def _check_traffic(events: list[dict[str, Any]], turns_mean: tuple[float, float]) -> None:
    ids = [ev["event_id"] for ev in events]
    assert len(set(ids)) == len(ids), "event ids repeat"
    convs = _conversations(events)
    assert len(convs) >= len(events) / 8, f"only {len(convs)} conversations"
    lo, hi = turns_mean
    assert lo <= len(events) / len(convs) <= hi
    for cid, turns in convs.items():
        idx = [ev["turn_index"] for ev in turns]
        assert idx == sorted(idx) and len(set(idx)) == len(idx), f"{cid}: turn order {idx}"
        assert len({ev.get("tenant") for ev in turns}) == 1, f"{cid}: tenant changes"
        assert len({ev.get("language") for ev in turns}) == 1, f"{cid}: language changes"
    langs = Counter(ev["language"] for ev in events)
    assert set(langs) == {"en", "nl", "vi"}, langs
    assert min(langs.values()) >= 0.1 * len(events), langs


@pytest.mark.parametrize("mix", C.EVENT_MIXES)
def test_events_file_is_many_conversations_in_turn_order(tmp_path: Path, mix: str) -> None:
    path = tmp_path / "events.jsonl"
    n = 1200
    # a pool smaller than the file: the cycle must still give fresh ids and aligned turns
    C.write_events_file(path, n, KIB, mix=mix, pool=300)
    rows = _read(path)
    events = [ev for _, ev in rows]
    assert len(events) == n
    for raw, _ in rows:
        ChatEvent.model_validate_json(raw)  # every generated line is a valid event
    _check_traffic(events, (6.0, 6.0))
    for turns in _conversations(events).values():
        assert [ev["turn_index"] for ev in turns] == list(range(6))
        assert [ev["role"] for ev in turns] == ["user", "assistant"] * 3
    stamps = [ev["timestamp"] for ev in events]
    assert stamps == sorted(stamps) and len(set(stamps)) == n  # one second apart, in file order


def test_rag_mix_answers_carry_passages_and_events_are_one_kib(tmp_path: Path) -> None:
    path = tmp_path / "rag.jsonl"
    C.write_events_file(path, 1200, KIB, mix="rag")
    rows = _read(path)
    sizes = [len(raw) for raw, _ in rows]
    assert 0.9 * KIB <= mean(sizes) <= 1.1 * KIB, mean(sizes)
    assert max(sizes) <= 1.5 * KIB
    answers = [ev for _, ev in rows if ev["role"] == "assistant"]
    questions = [ev for _, ev in rows if ev["role"] == "user"]
    assert all(len(ev.get("retrieval") or []) >= 2 for ev in answers)
    assert not any(ev.get("retrieval") for ev in questions)
    library = {p["doc_id"]: p["text"] for p in C.rag_library()}
    cited = 0
    for ev in answers:
        docs = [p["doc_id"] for p in ev["retrieval"]]
        assert len(set(docs)) == len(docs)
        assert all(library[p["doc_id"]] == p["text"] for p in ev["retrieval"])
        assert [p["rank"] for p in ev["retrieval"]] == list(range(1, len(docs) + 1))
        if f"[doc:{docs[0]}]" in ev["content"]:
            cited += 1
    # most answers restate and cite their top passage; some abstain
    assert 0.8 * len(answers) <= cited < len(answers)
    # passages recur across answers (a library, not one text per answer)
    used = Counter(p["doc_id"] for ev in answers for p in ev["retrieval"])
    assert len(used) <= len(library) < sum(used.values()) / 4


def test_contents_have_the_requested_size() -> None:
    for mix in C.MIXES:
        events = list(C.make_events(60, 2 * KIB, mix=mix))
        sizes = [len(ev["content"].encode("utf-8")) for ev in events]
        assert all(2 * KIB - 4 <= s <= 2 * KIB for s in sizes), (mix, sizes)


def test_min_bytes_extends_the_file(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    size = C.write_events_file(path, 0, 512, min_bytes=200 * KIB, pool=60)
    assert size >= 200 * KIB
    events = [ev for _, ev in _read(path)]
    _check_traffic(events, (6.0, 6.0))


def test_example_mix_is_the_example_log_with_unique_ids(tmp_path: Path) -> None:
    path = tmp_path / "examples.jsonl"
    n = 2000  # several cycles of the 414-event log
    C.write_example_file(path, n)
    rows = _read(path)
    events = [ev for _, ev in rows]
    assert len(events) == n
    for raw, _ in rows:
        ChatEvent.model_validate_json(raw)
    _check_traffic(events, (2.5, 8.0))
    assert mean(len(ev["content"].encode("utf-8")) for ev in events) < 200  # ~100-byte messages
    assert any(ev.get("retrieval") for ev in events)
    for turns in _conversations(events).values():
        roles = [ev["role"] for ev in turns]
        assert all(a != b for a, b in itertools.pairwise(roles)), roles


def test_the_dense_example_mix_keeps_ids_and_turns_and_spans_seconds_per_event(
    tmp_path: Path,
) -> None:
    """``--cycle-shift 414`` (``C.DENSE_SHIFT``): the same traffic, its cycles about a second per
    event apart in time, so 2,000 events span hours (the day-per-cycle default spans days)."""
    dense, daily = tmp_path / "dense.jsonl", tmp_path / "daily.jsonl"
    n = 2000
    C.write_example_file(dense, n, shift_seconds=C.DENSE_SHIFT)
    C.write_example_file(daily, n)
    events = [ev for _, ev in _read(dense)]
    _check_traffic(events, (2.5, 8.0))
    for turns in _conversations(events).values():
        stamps = [datetime.fromisoformat(ev["timestamp"]) for ev in turns]
        assert stamps == sorted(stamps)

    def span(path: Path, first: int | None = None) -> timedelta:
        stamps = [datetime.fromisoformat(ev["timestamp"]) for _, ev in _read(path)][:first]
        return max(stamps) - min(stamps)

    cycles = n // 414
    one_cycle = span(dense, 414)  # the bundled log itself, about two and a half days
    assert span(dense) <= one_cycle + timedelta(seconds=C.DENSE_SHIFT * cycles)
    assert span(daily) >= timedelta(days=cycles)


def test_unknown_mix_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown mix"):
        next(C.make_events(1, KIB, mix="rag2"))
