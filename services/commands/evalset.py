"""``vigil evalset export`` and ``vigil eval run``: evaluation sets out of production, and their
metrics and CI gates.

::

    vigil evalset export --out FILE [--period P] [--format jsonl|ragas]
                         [--cases FILE | --bootstrap HOST:PORT --topic vigil.evalset]
                         [--labels FILE] [--labels-topic vigil.review.labels] [--no-dedupe]
    vigil eval run --cases FILE [--gates gates.yaml] [--json OUT] [--plot OUT.png]
                   [--table OUT.csv] [--labels FILE] [--labels-topic vigil.review.labels]
                   [--k 5 ...]

``export`` reads cases from a file (``vigil scan``'s ``evalset.jsonl``, an earlier export) or
from the compacted case topic the workers publish (read to its end offsets: the last value of
each case id, deleted cases left out), keeps one period when asked, joins a labels file, sets
near-duplicate questions aside and writes JSONL or the RAGAS form. Without ``--cases`` it reads
Kafka: ``--bootstrap`` defaults to ``VIGIL_KAFKA_BOOTSTRAP`` (with its SASL settings) and
``--topic`` to ``VIGIL_EVALSET_TOPIC``. Labels join by the answer's event id: from a file of
``EvalLabel`` (``vigil review serve`` writes ``labels.jsonl``) and/or from the review queue's
labels topic (``--labels-topic``, its ``ReviewLabel`` records read to the end).

``eval run`` is :func:`services.evalrun.run_eval_cli`; its exit code is the command's: ``0`` all
gates passed, ``1`` a gate failed (each failed gate is named), ``2`` a file could not be read.
``export`` exits ``2`` on unreadable input or bad options and ``1`` when Kafka cannot be read.
"""

from __future__ import annotations

import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console

from schemas.evalset import EvalCase, EvalLabel
from schemas.review import ReviewLabel
from services.evalsets.export import CaseFileError

__all__ = [
    "ExportError",
    "eval_app",
    "evalset_app",
    "read_live_cases",
    "read_review_labels",
    "read_topic",
]

evalset_app = typer.Typer(
    no_args_is_help=True, add_completion=False, help="Evaluation sets sampled from production."
)
eval_app = typer.Typer(
    no_args_is_help=True, add_completion=False, help="Metrics and CI gates of an evaluation set."
)


# Callbacks keep each app a command group, also on its own (tests) and with one command.
@evalset_app.callback()
def _evalset_group() -> None:
    """Evaluation sets sampled from production."""


@eval_app.callback()
def _eval_group() -> None:
    """Metrics and CI gates of an evaluation set."""


out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, soft_wrap=True, highlight=False)


class ExportFormat(StrEnum):
    jsonl = "jsonl"
    ragas = "ragas"


class ExportError(Exception):
    """The case topic could not be read (the message names the topic, never case content)."""


def read_topic(consumer: Any, topic: str, *, timeout_s: float = 60.0) -> list[tuple[int, Any]]:
    """``(partition, record)`` of every record of ``topic`` up to the end offsets taken at the
    start, in offset order per partition (partition after partition). ``consumer`` is a
    kafka-python ``KafkaConsumer`` without a group (nothing is committed); it is closed here."""
    from kafka import TopicPartition

    records: list[tuple[int, Any]] = []
    try:
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            raise ExportError(f"topic {topic!r} does not exist")
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        deadline = time.monotonic() + timeout_s
        while any(consumer.position(tp) < end[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise ExportError(f"topic {topic!r} not read to its end within {timeout_s:.0f}s")
            for tp, batch in consumer.poll(timeout_ms=500).items():
                # Records past the end offsets were written after the start: not read.
                records += [(tp.partition, r) for r in batch if r.offset < end[tp]]
    finally:
        consumer.close()
    return sorted(records, key=lambda pr: (pr[0], pr[1].offset))


def read_live_cases(
    consumer: Any,
    topic: str,
    *,
    timeout_s: float = 60.0,
) -> list[EvalCase]:
    """The live cases of a compacted case topic: every partition read from the beginning up to
    the end offsets taken at the start, last value per key, tombstones applied.

    ``consumer`` is a kafka-python ``KafkaConsumer`` without a group (nothing is committed); it
    is closed here.
    """
    latest: dict[str, bytes] = {}
    for _, record in read_topic(consumer, topic, timeout_s=timeout_s):
        if record.key is None:
            continue  # not a case record
        key = record.key.decode("utf-8", errors="replace")
        if record.value is None:
            latest.pop(key, None)
        else:
            latest[key] = record.value
    cases: list[EvalCase] = []
    for key in sorted(latest):
        try:
            case = EvalCase.model_validate_json(latest[key])
        except ValidationError as exc:
            raise ExportError(
                f"topic {topic!r}: the record of {key!r} is not a case ({exc.error_count()} "
                "error(s))"
            ) from None
        if case.case_id != key:
            raise ExportError(f"topic {topic!r}: the record of {key!r} holds {case.case_id!r}")
        cases.append(case)
    return cases


def read_review_labels(consumer: Any, topic: str, *, timeout_s: float = 60.0) -> list[EvalLabel]:
    """The review queue's labels (``ReviewLabel`` records of ``vigil.review.labels``) as
    evaluation labels, in topic order (corrections after what they correct)."""
    from services.evalsets.labels import label_from_review

    out: list[EvalLabel] = []
    for partition, record in read_topic(consumer, topic, timeout_s=timeout_s):
        if record.value is None:
            continue
        try:
            review = ReviewLabel.model_validate_json(record.value)
        except ValidationError as exc:
            raise ExportError(
                f"topic {topic!r}: offset {record.offset} of partition {partition} is not "
                f"a review label ({exc.error_count()} error(s))"
            ) from None
        out.append(label_from_review(review))
    return out


def _kafka_consumer(bootstrap: str | None) -> Any:
    from kafka import KafkaConsumer

    from services.settings import Settings
    from services.streaming.admin import client_config

    settings = Settings()
    config = client_config(settings)
    if bootstrap:
        config["bootstrap_servers"] = bootstrap.split(",")
    return KafkaConsumer(
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        client_id="vigil-evalset-export",
        **config,
    )


def _exit(message: str, code: int) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}", markup=True)
    return typer.Exit(code)


def _from_kafka(bootstrap: str | None, name: str, read: Any, timeout: float) -> Any:
    """``read(consumer, name, timeout_s=...)`` with the CLI's errors (exit 1: Kafka)."""
    try:
        consumer = _kafka_consumer(bootstrap)
        return read(consumer, name, timeout_s=timeout)
    except ExportError as exc:
        raise _exit(str(exc), 1) from None
    except ValidationError as exc:
        raise _exit(f"invalid settings: {exc}", 2) from None
    except Exception as exc:  # kafka-python: no broker, authentication, ...
        detail = str(exc) or type(exc).__name__
        raise _exit(f"cannot read {name!r}: {detail}", 1) from None


LabelsTopic = Annotated[
    str | None,
    typer.Option(
        "--labels-topic",
        help="Join the review queue's labels from this topic (e.g. vigil.review.labels).",
        show_default=False,
    ),
]


@evalset_app.command("export")
def export(
    out_path: Annotated[Path, typer.Option("--out", help="File to write.")],
    period: Annotated[
        str | None,
        typer.Option(help="Only this period (2026-W45, 2026-11-05 or 2026-11); default: all."),
    ] = None,
    fmt: Annotated[ExportFormat, typer.Option("--format", help="jsonl or ragas.")] = (
        ExportFormat.jsonl
    ),
    cases_path: Annotated[
        Path | None,
        typer.Option("--cases", help="Read the cases from this JSONL file instead of Kafka."),
    ] = None,
    bootstrap: Annotated[
        str | None,
        typer.Option(help="Kafka bootstrap servers (default: VIGIL_KAFKA_BOOTSTRAP)."),
    ] = None,
    topic: Annotated[
        str | None,
        typer.Option(help="Case topic (default: VIGIL_EVALSET_TOPIC, vigil.evalset)."),
    ] = None,
    labels_path: Annotated[
        Path | None,
        typer.Option("--labels", help="JSONL file of labels (EvalLabel) to join to the cases."),
    ] = None,
    labels_topic: LabelsTopic = None,
    dedupe: Annotated[
        bool,
        typer.Option(help="Set cases with the same normalised question aside (one kept)."),
    ] = True,
    timeout: Annotated[
        float, typer.Option(min=1.0, help="Seconds to read the topic to its end.")
    ] = 60.0,
) -> None:
    """Write the evaluation cases (of one period, or all) as JSONL or in the RAGAS form."""
    from services.evalsets import export_cases, load_cases, load_labels
    from services.evalsets.periods import period_start

    if cases_path is not None and topic is not None:
        raise _exit("give --cases or --topic, not both", 2)
    if cases_path is not None and bootstrap is not None and labels_topic is None:
        raise _exit(
            "give --cases or --bootstrap/--topic, not both (with --cases, --bootstrap is for "
            "--labels-topic)",
            2,
        )
    if period is not None:
        try:
            period_start(period)
        except ValueError as exc:
            raise _exit(str(exc), 2) from None
    try:
        labels = load_labels(labels_path) if labels_path is not None else []
        if labels_topic is not None:
            labels += _from_kafka(bootstrap, labels_topic, read_review_labels, timeout)
        if cases_path is not None:
            cases = load_cases(cases_path)
            source = str(cases_path)
        else:
            from services.evalsets.settings import EvalsetSettings

            name = topic or EvalsetSettings().topic
            cases = _from_kafka(bootstrap, name, read_live_cases, timeout)
            source = f"topic {name}"
    except CaseFileError as exc:
        raise _exit(str(exc), 2) from None
    summary = export_cases(cases, period, fmt.value, out_path, labels=labels, deduplicate=dedupe)
    written = summary.written
    periods = ", ".join(summary.periods) or "-"
    out.print(
        f"wrote {written.written} case(s) of {len(cases)} from {source} to {written.path} "
        f"({written.format}; periods {periods})"
    )
    if summary.duplicates:
        out.print(
            f"{summary.duplicates} near-duplicate question(s) set aside (--no-dedupe keeps them)"
        )
    if written.skipped:
        out.print(f"{written.skipped} case(s) without a question or an answer have no RAGAS form")


@eval_app.command("run")
def run(
    cases_path: Annotated[Path, typer.Option("--cases", help="JSONL case file.")],
    gates: Annotated[
        Path | None, typer.Option(help="Gates file (see rules/gates.example.yaml).")
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the whole report as JSON (for CI).")
    ] = None,
    plot: Annotated[
        Path | None, typer.Option(help="Write the risk–coverage curve as a PNG.")
    ] = None,
    table: Annotated[
        Path | None,
        typer.Option(help="Write the risk–coverage table as CSV (default: the plot's name)."),
    ] = None,
    labels_path: Annotated[
        Path | None,
        typer.Option("--labels", help="JSONL file of labels (EvalLabel) to join first."),
    ] = None,
    labels_topic: LabelsTopic = None,
    bootstrap: Annotated[
        str | None,
        typer.Option(help="Kafka bootstrap servers of --labels-topic (default: the settings')."),
    ] = None,
    timeout: Annotated[
        float, typer.Option(min=1.0, help="Seconds to read --labels-topic to its end.")
    ] = 60.0,
    k: Annotated[
        list[int] | None,
        typer.Option(min=1, max=1000, help="k of recall@k and ndcg@k (repeat; default 1 3 5 10)."),
    ] = None,
) -> None:
    """Compute the metrics of a case file; exit 1 when a gate fails, 2 on unreadable input."""
    from services.evalrun import run_eval_cli

    queue_labels = (
        _from_kafka(bootstrap, labels_topic, read_review_labels, timeout) if labels_topic else []
    )
    code = run_eval_cli(
        cases_path,
        gates,
        json_out,
        plot,
        table_out=table,
        labels_path=labels_path,
        labels=queue_labels,
        ks=sorted(set(k)) if k else None,
    )
    raise typer.Exit(code)
