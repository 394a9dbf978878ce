"""``vigil worker`` refuses the development keys printed in Vigil's source and docs.

The refusal comes before anything connects, so no broker is needed: the real command in process
(``CliRunner``), with the environment a careless deployment would have.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from services.cli import app
from services.evalsets.settings import DEV_EVALSET_KEY
from services.settings import KNOWN_DEV_KEYS, Settings, dev_keys_in_use

STRONG = "4f1c9a7e0b2d48e6a35f9c1d7e2b8a60f3c5d9e1a7b2c4d6e8f0a1b3c5d7e9f1"
KEYS = ("VIGIL_MEMORY_KEY", "VIGIL_SAMPLE_KEY", "VIGIL_EVALSET_KEY")


def run_worker(env: dict[str, str]) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["worker"], env={"VIGIL_KAFKA_BOOTSTRAP": "127.0.0.1:1", **env})
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.output


@pytest.mark.parametrize(
    "env",
    [
        {},  # nothing set: the built-in development keys
        dict.fromkeys(KEYS, "change-me-in-production"),  # the old docker-compose default
        {"VIGIL_MEMORY_KEY": STRONG, "VIGIL_SAMPLE_KEY": STRONG, "VIGIL_EVALSET_KEY": "CHANGEME"},
    ],
)
def test_worker_refuses_known_development_keys(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in (*KEYS, "VIGIL_ALLOW_DEV_KEYS"):
        monkeypatch.delenv(key, raising=False)
    code, out = run_worker(env)
    assert code == 2
    assert "a development key that anyone who read Vigil's source knows" in out
    assert "VIGIL_ALLOW_DEV_KEYS=true" in out
    weak = [k for k in KEYS if env.get(k, "") != STRONG]
    assert all(k in out for k in weak), out
    assert not any(k in out for k in KEYS if k not in weak)


def test_known_dev_keys_and_the_allowance(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VIGIL_EVALSET_KEY", raising=False)
    assert DEV_EVALSET_KEY in KNOWN_DEV_KEYS
    assert dev_keys_in_use(Settings(memory_key=STRONG, sample_key=STRONG)) == [
        "VIGIL_EVALSET_KEY"
    ]  # the evaluation-set key from the environment is still the built-in one
    allowed = Settings(allow_dev_keys=True)
    assert dev_keys_in_use(allowed)  # still reported: the worker warns instead of refusing
