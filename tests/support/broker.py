"""Kafka brokers for the integration tests and benchmarks: ``deploy/kafka/launcher.py`` by path.

:class:`PrivateBroker` is a broker of one test's own (its state dir under the test's temporary
folder), for what would disturb every other test on the session's broker: stopping it while a
worker runs, restarting it on the same port.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["ENV_BOOTSTRAP", "LAUNCHER_PATH", "PrivateBroker", "load_launcher"]

LAUNCHER_PATH = Path(__file__).resolve().parents[2] / "deploy" / "kafka" / "launcher.py"
ENV_BOOTSTRAP = "VIGIL_KAFKA_BOOTSTRAP"


def load_launcher() -> ModuleType:
    """Import deploy/kafka/launcher.py by path (deploy/ is not a package)."""
    name = "vigil_kafka_launcher"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, LAUNCHER_PATH)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {LAUNCHER_PATH}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class PrivateBroker:
    """A single-node broker in ``state_dir``; :meth:`stop` and :meth:`start` keep its port and
    its data, so clients reconnect to the same address."""

    def __init__(self, state_dir: Path) -> None:
        self.launcher: Any = load_launcher()
        self.state_dir = state_dir
        self.bootstrap: str | None = None

    def start(self) -> str:
        # The launcher reuses $VIGIL_KAFKA_BOOTSTRAP when it is set: hide it while starting.
        shared = os.environ.pop(ENV_BOOTSTRAP, None)
        try:
            bootstrap = str(self.launcher.start(self.state_dir))
        finally:
            if shared is not None:
                os.environ[ENV_BOOTSTRAP] = shared
        if self.bootstrap is not None and bootstrap != self.bootstrap:
            raise AssertionError(f"the broker came back on {bootstrap}, not {self.bootstrap}")
        self.bootstrap = bootstrap
        return bootstrap

    def stop(self) -> None:
        """SIGTERM (controlled shutdown), SIGKILL after 30 s."""
        self.launcher.stop(self.state_dir)

    def __enter__(self) -> PrivateBroker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
