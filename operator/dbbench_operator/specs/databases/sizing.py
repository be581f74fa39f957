"""Engine settings derived from the memory limit and the durability profile.

Pure: the request in, `--flag=value` settings out. Anything the user gives in
`settings` wins over what is computed here.
"""

from __future__ import annotations

from typing import Any

from dbbench_contract.api import memory_floors
from dbbench_contract.api.units import parse_mysql_size, parse_quantity
from dbbench_operator.specs.databases.postgres_sizing import postgres_settings
from dbbench_operator.specs.databases.request import TopologyRequest

GIB = 1024**3
MIB = 1024**2
# InnoDB rounds the buffer pool UP to chunk size x instances; 128 MiB is the default chunk.
INNODB_CHUNK = 128 * MIB
INNODB_MAX_INSTANCES = 8
# What the server needs besides the pool, so the pool never pushes it past the
# limit (OOM kill mid-run). Per connection, with default buffers: thread stack
# 1 MiB plus sort/join/read/read_rnd buffers, net and binlog caches (~2 MiB at
# worst). Fixed: the server, performance_schema and the redo log buffer. InnoDB
# also keeps a control block per page, ~5% of the pool.
MYSQL_PER_CONNECTION = 2 * MIB
MYSQL_FIXED_OVERHEAD = 384 * MIB
INNODB_CONTROL_OVERHEAD = 0.05
MYSQL_DEFAULT_MAX_CONNECTIONS = 151
# Never more than this share of the limit: the page cache still serves the logs.
INNODB_MAX_SHARE = 0.75
# The admission check's floor assumes the operator never computes less.
INNODB_MIN_POOL = memory_floors.INNODB_MIN_POOL

# InnoDB pages; the page cleaner keeps about innodb_lru_scan_depth of them
# free (MariaDB default 1536, MySQL 1024 per instance). In a small pool that is
# most of the pool: a 16 MiB pool (1024 pages) kept ~200 pages of data and a
# hot set that fits it was read from disk again and again. Below 1024 x 16
# pages the depth is set to a sixteenth of the pool (at least the minimum, 100).
INNODB_PAGE = 16 * 1024
LRU_SCAN_DEPTH_MIN = 100
LRU_SCAN_DEPTH_SHARE = 16
LRU_SCAN_DEPTH_DEFAULT = 1024
# A benchmarked server starts with an empty pool: never reload the pages a dump
# at shutdown listed (both engines dump and reload by default), or a cache: cold
# restart would start warm.
INNODB_NO_POOL_DUMP = {
    "innodb_buffer_pool_dump_at_shutdown": "OFF",
    "innodb_buffer_pool_load_at_startup": "OFF",
}

# docs/api.md, the durability profiles table (server-side knobs only: MongoDB's
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
    return resources_memory(request.hardware.resources)


def resources_memory(resources: dict[str, Any]) -> int | None:
    """Memory limit in bytes of a resources block (request as a fallback), if any."""
    for kind in ("limits", "requests"):
        value = resources.get(kind, {}).get("memory")
        if value is not None:
            return int(parse_quantity(str(value)))
    return None


def wired_tiger_cache_gb(limit: int) -> str:
    """MongoDB's own rule inside a container: 50% of (limit - 1 GiB), at least 0.25 GB."""
    gigabytes = max(memory_floors.MIN_WIRED_TIGER_CACHE / GIB, 0.5 * (limit - GIB) / GIB)
    return f"{gigabytes:.2f}".rstrip("0").rstrip(".")


def innodb_buffer_pool_instances(pool: int) -> int:
    """One instance per GiB of pool, 1..8 (MySQL forces 1 below 1 GiB)."""
    return max(1, min(INNODB_MAX_INSTANCES, pool // GIB))


def innodb_buffer_pool(
    limit: int, max_connections: int, *, floor_overhead: int = 0
) -> tuple[int, int]:
    """(pool bytes, instances): what is left after the headroom, at most 75% of
    the limit, rounded DOWN to chunk x instances so MySQL's rounding up is a no-op.

    The headroom is at least `floor_overhead`, what the server measurably holds
    besides its pool (model/memory_floors.py): so a limit admitted against the
    floor with the smallest pool holds the pool computed here too.
    Below one chunk the pool is a whole number of MiB with one instance: MySQL
    then shrinks the chunk to the pool, so nothing is rounded either.
    """
    headroom = max(MYSQL_FIXED_OVERHEAD + max_connections * MYSQL_PER_CONNECTION, floor_overhead)
    budget = min(limit * INNODB_MAX_SHARE, (limit - headroom) / (1 + INNODB_CONTROL_OVERHEAD))
    budget_bytes = max(INNODB_MIN_POOL, int(budget))
    if budget_bytes < INNODB_CHUNK:
        return budget_bytes // MIB * MIB, 1
    instances = innodb_buffer_pool_instances(budget_bytes)
    unit = INNODB_CHUNK * instances
    return budget_bytes // unit * unit, instances


def lru_scan_depth(pool: int) -> int | None:
    """innodb_lru_scan_depth for a pool of `pool` bytes; None: the engine's default."""
    depth = pool // INNODB_PAGE // LRU_SCAN_DEPTH_SHARE
    return None if depth >= LRU_SCAN_DEPTH_DEFAULT else max(LRU_SCAN_DEPTH_MIN, depth)


def config_server_settings(request: TopologyRequest) -> dict[str, str]:
    """Config servers' WiredTiger cache, from their own memory (not the data nodes')."""
    limit = resources_memory(request.hardware.config_server_resources)
    return {} if limit is None else {"wiredTigerCacheSizeGB": wired_tiger_cache_gb(limit)}


def mysql_max_connections(request: TopologyRequest) -> int:
    """Every connection the run needs (`request.connections`), never below the
    servers' default: a run needing fewer keeps the pool it would have had."""
    return max(MYSQL_DEFAULT_MAX_CONNECTIONS, request.connections)


def _int_setting(request: TopologyRequest, key: str, default: int) -> int:
    text = request.settings.get(key, "")
    return int(text) if text.isdigit() else default


def _floor_overhead(request: TopologyRequest, connections: int) -> int:
    """What a MySQL/MariaDB server holds besides its pool at the request's settings."""
    ps = memory_floors.performance_schema_on(
        request.engine, request.settings.get("performance_schema")
    )
    return memory_floors.overhead(memory_floors.FOOTPRINTS[request.engine], connections, ps)


def engine_settings(request: TopologyRequest) -> dict[str, str]:
    """Settings for every database server of the target, computed then overridden."""
    limit = memory_limit(request)
    computed: dict[str, str] = {}
    if request.engine == "postgresql":
        computed.update(postgres_settings(limit, request.durability))
    elif request.engine == "mongodb":
        # A protocol stand-in has no WiredTiger: it would refuse the flag.
        if limit is not None and not request.protocol_stand_in:
            computed["wiredTigerCacheSizeGB"] = wired_tiger_cache_gb(limit)
    else:
        computed.update(MYSQL_DURABILITY[request.durability])
        computed.update(INNODB_NO_POOL_DUMP)
        computed["max_connections"] = str(mysql_max_connections(request))
        if limit is not None:
            # The pool keeps per-connection memory for the connections the
            # server will really allow: the user's setting, else the one above.
            connections = _int_setting(request, "max_connections", mysql_max_connections(request))
            pool, instances = innodb_buffer_pool(
                limit, connections, floor_overhead=_floor_overhead(request, connections)
            )
            computed["innodb_buffer_pool_size"] = str(pool)
            # MariaDB 10.6+ removed the variable: the flag would stop the server.
            if request.engine == "mysql":
                computed["innodb_buffer_pool_instances"] = str(instances)
        pool_setting = request.settings.get("innodb_buffer_pool_size")
        pool_bytes = (
            parse_mysql_size(pool_setting)
            if pool_setting is not None
            else int(computed.get("innodb_buffer_pool_size", 128 * MIB))
        )
        depth = lru_scan_depth(pool_bytes)
        if depth is not None:
            computed["innodb_lru_scan_depth"] = str(depth)
    return {**computed, **request.settings}
