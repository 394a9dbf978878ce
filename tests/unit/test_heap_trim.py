"""The worker's heap trim (services/streaming/heap.py): glibc keeps freed blocks in its arenas
until something trims them; the trimmer hands whole free pages back to the OS."""

from __future__ import annotations

import ctypes
import os
import platform

import pytest

from services.streaming.heap import heap_trimmer

glibc_only = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's malloc"
)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@glibc_only
def test_the_trim_returns_free_pages_that_glibc_keeps_after_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    trim = heap_trimmer()
    assert trim is not None
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    # 80 MiB in 2 KiB blocks, touched; then all but one block in 64 freed. The survivors hold
    # the heap's top in place, so free() alone gives nothing back.
    blocks = [libc.malloc(2048) for _ in range(40_000)]
    for block in blocks:
        libc.memset(block, 1, 2048)
    kept = blocks[::64]
    for i, block in enumerate(blocks):
        if i % 64:
            libc.free(block)
    before = _rss()
    trim()
    after = _rss()
    for block in kept:
        libc.free(block)
    assert before - after > 40 * 1024 * 1024, (before >> 20, after >> 20)


@pytest.mark.parametrize(
    "preload", ["/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "libtcmalloc.so"]
)
def test_nothing_to_trim_when_another_allocator_is_preloaded(
    monkeypatch: pytest.MonkeyPatch, preload: str
) -> None:
    monkeypatch.setenv("LD_PRELOAD", preload)
    assert heap_trimmer() is None
