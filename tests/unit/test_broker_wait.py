"""``vigil worker`` waits for an unreachable broker with growing pauses, then gives up clearly."""

from __future__ import annotations

import pytest

from services.settings import Settings
from services.streaming.admin import BrokerUnreachable, wait_for_broker


class Fake:
    """A broker that answers after ``down`` probes; a clock moved only by ``sleep``."""

    def __init__(self, down: int) -> None:
        self.down = down
        self.probes = 0
        self.now = 0.0
        self.pauses: list[float] = []
        self.lines: list[tuple[str, float]] = []

    def probe(self, _settings: Settings) -> str | None:
        self.probes += 1
        return "KafkaTimeoutError" if self.probes <= self.down else None

    def sleep(self, s: float) -> None:
        self.pauses.append(s)
        self.now += s + 5.0  # each probe itself takes a while

    def run(self, settings: Settings) -> None:
        wait_for_broker(
            settings,
            lambda reason, s: self.lines.append((reason, s)),
            sleep=self.sleep,
            clock=lambda: self.now,
            probe=self.probe,
        )


def test_pauses_double_up_to_the_cap_and_each_retry_is_one_line() -> None:
    fake = Fake(down=8)
    fake.run(Settings(broker_retry_max_seconds=20))
    assert fake.pauses == [1, 2, 4, 8, 16, 20, 20, 20]
    assert fake.lines == [("KafkaTimeoutError", p) for p in fake.pauses]
    assert fake.probes == 9


def test_a_broker_that_answers_at_once_costs_one_probe() -> None:
    fake = Fake(down=0)
    fake.run(Settings())
    assert (fake.probes, fake.pauses) == (1, [])


def test_gives_up_after_the_wait_with_the_address_and_the_reason() -> None:
    fake = Fake(down=10**6)
    with pytest.raises(BrokerUnreachable, match=r"127\.0\.0\.1:1 within 60s \(KafkaTimeoutError\)"):
        fake.run(Settings(kafka_bootstrap="127.0.0.1:1", broker_wait_seconds=60))
    assert fake.now >= 60
    assert fake.probes < 20
