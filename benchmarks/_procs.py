"""Process probes of the streaming benchmark, read from ``/proc`` (Linux): CPU seconds and
resident memory of a process tree, the load average, CPU pinning with ``taskset``.

Parsing is kept apart from reading so ``tests/unit/test_streaming_bench.py`` checks it on fixed
text; nothing here is imported by ``services``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ProcStat",
    "descendants",
    "free_port",
    "loadavg",
    "parse_proc_stat",
    "parse_schedstat",
    "parse_status_kib",
    "peak_rss_kib",
    "pinned",
    "read_proc",
    "stop_process",
    "thread_split",
    "tree_cpu_seconds",
    "tree_rss_kib",
    "uptime",
]

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class ProcStat:
    """The fields of ``/proc/<pid>/stat`` the benchmark reads (times in clock ticks)."""

    pid: int
    comm: str
    utime: int
    stime: int
    cutime: int
    cstime: int

    def cpu_seconds(self, tck: int = CLK_TCK) -> float:
        """User + system time of the process and of its children it has waited for."""
        return (self.utime + self.stime + self.cutime + self.cstime) / tck


def parse_proc_stat(text: str) -> ProcStat:
    """Parse one ``/proc/<pid>/stat`` line. The command name sits in parentheses and may itself
    contain spaces and parentheses, so the fields are counted from the *last* ``)``."""
    head, _, tail = text.rpartition(")")
    pid_s, _, comm = head.partition(" (")
    f = tail.split()
    # fields after the name: state(3) ppid(4) … utime(14) stime(15) cutime(16) cstime(17)
    return ProcStat(
        pid=int(pid_s),
        comm=comm,
        utime=int(f[11]),
        stime=int(f[12]),
        cutime=int(f[13]),
        cstime=int(f[14]),
    )


def parse_status_kib(text: str, field_name: str = "VmRSS") -> int | None:
    """A ``kB`` field of ``/proc/<pid>/status`` (``VmRSS``, ``VmHWM`` …) in KiB."""
    m = re.search(rf"^{re.escape(field_name)}:\s+(\d+)\s+kB", text, re.M)
    return int(m.group(1)) if m else None


def read_proc(pid: int) -> ProcStat | None:
    try:
        return parse_proc_stat(Path(f"/proc/{pid}/stat").read_text())
    except (OSError, ValueError, IndexError):
        return None


def descendants(pid: int) -> list[int]:
    """Live descendants of ``pid`` (``/proc/<pid>/task/*/children``, recursively)."""
    out: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        for children in Path(f"/proc/{p}/task").glob("*/children"):
            with contextlib.suppress(OSError, ValueError):
                kids = [int(x) for x in children.read_text().split()]
                out += kids
                todo += kids
    return out


def tree_cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) of ``pid``, its waited-for children and its live
    descendants; ``None`` once the process is gone."""
    root = read_proc(pid)
    if root is None:
        return None
    total = root.cpu_seconds()
    for kid in descendants(pid):
        st = read_proc(kid)
        if st is not None:
            total += st.cpu_seconds()
    return total


def parse_schedstat(text: str) -> tuple[float, float]:
    """``/proc/<pid>/task/<tid>/schedstat``: (seconds on a CPU, seconds runnable but waiting
    for one) of the thread."""
    on_cpu, waiting, *_ = text.split()
    return int(on_cpu) / 1e9, int(waiting) / 1e9


def thread_split(pid: int) -> dict[str, float] | None:
    """Where a process's CPU time went, over its live threads: the main thread (its id is the
    pid) against the others (for a worker: Faust's consumer thread), user against system time,
    and how long its threads were ready to run while the CPU ran someone else (the run-queue
    wait: the machine's load as this process felt it). ``None`` once it is gone."""
    out = {"main_s": 0.0, "threads_s": 0.0, "user_s": 0.0, "sys_s": 0.0, "runqueue_wait_s": 0.0}
    tasks = sorted(Path(f"/proc/{pid}/task").glob("*"))
    if not tasks:
        return None
    for task in tasks:
        with contextlib.suppress(OSError, ValueError, IndexError):
            st = parse_proc_stat((task / "stat").read_text())
            _, wait = parse_schedstat((task / "schedstat").read_text())
            out["main_s" if st.pid == pid else "threads_s"] += (st.utime + st.stime) / CLK_TCK
            out["user_s"] += st.utime / CLK_TCK
            out["sys_s"] += st.stime / CLK_TCK
            out["runqueue_wait_s"] += wait
    return out


def tree_rss_kib(pid: int) -> int | None:
    """Resident set of ``pid`` and its live descendants (``VmRSS``), in KiB."""
    total = None
    for p in [pid, *descendants(pid)]:
        try:
            kib = parse_status_kib(Path(f"/proc/{p}/status").read_text())
        except OSError:
            continue
        if kib is not None:
            total = (total or 0) + kib
    return total


def peak_rss_kib(pid: int) -> int | None:
    try:
        return parse_status_kib(Path(f"/proc/{pid}/status").read_text(), "VmHWM")
    except OSError:
        return None


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pinned(cmd: list[str], cpu: int | None) -> list[str]:
    if cpu is None or not shutil.which("taskset"):
        return cmd
    return ["taskset", "-c", str(cpu), *cmd]


def stop_process(proc: subprocess.Popen[bytes], grace_s: float = 30.0) -> float:
    """SIGTERM, then SIGKILL after ``grace_s``; returns the seconds it took to exit."""
    t0 = time.monotonic()
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
    return time.monotonic() - t0
