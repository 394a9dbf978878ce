"""Integration tests against a real Kafka broker.

The session-scoped ``kafka_bootstrap`` fixture returns ``$VIGIL_KAFKA_BOOTSTRAP`` when it is set
(after checking the broker answers); otherwise it starts a private broker with
``deploy/kafka/launcher.py`` in a temporary state dir and stops it when the session ends.
A broker that cannot start fails the tests: they are never skipped.
Every test in this folder is marked ``kafka``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.broker import ENV_BOOTSTRAP, load_launcher
from tests.support.worker_process import PARTITIONS, VigilStack

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # This hook sees the whole session's items: mark only the ones under this folder.
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.kafka)


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    launcher = load_launcher()
    external = os.environ.get(ENV_BOOTSTRAP)
    if external:
        if not launcher.wait_ready(external, timeout_s=60):
            pytest.fail(f"{ENV_BOOTSTRAP}={external} is set but no broker answers there", False)
        yield external
        return

    state_dir = tmp_path_factory.mktemp("kafka")
    t0 = time.monotonic()
    error = None
    try:
        bootstrap = launcher.start(state_dir)
    except Exception as exc:
        error = f"the Kafka broker could not start: {exc}"
        launcher.stop(state_dir)
    if error is not None:  # outside the except block: no chained traceback
        pytest.fail(error, pytrace=False)
    print(f"\nKafka ready at {bootstrap} in {time.monotonic() - t0:.1f}s (state: {state_dir})")
    # Subprocesses started by tests (workers, CLIs) find the broker the same way.
    os.environ[ENV_BOOTSTRAP] = bootstrap
    try:
        yield bootstrap
    finally:
        os.environ.pop(ENV_BOOTSTRAP, None)
        launcher.stop(state_dir)


@pytest.fixture
def vigil_stack(kafka_bootstrap: str, tmp_path: Path) -> Iterator[Callable[..., VigilStack]]:
    """Factory of :class:`VigilStack`: fresh topics (created) and app id on the session broker.

    ``make(name, partitions=4, create=True, **env)`` returns a stack (its topics created with
    ``vigil topics create`` unless ``create`` is false); every worker it started is stopped at
    teardown (SIGTERM, then SIGKILL after 30 s).
    """
    stacks: list[VigilStack] = []

    def make(
        name: str, partitions: int = PARTITIONS, *, create: bool = True, **env: str
    ) -> VigilStack:
        work = tmp_path / f"stack-{len(stacks) + 1}"
        stack = VigilStack(kafka_bootstrap, work, name, partitions, **env)
        stacks.append(stack)
        if create:
            stack.create_topics()
        return stack

    try:
        yield make
    finally:
        for stack in stacks:
            stack.close()
