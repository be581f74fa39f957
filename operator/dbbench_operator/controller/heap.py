"""Giving the heap memory the operator freed back to the system, twice a minute.

A pass reads lists and writes patches in a worker thread: megabytes of JSON at
a time that are freed right after, but glibc keeps freed chunks in its heaps
unless they sit at the very top, so the operator's RSS followed the high-water
mark of its busiest moment, not what it holds (`make scale`: RSS grew about four
times as fast as its live objects). `malloc_trim(0)` returns every free page of
every heap. It takes milliseconds; where the C library has no malloc_trim
(musl), this does nothing. Before it, a full garbage collection: objects in
reference cycles (kopf's and asyncio's, exceptions with their tracebacks) are
otherwise freed only when the collector's oldest generation runs, rarely once
hundreds of thousands of objects live, and freed memory that is still held
cannot be trimmed. A collection takes ~0.1 s of the event loop at 1,000 runs.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import logging
from collections.abc import Callable
from functools import cache

log = logging.getLogger(__name__)

TRIM_EVERY_S = 30.0


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    return trim


def trim() -> bool:
    """Return free heap pages to the system; False where the C library cannot."""
    malloc_trim = _malloc_trim()
    if malloc_trim is None:
        return False
    malloc_trim(0)
    return True


async def trim_forever(every: float = TRIM_EVERY_S) -> None:
    """`trim()` every `every` seconds, on kopf's event loop, until cancelled."""
    if _malloc_trim() is None:
        log.info("no malloc_trim in this C library: freed heap memory stays mapped")
        return
    while True:
        await asyncio.sleep(every)
        gc.collect()
        trim()
