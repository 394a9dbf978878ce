"""``deploy/kafka/launcher.py start`` with a stale ``VIGIL_KAFKA_BOOTSTRAP`` fails at once.

The README's recipe ``eval "export $(python deploy/kafka/launcher.py start)"`` leaves the variable
set after the broker has stopped; ``start`` then used to wait the whole timeout for a broker that
is gone. Now it checks whether anything listens first and says what to do. Run as the user runs
it: the real script in a subprocess, with a real closed port and a name that does not resolve.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

LAUNCHER = Path(__file__).resolve().parents[2] / "deploy" / "kafka" / "launcher.py"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens


@pytest.mark.parametrize(
    ("bootstrap", "why"),
    [
        (f"127.0.0.1:{closed_port()}", "Connection refused"),
        ("vigil-no-such-host.invalid:9092", "vigil-no-such-host.invalid:9092: "),
    ],
)
def test_stale_bootstrap_fails_at_once_with_the_fix(
    tmp_path: Path, bootstrap: str, why: str
) -> None:
    env = {**os.environ, "VIGIL_KAFKA_BOOTSTRAP": bootstrap}
    # The launcher is told to wait up to 180 s; the subprocess gets 90: waiting fails the test.
    res = subprocess.run(
        [sys.executable, str(LAUNCHER), "start", "--state-dir", str(tmp_path), "--timeout", "180"],
        capture_output=True,
        text=True,
        env=env,
        timeout=90,
    )
    assert res.returncode == 1, res.stderr
    assert f"VIGIL_KAFKA_BOOTSTRAP={bootstrap} is set, but nothing listens there" in res.stderr
    assert why in res.stderr
    assert "unset VIGIL_KAFKA_BOOTSTRAP" in res.stderr
    assert "Traceback" not in res.stderr
    assert res.stdout == ""  # nothing an `eval "export $(...)"` could pick up
