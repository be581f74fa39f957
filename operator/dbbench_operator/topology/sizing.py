"""Engine settings derived from the memory limit and the durability profile.

Pure: the request in, `--flag=value` settings out. Anything the user gives in
`settings` wins over what is computed here.
"""

from __future__ import annotations

from dbbench_operator.model.units import parse_quantity
from dbbench_operator.topology.request import TopologyRequest

GIB = 1024**3
MIB = 1024**2
# InnoDB rounds the buffer pool to chunk size x instances; 128 MiB is the default chunk.
INNODB_CHUNK = 128 * MIB

# design.md, "Portable durability profiles" (server-side knobs only: MongoDB's
# w/j are write concerns the runner sends and the default set at setup).
MYSQL_DURABILITY: dict[str, dict[str, str]] = {
    "fast": {"innodb_flush_log_at_trx_commit": "2", "sync_binlog": "0"},
    "safe": {"innodb_flush_log_at_trx_commit": "1", "sync_binlog": "1"},
    "strict": {"innodb_flush_log_at_trx_commit": "1", "sync_binlog": "1"},
}
MONGO_DEFAULT_WRITE_CONCERN: dict[str, dict[str, object]] = {
    "fast": {"w": 1, "j": False},
    "safe": {"w": 1, "j": True},
    "strict": {"w": "majority", "j": True},
}


def memory_limit(request: TopologyRequest) -> int | None:
    """The database pods' memory limit in bytes (request as a fallback), if any."""
    resources = request.hardware.resources
    for kind in ("limits", "requests"):
        value = resources.get(kind, {}).get("memory")
        if value is not None:
            return int(parse_quantity(str(value)))
    return None


def wired_tiger_cache_gb(limit: int) -> str:
    """MongoDB's own rule inside a container: 50% of (limit - 1 GiB), at least 0.25 GB."""
    gigabytes = max(0.25, 0.5 * (limit - GIB) / GIB)
    return f"{gigabytes:.2f}".rstrip("0").rstrip(".")


def innodb_buffer_pool_bytes(limit: int) -> int:
    """70% of the limit, rounded down to whole chunks, at least one chunk."""
    return max(INNODB_CHUNK, int(limit * 0.7) // INNODB_CHUNK * INNODB_CHUNK)


def engine_settings(request: TopologyRequest) -> dict[str, str]:
    """Settings for every database server of the target, computed then overridden."""
    limit = memory_limit(request)
    computed: dict[str, str] = {}
    if request.engine == "mongodb":
        if limit is not None:
            computed["wiredTigerCacheSizeGB"] = wired_tiger_cache_gb(limit)
    else:
        computed.update(MYSQL_DURABILITY[request.durability])
        if limit is not None:
            computed["innodb_buffer_pool_size"] = str(innodb_buffer_pool_bytes(limit))
    return {**computed, **request.settings}
