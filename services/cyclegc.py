"""How often Python's cyclic garbage collector runs in a process that runs the dataflow.

CPython starts a collection of the youngest generation every 700 allocations of container
objects (net of deallocations), and a full collection, which walks every tracked object of the
process, after ten of the middle one when enough has survived. The dataflow allocates
thousands of short-lived containers per event (decoded events, findings, pydantic models and
their dicts) and keeps few of them, and its code makes almost no reference cycles, so those
collections find next to nothing; yet in ``benchmarks/worker_inprocess.py`` they took ~15 % of
the CPU (``BENCHMARKS.md`` section 12), most of it in full collections over the lexicons, the
rule packs and the decoded state caches.

:func:`tune_collector` raises the first generation's threshold to ``gc_gen0_threshold``
(``VIGIL_GC_GEN0_THRESHOLD``, 50,000; the two older generations keep CPython's ratios, so a
full collection still comes after ten of the middle one). Over 20,000 example events the
collector then takes ~0.2 s of CPU instead of ~2.2 s (10,000 left ~0.8 s). What it costs:
cyclic garbage, if any, waits for up to that many allocations before it is freed, a bounded
amount; nothing that reference counting frees is held longer. ``vigil worker``, ``vigil scan``
and the in-process benchmark call it at start; 0 leaves CPython's own threshold.
"""

from __future__ import annotations

import gc

__all__ = ["tune_collector"]


def tune_collector(gen0_threshold: int) -> tuple[int, int, int]:
    """Set the youngest generation's threshold (0: keep the current one); the thresholds
    before, so a test can put them back."""
    before = gc.get_threshold()
    if gen0_threshold > 0:
        gc.set_threshold(gen0_threshold, before[1], before[2])
    return before
