"""The ``vigil`` command line (typer)."""

from __future__ import annotations

import enum
import logging
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from services.commands.evalset import eval_app, evalset_app
from services.commands.review import review_app
from services.cyclegc import tune_collector
from services.settings import Settings

__all__ = ["app", "main"]

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    help="Vigil: surveillance for LLM chat.",
)
rules_app = typer.Typer(no_args_is_help=True, help="Check rule packs and run their examples.")
topics_app = typer.Typer(no_args_is_help=True, help="Manage Vigil's Kafka topics.")
schemas_app = typer.Typer(no_args_is_help=True, help="JSON Schema files of the wire contract.")
app.add_typer(rules_app, name="rules")
app.add_typer(topics_app, name="topics")
app.add_typer(schemas_app, name="schemas")
app.add_typer(review_app, name="review")
app.add_typer(evalset_app, name="evalset")
app.add_typer(eval_app, name="eval")


class Severity(enum.StrEnum):
    """``--fail-on`` choices: the finding severities, lowest first."""

    low = "low"
    medium = "medium"
    high = "high"
    critical = "critical"


out = Console(highlight=False)
err = Console(stderr=True, soft_wrap=True, highlight=False)


def _settings(**overrides: object) -> Settings:
    values = {k: v for k, v in overrides.items() if v is not None}
    try:
        settings = Settings(**values)  # type: ignore[arg-type]
    except Exception as exc:
        err.print(f"[red]invalid settings:[/red] {exc}")
        raise typer.Exit(2) from None
    if settings.dead_letter_raw:
        err.print(
            "[yellow]warning:[/yellow] VIGIL_DEAD_LETTER_RAW=true: dead letters keep the raw "
            "bytes of each message (chat content, personal data included). For debugging only."
        )
    return settings


def _fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}")
    return typer.Exit(code)


@app.command()
def scan(
    files: Annotated[
        list[str],
        typer.Argument(help="JSONL files of ChatEvents (read in turn as one log), or - for stdin."),
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for the outputs.")] = Path(
        "vigil-out"
    ),
    rules: Annotated[Path | None, typer.Option(help="Rule pack folder or file.")] = None,
    max_content_bytes: Annotated[int | None, typer.Option(help="Content size limit.")] = None,
    sample_rate: Annotated[
        float | None,
        typer.Option(
            min=0.0, max=1.0, help="Share of ordinary answers to claim-check (default 0.1)."
        ),
    ] = None,
    judge_url: Annotated[str | None, typer.Option(help="Claim judge base URL (optional).")] = None,
    judge_protocol: Annotated[
        str | None, typer.Option(help="Judge protocol: entailment or openai.")
    ] = None,
    judge_model: Annotated[
        str | None, typer.Option(help="Model name for the openai protocol.")
    ] = None,
    progress: Annotated[bool, typer.Option(help="Progress bar (on a terminal only).")] = True,
    fail_on: Annotated[
        Severity | None,
        typer.Option(
            "--fail-on",
            help="Exit 1 when any finding has this severity or a higher one.",
            case_sensitive=False,
        ),
    ] = None,
    dead_letter_warn: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Warn when more than this share of the lines are dead letters.",
        ),
    ] = 0.01,
) -> None:
    """Run every stage over FILES in this process, without Kafka, and print a summary.

    Exit status: 0 done; 1 a finding at or above --fail-on; 2 unusable input (no valid chat
    event at all) or a bad argument (a missing input, an output folder that cannot be written).
    """
    from services.grounding import ExtractorError, FactError
    from services.pipeline import Pipeline
    from services.rules import PackError
    from services.scan import ScanOutputError, run_scan

    if "-" in files and len(files) > 1:
        raise _fail("- (stdin) cannot be scanned together with files")
    for file in files:
        _check_input(file)
    settings = _settings(
        rules_dir=rules,
        max_content_bytes=max_content_bytes,
        sample_rate=sample_rate,
        judge_url=judge_url,
        judge_protocol=judge_protocol,
        judge_model=judge_model,
    )
    try:
        pipeline = Pipeline(settings)
    except (PackError, FactError, ExtractorError, ValueError) as exc:
        raise _fail(str(exc)) from None
    tune_collector(settings.gc_gen0_threshold)
    bar = sys.stderr if progress and sys.stderr.isatty() else None
    try:
        summary = run_scan(files, out_dir, settings, progress=bar, pipeline=pipeline)
    except ScanOutputError as exc:
        raise _fail(str(exc)) from None
    except OSError as exc:  # a write that failed midway (disk full, folder removed)
        where = exc.filename or out_dir
        raise _fail(f"{where}: {exc.strerror or exc}") from None
    _print_summary(summary.as_dict(), out_dir)
    if summary.events == 0:
        what = (
            f"{summary.dead_letters} of {summary.lines} lines are dead letters "
            f"(see {out_dir}/dead_letters.jsonl)"
            if summary.dead_letters
            else "it has no line"
            if not summary.lines
            else "every line is blank"
        )
        raise _fail(f"no valid chat event in {', '.join(files)}: {what}")
    if summary.dead_letter_share > dead_letter_warn:
        err.print(
            f"[yellow]warning:[/yellow] {summary.dead_letter_share:.1%} of the lines are dead "
            f"letters ({summary.dead_letters}), more than {dead_letter_warn:.1%}: see "
            f"{out_dir}/dead_letters.jsonl"
        )
    calls = sum(summary.judge_calls.values())
    if calls and summary.judge_failures == calls:
        err.print(
            f"[yellow]warning:[/yellow] every judge call failed ({calls}); "
            f"{summary.unverified_claims} claims are unverified"
        )
    failing = summary.findings_at_or_above(fail_on.value) if fail_on is not None else 0
    if failing:
        assert fail_on is not None
        err.print(f"[red]fail:[/red] {failing} findings of severity {fail_on.value} or higher")
        raise typer.Exit(1)


def _check_input(file: str) -> None:
    """A clear error for an input that cannot be read (no traceback)."""
    if file == "-":
        return
    path = Path(file)
    if path.is_dir():
        raise _fail(f"{file}: is a folder, not a file")
    if not path.exists():
        raise _fail(f"{file}: no such file")
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        raise _fail(f"{file}: cannot read: {exc.strerror or exc}") from None


def _print_summary(s: dict[str, object], out_dir: Path) -> None:
    table = Table(title="vigil scan", show_header=True, header_style="bold")
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("lines", str(s["lines"]))
    table.add_row("events", str(s["events"]))
    for role, n in s["events_by_role"].items():  # type: ignore[attr-defined]
        table.add_row(f"  role {role}", str(n))
    table.add_row("answers answered / abstained", f"{s['answered']} / {s['abstained']}")
    table.add_row("findings", str(s["findings"]))
    for key, label in (
        ("findings_by_severity", "severity"),
        ("findings_by_category", "category"),
        ("findings_by_entity", "entity"),
        ("findings_by_direction", "direction"),
    ):
        for name, n in s[key].items():  # type: ignore[attr-defined]
            table.add_row(f"  {label} {name}", str(n))
    table.add_row("claim checks (always / sampled)", _pair(s["checks_by_stratum"]))
    table.add_row("  answers with ungrounded claims", str(s["answers_with_ungrounded_claims"]))
    table.add_row(
        "  ungrounded dose / contraindication claims", str(s["ungrounded_critical_claims"])
    )
    table.add_row(
        "  fabricated / unsupported citations",
        f"{s['fabricated_citations']} / {s['unsupported_citations']}",
    )
    for measure, est in s["estimates"].items():  # type: ignore[attr-defined]
        table.add_row(f"  est. rate {measure.replace('_', ' ')}", _estimate(est))
    calls = s["judge_calls"]
    if calls:
        table.add_row(
            "judge calls / failed / unverified claims",
            f"{sum(calls.values())} / {s['judge_failures']} / {s['unverified_claims']}",  # type: ignore[attr-defined]
        )
    else:
        table.add_row("judge calls", "no judge (--judge-url)")
    table.add_row("review items", str(s["review_items"]))
    table.add_row("evaluation-set cases", str(s["evalset_cases"]))
    table.add_row("duplicate events skipped", str(s["duplicates"]))
    table.add_row("answers held for the reorder window", str(s["held_answers"]))
    table.add_row("dead letters", str(s["dead_letters"]))
    for reason, n in s["dead_letters_by_reason"].items():  # type: ignore[attr-defined]
        table.add_row(f"  reason {reason}", str(n))
    out.print(table)
    out.print(
        f"outputs in {out_dir}/: findings.jsonl verdicts.jsonl review.jsonl evalset.jsonl "
        "dead_letters.jsonl estimates.json metrics.prom "
        "summary.json"
    )


def _pair(by_stratum: object) -> str:
    counts = by_stratum if isinstance(by_stratum, dict) else {}
    return f"{counts.get('always', 0)} / {counts.get('sampled', 0)}"


def _estimate(est: object) -> str:
    if not isinstance(est, dict):
        return "n/a"
    if not est.get("estimable"):
        why = {
            "no-answers": "no answers",
            "unchecked-stratum": "answers counted, none checked",
            "unchecked-always": "always-checked answers not checked",
        }.get(str(est.get("not_estimable")), "")
        return f"not estimable ({why})" if why else "not estimable"
    text = f"{est['estimate']:.3f} [{est['lower']:.3f}, {est['upper']:.3f}]"
    n_eff = est.get("effective_sample_size")
    if est.get("method") == "korn-graubard" and n_eff is not None:
        text += f" (n_eff {n_eff:.0f})"
    return text


@app.command()
def worker(
    web_port: Annotated[int | None, typer.Option(help="Port of /metrics and /healthz.")] = None,
    loglevel: Annotated[str, typer.Option(help="Log level.")] = "info",
) -> None:
    """Run the Faust worker (settings from VIGIL_* environment variables)."""
    from services.dataflow.state import StateCeilingError
    from services.streaming.admin import (
        BrokerUnreachable,
        PartitionsError,
        resolve_partitions,
        wait_for_broker,
    )
    from services.streaming.app import create_app
    from services.streaming.logs import VigilWorker

    settings = _settings(web_port=web_port)
    _refuse_dev_keys(settings)
    tune_collector(settings.gc_gen0_threshold)
    # Everything the worker writes (RocksDB state holds masked chat context) is private.
    os.umask(0o077)

    def retrying(reason: str, seconds: float) -> None:
        err.print(
            f"[yellow]waiting for the broker:[/yellow] {settings.kafka_bootstrap} does not "
            f"answer ({reason}); next try in {seconds:g}s"
        )

    try:
        wait_for_broker(settings, retrying)
    except BrokerUnreachable as exc:
        raise _fail(str(exc), 1) from None
    try:
        partitions, found = resolve_partitions(settings)
    except PartitionsError as exc:
        raise _fail(str(exc)) from None
    if partitions != settings.topic_partitions:
        err.print(f"[yellow]note:[/yellow] {found}")
        settings = settings.model_copy(update={"topic_partitions": partitions})
    try:
        faust_app = create_app(settings)
    except StateCeilingError as exc:
        raise _fail(str(exc)) from None
    worker = VigilWorker(
        faust_app, loglevel=loglevel.upper(), repeat_seconds=settings.log_repeat_seconds
    )
    worker.execute_from_commandline()


def _refuse_dev_keys(settings: Settings) -> None:
    """Stop here when a key is one printed in Vigil's source or docs, unless allowed."""
    from services.settings import dev_keys_in_use

    try:
        found = dev_keys_in_use(settings)
    except Exception as exc:  # a malformed VIGIL_EVALSET_* setting
        raise _fail(f"invalid settings: {exc}") from None
    if not found:
        return
    names = ", ".join(found)
    if settings.allow_dev_keys:
        err.print(
            f"[yellow]warning:[/yellow] {names}: development keys (VIGIL_ALLOW_DEV_KEYS=true); "
            "never in production"
        )
        return
    raise _fail(
        f"{names}: a development key that anyone who read Vigil's source knows, so every keyed "
        "hash of the conversation memory and every sample could be recomputed. Set each to a "
        "long random secret (e.g. `openssl rand -hex 32`), or VIGIL_ALLOW_DEV_KEYS=true for a "
        "test setup."
    )


@app.command()
def replay(
    file: Annotated[str, typer.Argument(help="JSONL file, or - for stdin.")],
    topic: Annotated[
        str | None, typer.Option(help="Target topic (default: the input topic).")
    ] = None,
    rate: Annotated[
        float | None, typer.Option(help="At most this many messages per second.")
    ] = None,
    progress: Annotated[bool, typer.Option(help="Progress bar (on a terminal only).")] = True,
) -> None:
    """Produce FILE into Kafka, one message per line, keyed by conversation id."""
    from rich.progress import Progress

    from services.scan import iter_lines
    from services.streaming.admin import replay as do_replay

    settings = _settings()
    if rate is not None and rate <= 0:
        raise _fail("--rate must be positive")
    if file != "-" and not Path(file).is_file():
        raise _fail(f"{file}: no such file")
    stream = sys.stdin.buffer if file == "-" else open(file, "rb")  # noqa: SIM115
    lines = ((n, raw) for n, raw in iter_lines(stream) if raw.strip())
    target = topic or settings.input_topic
    name = "-" if file == "-" else Path(file).name
    try:
        if progress and sys.stderr.isatty():
            with Progress(console=Console(stderr=True), transient=True) as prog:
                task = prog.add_task(f"replay → {target}", total=None)
                result = do_replay(
                    settings,
                    lines,
                    target,
                    source=name,
                    rate=rate,
                    on_sent=lambda _n: prog.advance(task),
                )
        else:
            result = do_replay(settings, lines, target, source=name, rate=rate)
    except Exception as exc:
        raise _fail(f"replay failed: {exc}", 1) from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    out.print(f"sent {result.sent} messages to {target}")
    if result.too_large:
        listed = ", ".join(
            f"line {where.rsplit(':', 1)[1]} ({size:,} bytes)"
            for where, size in result.too_large[:10]
        )
        more = f" and {len(result.too_large) - 10} more" if len(result.too_large) > 10 else ""
        err.print(
            f"[yellow]skipped {len(result.too_large)} lines larger than the broker accepts"
            f"[/yellow] ({listed}{more}): sent to {settings.dlq_topic} as dead letters"
        )


@topics_app.command("create")
def topics_create(
    partitions: Annotated[int | None, typer.Option(min=1, help="Partitions per topic.")] = None,
) -> None:
    """Create the input, findings and dead-letter topics (existing ones are left alone)."""
    from services.streaming.admin import create_topics

    settings = _settings()
    try:
        result = create_topics(settings, partitions)
    except Exception as exc:
        raise _fail(f"cannot create topics on {settings.kafka_bootstrap}: {exc}", 1) from None
    for name, state in result.items():
        out.print(f"{name}: {state}")


@rules_app.command("test")
def rules_test(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Packs or folders (default: built-in).")
    ] = None,
    prompts: Annotated[
        Path | None, typer.Option(help="Prompt registry for prompt-leak rules.")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Run every match / no_match example of every rule; exit 1 if any fails."""
    from services.rules import PackError, load_packs, load_prompt_registry
    from services.rules.examples import run_examples

    settings = _settings()
    try:
        packs = load_packs(paths or [settings.rules_dir])
        registry = load_prompt_registry(prompts or settings.prompts_file)
    except (PackError, ValueError) as exc:
        raise _fail(str(exc)) from None
    failed = total = 0
    for res in run_examples(packs, registry):
        total += 1
        if not res.ok:
            failed += 1
            out.print(f"[red]FAIL[/red] {res.rule_id} {res.kind}: {res.text!r}: {res.detail}")
        elif verbose:
            out.print(f"ok   {res.rule_id} {res.kind}: {res.text!r}")
    rules = sum(len(p.rules) for p in packs)
    out.print(
        f"{len(packs)} packs, {rules} rules, {total} examples: "
        f"{total - failed} passed, {failed} failed"
    )
    from services.grounding.medical import LexiconError, load_lexicon
    from services.grounding.medical.examples import run_lexicon_examples

    try:
        lexicon = load_lexicon(settings.grounding_lexicon_dir)
    except LexiconError as exc:
        raise _fail(str(exc)) from None
    lex_total = lex_failed = 0
    for ex in run_lexicon_examples(lexicon):
        lex_total += 1
        if not ex.ok:
            lex_failed += 1
            out.print(f"[red]FAIL[/red] {ex.file} {ex.entry}: {ex.text!r}: {ex.detail}")
        elif verbose:
            out.print(f"ok   {ex.file} {ex.entry}: {ex.text!r}")
    out.print(
        f"grounding lexicons, {lex_total} examples: {lex_total - lex_failed} passed, "
        f"{lex_failed} failed"
    )
    failed += lex_failed
    if failed:
        raise typer.Exit(1)


@rules_app.command("check")
def rules_check(
    files: Annotated[list[Path], typer.Argument(help="Pack files to validate.")],
) -> None:
    """Validate rule packs (schema, RE2 patterns, validators, unique ids) without running them."""
    from services.rules import PackError, load_packs

    try:
        packs = load_packs(files)
    except PackError as exc:
        raise _fail(str(exc)) from None
    for pack in packs:
        out.print(f"{pack.pack}: {len(pack.rules)} rules ok")


@schemas_app.command("export")
def schemas_export(
    out_dir: Annotated[Path | None, typer.Option("--out", help="Target folder.")] = None,
) -> None:
    """Write schemas/json/*.schema.json from the pydantic models."""
    from schemas.export import JSON_DIR, export

    for path in export(out_dir or JSON_DIR):
        out.print(f"wrote {path}")


def main() -> None:
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    app()


if __name__ == "__main__":
    main()
