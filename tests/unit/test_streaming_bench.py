"""The helpers of ``benchmarks/streaming.py`` compute what its report claims.

The benchmark itself runs workers against a broker for minutes, so the suite checks its parts:
``/proc`` parsing (on fixed text and on real processes), offset and lag arithmetic, the RSS
curve, marginal rates, the pass/miss verdicts and the py-spy stack categories. No timing is
asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks import _procs as P
from benchmarks import _profiles as PR
from benchmarks import _streaming_report as R
from benchmarks._kafka import lag_by_topic

# A /proc/<pid>/stat line whose command name holds spaces and parentheses.
STAT = (
    "4242 (vigil (worker) x) S 1 4242 4182 0 -1 4194304 50996 163 7 0 1212 63 5 2 20 0 5 0 "
    "520511 681885696 51853 18446744073709551615 1 1 0 0 0 0 0 16781316 18946 0 0 0 17 1 0 0"
)
STATUS = "Name:\tvigil\nVmPeak:\t  700000 kB\nVmHWM:\t  215000 kB\nVmRSS:\t  207440 kB\n"


def test_proc_stat_fields_are_counted_from_the_last_parenthesis() -> None:
    st = P.parse_proc_stat(STAT)
    assert (st.pid, st.comm) == (4242, "vigil (worker) x")
    assert (st.utime, st.stime, st.cutime, st.cstime) == (1212, 63, 5, 2)
    assert st.cpu_seconds(tck=100) == pytest.approx(12.82)


def test_status_fields_in_kib() -> None:
    assert P.parse_status_kib(STATUS) == 207440
    assert P.parse_status_kib(STATUS, "VmHWM") == 215000
    assert P.parse_status_kib(STATUS, "VmSwap") is None


def test_cpu_and_rss_of_a_real_process_tree() -> None:
    # a parent that sleeps and a child that burns CPU: the tree's CPU is the child's
    burn = "import time\nt=time.process_time()\nwhile time.process_time()-t<0.6: pass\n"
    code = f"import subprocess,sys,time\nsubprocess.Popen([sys.executable,'-c',{burn!r}])\n"
    code += "time.sleep(5)\n"
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 20
        cpu = 0.0
        while time.monotonic() < deadline:
            kids = P.descendants(proc.pid)
            cpu = P.tree_cpu_seconds(proc.pid) or 0.0
            if kids and cpu >= 0.4:
                break
            time.sleep(0.05)
        assert cpu >= 0.4, cpu
        rss = P.tree_rss_kib(proc.pid)
        assert rss is not None and rss > 8 * 1024, rss  # two Python interpreters, in KiB
    finally:
        proc.kill()
        proc.wait()
    assert P.tree_cpu_seconds(proc.pid) is None  # gone


def test_schedstat_and_thread_split_of_this_process() -> None:
    assert P.parse_schedstat("1319892 9332167 4\n") == (0.001319892, 0.009332167)
    got = P.thread_split(os.getpid())
    assert got is not None and got["main_s"] > 0 and got["user_s"] > 0
    assert abs(got["main_s"] + got["threads_s"] - got["user_s"] - got["sys_s"]) < 1e-6


def test_split_delta_sums_workers_and_needs_every_one() -> None:
    from benchmarks.streaming import split_delta

    a = {"main_s": 1.0, "threads_s": 0.5}
    b = {"main_s": 3.0, "threads_s": 1.0}
    assert split_delta([a, a], [b, b]) == {"main_s": 4.0, "threads_s": 1.0}
    assert split_delta([a, a], [b, None]) is None


def test_own_stat_parses() -> None:
    st = P.parse_proc_stat(Path(f"/proc/{os.getpid()}/stat").read_text())
    assert st.pid == os.getpid() and st.cpu_seconds() > 0


def test_lag_sums_partitions_and_counts_uncommitted_from_zero() -> None:
    ends = {("in", 0): 100, ("in", 1): 50, ("samples", 0): 7, ("checks", 0): 0}
    committed = {("in", 0): 100, ("in", 1): 20, ("samples", 0): 9}  # 9 > 7: read after the end
    assert lag_by_topic(ends, committed) == {"in": 30, "samples": 0, "checks": 0}
    assert lag_by_topic({("x", 0): 5}, {}) == {"x": 5}


SAMPLES = [
    {"t": 0.0, "events": 0, "rss_mib": 140.0},
    {"t": 10.0, "events": 20_000, "rss_mib": 180.0},
    {"t": 20.0, "events": 50_000, "rss_mib": 200.0},
    {"t": 40.0, "events": 120_000, "rss_mib": 210.0},
    {"t": 90.0, "events": 300_000, "rss_mib": 225.0},
]


def test_rss_at_a_count_is_the_first_sample_that_reached_it() -> None:
    assert R.value_at(SAMPLES, 50_000, "rss_mib") == 200.0
    assert R.value_at(SAMPLES, 50_001, "rss_mib") == 210.0
    assert R.value_at(SAMPLES, 300_001, "rss_mib") is None


def test_steady_rate_leaves_out_start_and_drain() -> None:
    # 10 % = 30k (first reached at t=20, 50k), 90 % = 270k (t=90, 300k)
    assert R.steady_rate(SAMPLES, 300_000) == pytest.approx((300_000 - 50_000) / 70)
    assert R.steady_rate(SAMPLES[:2], 300_000) is None


def test_marginal_rate_cancels_startup() -> None:
    # 10k events in 5 CPU-s, 40k in 14 CPU-s: the extra 30k cost 9 s
    assert R.marginal_rate(10_000, 5.0, 40_000, 14.0) == pytest.approx(30_000 / 9)
    assert R.marginal_rate(40_000, 14.0, 10_000, 5.0) is None


def test_events_screened_from_the_metrics_text() -> None:
    text = (
        "# HELP vigil_events_total Chat events screened, by role and tenant.\n"
        "# TYPE vigil_events_total counter\n"
        'vigil_events_total{role="user",tenant="a"} 3.0\n'
        'vigil_events_total{role="assistant",tenant="a"} 2.0\n'
        'vigil_events_created{role="user",tenant="a"} 1.7e9\n'
        'vigil_invalid_events_total{reason="json"} 9.0\n'
    )
    assert R.screened_total(text) == 5.0
    assert R.screened_total("") == 0.0


def test_rates_and_ratio() -> None:
    got = R.rates(1000, 2.0, 0.5)
    assert got == {
        "events_per_s": 500.0,
        "events_per_cpu_s": 2000.0,
        "cpu_us_per_event": 500.0,
        "cpu_share": 0.25,
    }
    assert R.rates(0, 0.0, 0.0)["events_per_s"] is None
    assert R.ratio(1.0, 4.0) == 0.25 and R.ratio(None, 4.0) is None and R.ratio(1.0, 0.0) is None


def _result(**over: object) -> dict[str, object]:
    one = {
        "status": "done",
        "events_per_s": 600.0,
        "secondary_lag_at_end": 0,
        "rss_mib_at_50k": 200.0,
        "rss_mib_at_300k": 225.0,
        "ready_s": 7.5,
    }
    mixes = {
        "examples": {
            "produce": {"events": 300_000},
            "worker_vs_bare": 0.3,
            "one_worker": dict(one),
            "scale": {
                "one_worker": dict(one),
                "two_workers": {**one, "secondary_lag_at_end": 3},
            },
            "two_over_one": 1.7,
        },
        "rag": {
            "produce": {"events": 300_000},
            "one_worker": {**one, "events_per_s": 1500.0, "rss_mib_at_300k": None},
            "two_over_one": 1.65,
        },
    }
    scan = {
        "examples": {"rss_ratio": 1.05, "marginal_events_per_cpu_s": 3200.0},
        "rag": {"rss_ratio": 1.2, "marginal_events_per_cpu_s": 900.0},
        "rag_gb": {"peak_rss_mib": 240.0},
    }
    return {"mixes": mixes, "scan": scan, **over}


def test_targets_pass_miss_and_missing_values() -> None:
    rows = {r["key"]: r for r in R.evaluate(_result())}
    assert rows["worker_vs_bare_examples"]["verdict"] == "pass"
    assert rows["worker_eps_rag"]["verdict"] == "miss"  # 1,500 < 2,000
    lag = rows["secondary_lag"]
    assert lag["value"] == 3 and lag["verdict"] == "miss"  # the two-worker run left 3
    assert rows["rss_300k_over_50k"]["values"] == {"examples": pytest.approx(1.125), "rag": None}
    assert rows["rss_300k_over_50k"]["verdict"] == "miss"  # rag never reached 300k
    assert rows["rss_300k_mib"]["value"] == 225.0
    assert rows["scan_rss_40k_over_10k"]["value"] == 1.2  # the worse mix decides
    assert rows["scan_rss_40k_over_10k"]["verdict"] == "miss"
    assert rows["scan_marginal_eps"]["values"] == {"examples": 3200.0}  # example mix only
    assert rows["scan_marginal_eps"]["verdict"] == "pass"
    assert rows["scan_1gb_rss_mib"]["verdict"] == "pass"
    assert rows["two_over_one"]["value"] == 1.65 and rows["two_over_one"]["verdict"] == "pass"
    assert rows["start_to_ready_s"]["verdict"] == "pass"


def test_a_timed_out_run_has_no_lag_value() -> None:
    res = _result()
    res["mixes"]["rag"]["one_worker"]["status"] = "timeout"  # type: ignore[index]
    rows = {r["key"]: r for r in R.evaluate(res)}
    assert rows["secondary_lag"]["values"]["rag/one_worker"] is None
    assert rows["secondary_lag"]["verdict"] == "miss"


def test_a_short_topic_is_not_held_against_the_rss_target() -> None:
    res = _result()
    res["mixes"]["rag"]["produce"]["events"] = 100_000  # type: ignore[index]
    rows = {r["key"]: r for r in R.evaluate(res)}
    assert rows["rss_300k_over_50k"]["values"] == {"examples": pytest.approx(1.125)}
    assert rows["rss_300k_over_50k"]["verdict"] == "pass"


def test_nothing_measured_is_said() -> None:
    rows = R.evaluate({"mixes": {}, "scan": {}})
    assert {r["verdict"] for r in rows} == {"not measured"}


def test_verdict_edges() -> None:
    ge = R.Target("x", "x", ">=", 0.25)
    le = R.Target("y", "y", "<=", 10)
    assert R.verdict(ge, 0.25) == "pass" and R.verdict(ge, 0.2499) == "miss"
    assert R.verdict(le, 10) == "pass" and R.verdict(le, 10.01) == "miss"
    assert R.verdict(ge, None) == "not measured"
    assert R.worst([1.0, None, 0.5], ">=") == 0.5 and R.worst([1.0, 2.0], "<=") == 2.0


def _stack(thread: str, *frames: str, n: int = 1) -> str:
    return ";".join([thread, *frames]) + f" {n}"


MAIN = "thread (10): MainThread"
LOOP = ["<module> (vigil:6)", "BaseEventLoop.run_forever (asyncio/base_events.py:608)"]
SCREEN = [
    *LOOP,
    "create_app.<locals>.screen_events (services/streaming/app.py:290)",
    "consume_batches (services/streaming/app.py:153)",
    "StreamRunner.screen (services/streaming/runner.py:270)",
]


def test_py_spy_stacks_go_to_their_agent_and_stage() -> None:
    lines = [
        _stack(
            MAIN,
            *SCREEN,
            "Dataflow.process (services/dataflow/flow.py:250)",
            "Pipeline.check (services/pipeline.py:80)",
            "_stem (services/grounding/text.py:98)",
            n=5,
        ),
        _stack(
            MAIN,
            *SCREEN,
            "Dataflow.process (services/dataflow/flow.py:250)",
            "Dataflow._screen (services/dataflow/flow.py:205)",
            "Pipeline.screen (services/pipeline.py:62)",
            "Set.Match (re2/__init__.py:540)",
            n=3,
        ),
        _stack(
            MAIN,
            *SCREEN,
            "Dataflow.process (services/dataflow/flow.py:250)",
            "Dataflow._screen (services/dataflow/flow.py:207)",
            "BaseModel.model_validate_json (pydantic/main.py:847)",
            n=2,
        ),
        _stack(
            MAIN,
            *SCREEN,
            "StreamRunner.deliver (services/streaming/runner.py:220)",
            "FaustSender.__call__ (services/streaming/app.py:184)",
            n=4,
        ),
        _stack(
            MAIN,
            *LOOP,
            "register.<locals>.evalset_sampler (services/streaming/features/evalsets.py:108)",
            "consume_batches (services/streaming/app.py:153)",
            "StreamRunner.samples (services/streaming/runner.py:300)",
            "StreamRunner.deliver (services/streaming/runner.py:220)",
            n=2,
        ),
        _stack(
            MAIN,
            *LOOP,
            "Sender._send_produce_req (aiokafka/producer/sender.py:300)",
            "AIOKafkaConnection.send (aiokafka/conn.py:450)",
            "_SelectorSocketTransport.write (asyncio/selector_events.py:1057)",
            n=6,
        ),
        _stack(
            MAIN,
            *LOOP,
            "Consumer._drain (faust/transport/consumer.py:900)",
            "Logger.warning (logging/__init__.py:1500)",
            n=1,
        ),
        _stack(MAIN, *LOOP, "EpollSelector.select (selectors.py:468)", n=7),
        _stack("thread (11): Thread-1", "Thread.run (threading.py:975)", n=3),
    ]
    got = PR.categorize(lines)
    assert got["samples"] == 33
    ctx = got["contexts"]
    assert ctx["chat.events agent (StreamRunner.screen)"] == 14
    assert ctx["eval-set sampler agent (StreamRunner.samples, tick)"] == 2
    assert ctx["main thread outside Vigil's agents"] == 14
    assert ctx["other threads (Faust's consumer thread: aiokafka fetcher)"] == 3
    produce = "produce: encode and send the records (deliver, FaustSender)"
    assert got["stages"] == {
        "claim check": 5,
        produce: 4,
        "screening: rule engine and findings": 3,
        "screening: conversation memory (parse, write)": 2,
    }
    assert got["parts"]["eval-set sampler agent (StreamRunner.samples, tick)"] == {produce: 2}
    # a socket write under aiokafka's sender is aiokafka's, not the event loop's
    assert got["libraries"] == {
        "asyncio event loop, other": 7,
        "aiokafka producer": 6,
        "logging": 1,
    }
    # the lead's groups: what any agent produces is produce, the consumer thread is consume
    assert got["groups"] == {
        PR.GROUP_PRODUCE: 4 + 2 + 6,
        PR.GROUP_LOOP: 7,
        "chat.events: claim check": 5,
        "chat.events: screening: rule engine and findings": 3,
        PR.GROUP_CONSUME: 3,
        "chat.events: screening: conversation memory (parse, write)": 2,
        "logging": 1,
    }
    assert sum(got["groups"].values()) == got["samples"]
    assert got["top_leaves"]["EpollSelector.select (selectors.py)"] == 7


def test_state_table_and_changelog_samples_are_their_own_group() -> None:
    runner = "StreamRunner.screen (services/streaming/runner.py:270)"
    lines = [
        _stack(
            MAIN,
            *SCREEN,
            "Dataflow.process (services/dataflow/flow.py:250)",
            "Dataflow._screen (services/dataflow/flow.py:205)",
            "TableStore.get (services/streaming/state.py:211)",
            "TableBackend.get (services/streaming/state.py:80)",
            n=3,
        ),
        _stack(
            MAIN,
            *SCREEN,
            "StreamRunner.deliver (services/streaming/runner.py:228)",
            "FaustStates.drain (services/streaming/state.py:306)",
            "TableBackend.drain (services/streaming/state.py:125)",
            "Producer.send (faust/transport/drivers/aiokafka.py:1401)",
            n=2,
        ),
        _stack(
            MAIN,
            *LOOP,
            "TableBackend._drain_soon (services/streaming/state.py:110)",
            "TableBackend.drain (services/streaming/state.py:125)",
            n=1,
        ),
        _stack(MAIN, *LOOP, "TableBackend._persist (services/streaming/state.py:170)", n=1),
    ]
    got = PR.categorize(lines)
    assert runner in SCREEN[-1]
    assert got["stages"] == {
        "state table: get, put, scan (TableStore, TableBackend, RocksDB)": 3,
        "state: changelog records handed to the producer (TableBackend.drain)": 2,
    }
    assert got["contexts"]["changelog drain task (state written outside a batch)"] == 1
    assert got["groups"] == {PR.GROUP_STATE: 3 + 1, PR.GROUP_PRODUCE: 2 + 1}


def test_events_per_mix() -> None:
    from benchmarks.streaming import events_per_mix

    assert events_per_mix(None, 300) == {"examples": 300, "rag": 300}
    assert events_per_mix("5000", 300) == {"examples": 5000, "rag": 5000}
    assert events_per_mix("rag=100000", 300) == {"examples": 300, "rag": 100_000}
    with pytest.raises(SystemExit, match="unknown mix"):
        events_per_mix("chat=5", 300)


def test_callees_drill_into_one_frame() -> None:
    lines = [
        _stack(
            MAIN,
            *SCREEN,
            "ReviewCore._flag (services/review/core.py:90)",
            "make_flag (services/review/evidence.py:40)",
            n=4,
        ),
        _stack(
            MAIN,
            *SCREEN,
            "ReviewCore._flag (services/review/core.py:91)",
            "intake (services/review/intake.py:12)",
            "x (y.py:1)",
            n=2,
        ),
        _stack(MAIN, *SCREEN, "ReviewCore._flag (services/review/core.py:95)", n=1),
        _stack(MAIN, *SCREEN, "Pipeline.check (services/pipeline.py:80)", n=9),
    ]
    total, split = PR.callees(lines, r"^ReviewCore\._flag \(")
    assert total == 7
    assert split == {
        "make_flag (services/review/evidence.py)": 4,
        "intake (services/review/intake.py)": 2,
        "(self)": 1,
    }


def test_a_restart_that_never_got_ready_is_said_so() -> None:
    assert R._restart({"ready_s": 2.625}) == "2.62 s"
    assert R._restart(None) == "— s"
    slow = {"status": "not ready", "ready_s": None, "timeout_s": 180.0, "web_up_s": 3.1}
    assert R._restart(slow) == "not ready within 180 s"
