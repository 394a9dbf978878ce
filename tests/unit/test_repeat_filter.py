"""RepeatFilter: a log line that repeats is written once per interval, with a count of the rest."""

from __future__ import annotations

import logging

import pytest

from services.logs import RepeatFilter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _record(
    msg: str, *args: object, level: int = logging.ERROR, name: str = "aiokafka"
) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, args, None)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_one_line_per_kind_per_interval_and_the_next_counts_the_rest(clock: Clock) -> None:
    f = RepeatFilter(10.0, clock=clock)
    template = "Unable connect to node with id %s: %s"
    passed = []
    for i in range(100):  # ten seconds of aiokafka retrying every 100 ms
        clock.now += 0.1
        rec = _record(template, 1, f"refused {i}")
        if f.filter(rec):
            passed.append(rec.getMessage())
    assert len(passed) == 1
    assert passed[0] == "Unable connect to node with id 1: refused 0"
    clock.now += 0.5
    rec = _record(template, 1, "refused again")
    assert f.filter(rec)
    assert rec.getMessage() == (
        "Unable connect to node with id 1: refused again "
        "(99 more like it in the last 10s not logged)"
    )
    assert f.held_back == 99


def test_kinds_are_logger_level_and_template(clock: Clock) -> None:
    f = RepeatFilter(10.0, clock=clock)
    assert f.filter(_record("a %s", 1))
    assert f.filter(_record("b %s", 1))  # another template
    assert f.filter(_record("a %s", 1, name="faust"))  # another logger
    assert f.filter(_record("a %s", 1, level=logging.WARNING))  # another level
    assert not f.filter(_record("a %s", 2))  # same kind, other arguments


def test_repeat_key_overrides_the_template(clock: Clock) -> None:
    f = RepeatFilter(10.0, clock=clock)

    def keyed(key: str) -> logging.LogRecord:
        rec = _record("%s failed at %s", "screening", "t/0/1")
        rec.repeat_key = key
        return rec

    assert f.filter(keyed("screening:KeyError"))
    assert f.filter(keyed("checking:KeyError"))
    assert not f.filter(keyed("screening:KeyError"))


def test_info_lines_and_a_zero_interval_always_pass(clock: Clock) -> None:
    f = RepeatFilter(10.0, clock=clock)
    assert all(f.filter(_record("Starting...", level=logging.INFO)) for _ in range(5))
    off = RepeatFilter(0.0, clock=clock)
    assert all(off.filter(_record("x")) for _ in range(5))


def test_a_percent_in_the_message_survives_the_note(clock: Clock) -> None:
    f = RepeatFilter(1.0, clock=clock)
    assert f.filter(_record("100%% of %s", "x"))
    assert not f.filter(_record("100%% of %s", "x"))
    clock.now += 2
    rec = _record("100%% of %s", "y")
    assert f.filter(rec)
    assert rec.getMessage() == "100% of y (1 more like it in the last 1s not logged)"


def test_the_kinds_remembered_are_bounded(clock: Clock) -> None:
    f = RepeatFilter(10.0, clock=clock, max_kinds=3)
    for i in range(10):
        assert f.filter(_record(f"kind {i}"))
    assert len(f._kinds) == 3
    assert not f.filter(_record("kind 9"))
    assert f.filter(_record("kind 0"))  # forgotten: passes again


def test_the_worker_filters_its_root_handlers() -> None:
    from services.streaming.logs import VigilWorker

    handler = logging.StreamHandler()
    root = logging.getLogger("vigil-test-root")
    root.addHandler(handler)
    try:
        worker = VigilWorker.__new__(VigilWorker)
        worker.repeat_filter = RepeatFilter(5.0)
        worker.on_setup_root_logger(root, logging.INFO)
        assert worker.repeat_filter in handler.filters
    finally:
        root.removeHandler(handler)
