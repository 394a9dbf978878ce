"""Give the C heap's free pages back to the operating system, now and then.

A worker allocates and frees many small blocks per event in two threads (the event loop and
Faust's consumer thread), and RocksDB's threads allocate too. glibc's allocator keeps freed
memory in its arenas: a page is returned only when the free space sits at the top of a heap,
so the process's resident set climbs slowly while the live data stays the same
(``BENCHMARKS.md`` section 9: about 200 bytes per event, no plateau, with Python's own heap and
RocksDB's budget both bounded). ``malloc_trim(0)`` walks every arena and releases each whole
free page inside it (``madvise``), which is what a long-running worker needs; it takes a few
milliseconds, so the worker calls it on a timer (``VIGIL_HEAP_TRIM_SECONDS``).

Elsewhere (musl, macOS, a process that preloads another allocator such as jemalloc) there is
nothing to trim and :func:`heap_trimmer` returns ``None``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
from collections.abc import Callable

__all__ = ["heap_trimmer"]


def _other_allocator_preloaded() -> bool:
    """Whether ``LD_PRELOAD`` names an allocator that replaces glibc's malloc."""
    preload = os.environ.get("LD_PRELOAD", "")
    return any(name in preload for name in ("jemalloc", "tcmalloc", "mimalloc"))


def heap_trimmer() -> Callable[[], bool] | None:
    """A function that trims glibc's heap and says whether it returned memory, or ``None``
    where the process does not use glibc's allocator."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    if _other_allocator_preloaded():
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    trim = getattr(libc, "malloc_trim", None)
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int

    def trim_heap() -> bool:
        return bool(trim(0))

    return trim_heap
