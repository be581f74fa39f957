"""PostgreSQL server settings from the memory limit and the durability profile (pure).

shared_buffers is PostgreSQL's own cache; the rest of the memory serves
connections (work_mem per sort or hash, maintenance) and the page cache, which
PostgreSQL relies on for everything shared_buffers does not hold. The
documentation's starting point for a dedicated server is 25% of the memory
for shared_buffers; inside a container the limit is that memory.
effective_cache_size tells the planner how much of the data the two caches
hold together: 75% of the limit. The admission check refuses a
shared_buffers (or wal_buffers) the limit cannot hold (model/semantics.py).
"""

from __future__ import annotations

from dbbench_contract.api.memory_floors import MIN_SHARED_BUFFERS, SHARED_BUFFERS_SHARE

MIB = 1024**2
EFFECTIVE_CACHE_SHARE = 0.75
# (model/memory_floors.py: SHARED_BUFFERS_SHARE, 25%, and MIN_SHARED_BUFFERS, 16 MiB:
# PostgreSQL's own floor is 128 kB, below 16 MB nothing benchmarks; the admission
# check's memory floor uses the same.)
__all__ = ["MIN_SHARED_BUFFERS", "SHARED_BUFFERS_SHARE", "postgres_settings"]

# docs/api.md, the durability profiles table. strict adds a synchronous standby,
# which the setup sets at runtime (synchronous_standby_names names the pods).
POSTGRES_DURABILITY: dict[str, dict[str, str]] = {
    "fast": {"synchronous_commit": "off", "fsync": "on"},
    "safe": {"synchronous_commit": "on", "fsync": "on"},
    "strict": {"synchronous_commit": "on", "fsync": "on"},
}


def _megabytes(size: float) -> str:
    return f"{int(size // MIB)}MB"


def postgres_settings(limit: int | None, durability: str) -> dict[str, str]:
    """Computed settings (the target's own `settings` override them)."""
    computed = dict(POSTGRES_DURABILITY[durability])
    if limit is not None:
        shared = max(MIN_SHARED_BUFFERS, limit * SHARED_BUFFERS_SHARE)
        computed["shared_buffers"] = _megabytes(shared)
        computed["effective_cache_size"] = _megabytes(limit * EFFECTIVE_CACHE_SHARE)
    return computed
