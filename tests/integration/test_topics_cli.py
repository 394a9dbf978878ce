"""``vigil topics create`` on the real broker: every topic once, reported as it really went.

A fresh app with its own names for every topic (feature topics included): the first run reports
each topic ``created`` exactly once — the compacted ones too, which used to be listed twice and
reported ``exists`` on the second line — and a second run reports each ``exists``. A malformed
``VIGIL_REVIEW_TOKENS`` (which only the worker's review API reads) does not stop it.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from tests.support.worker_process import VigilStack, run_cli


def _states(out: str) -> list[tuple[str, str]]:
    pairs = []
    for line in out.splitlines():
        name, sep, state = line.rpartition(": ")
        if sep and state in ("created", "exists"):
            pairs.append((name.strip(), state))
    return pairs


def test_topics_create_reports_each_topic_once_as_it_went(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:10]
    own = {
        "VIGIL_EVALSET_TOPIC": f"it-topics-evalset-{tag}",
        "VIGIL_EVALSET_ARCHIVE_TOPIC": f"it-topics-archive-{tag}",
        "VIGIL_EVALSET_LABELS_TOPIC": f"it-topics-evlabels-{tag}",
        "VIGIL_REVIEW_ACTIONS_TOPIC": f"it-topics-actions-{tag}",
        "VIGIL_REVIEW_LABELS_TOPIC": f"it-topics-rvlabels-{tag}",
        "VIGIL_ALERTS_TOPIC": f"it-topics-alerts-{tag}",
        "VIGIL_ALERTS_COUNTS_TOPIC": f"it-topics-counts-{tag}",
        "VIGIL_REVIEW_TOKENS": "{not json",
    }
    stack = VigilStack(kafka_bootstrap, tmp_path / "stack", "topics", **own)
    args = ["topics", "create", "--partitions", "2"]
    first = _states(run_cli(args, stack.env()))
    names = [n for n, _ in first]
    assert len(names) == len(set(names)), first
    assert {state for _, state in first} == {"created"}, first
    compacted = {
        stack.changelog_topic,
        own["VIGIL_EVALSET_TOPIC"],
        own["VIGIL_EVALSET_ARCHIVE_TOPIC"],
    }
    assert compacted <= set(names)
    assert {v for k, v in own.items() if k.endswith("_TOPIC")} <= set(names)

    second = _states(run_cli(args, stack.env()))
    assert [n for n, _ in second] == names
    assert {state for _, state in second} == {"exists"}

    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, client_id="it-topics")
    try:
        found = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, name) for name in sorted(compacted)]
        )
    finally:
        admin.close()
    [by_topic] = found.values()
    policies = {name: str(cfg["cleanup.policy"]) for name, cfg in by_topic.items()}
    assert all("compact" in policies[name] for name in compacted), policies
