"""The memory a database server needs at the settings a run gives it (pure).

A server whose container limit is below what it holds once it answers, plus
its cache, plus its connections, stalls at the limit or is OOM-killed (MySQL
9.7 at a 512Mi limit: docs/local-cluster.md). The figures below were measured
on the node images' servers (`python -m tests.integration.images.measure_memory`, how and
what in docs/decisions.md, "Memory floors"): what the container's memory
cgroup charges that cannot be dropped (anonymous memory, shared buffers and
the server's mapped code), right after the server answers and with 100
connections that each ran a point read and a sorted scan. The MySQL image's
entrypoint states the same figure for MySQL at its defaults
(hack/cluster/mysql/docker-entrypoint.sh; tests/unit/contract/api/test_memory_floors.py
checks that they agree), and specs/databases/sizing.py never computes a buffer pool
beyond what is left of the limit by this floor.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024**2
GIB = 1024**3
# A suggested limit is the floor rounded up to a whole number of these.
SUGGESTION_STEP = 256 * MIB


@dataclass(frozen=True)
class Footprint:
    """One engine's server, as measured (rounded up to 8 MiB / a quarter MiB)."""

    name: str  # for messages: "MySQL"
    measured: str  # which server, how: for messages and docs
    server: int  # held once it answers, with a small cache, performance_schema off
    performance_schema: int  # added by performance_schema=ON
    performance_schema_default: bool
    per_connection: int
    cache_overhead: float  # bookkeeping per byte of the cache (InnoDB control blocks)
    default_connections: int  # the server's own max_connections


FOOTPRINTS: dict[str, Footprint] = {
    # mysqld 9.7.4: 229 MiB with performance_schema OFF, 470 MiB ON (32M pool);
    # 0.52 MiB per connection. MySQL 8.4 (the chart's default tag) is not
    # packaged here: taken as 9.7 (the same performance_schema sizing).
    "mysql": Footprint("MySQL", "MySQL 9.7 (8.4 taken as the same)", 232 * MIB, 248 * MIB,
                       True, 3 * MIB // 4, 0.05, 151),
    # mariadbd 11.8: 87 MiB (performance_schema OFF, its default), 181 MiB ON;
    # 0.28-0.39 MiB per connection.
    "mariadb": Footprint("MariaDB", "MariaDB 11.8", 96 * MIB, 96 * MIB, False, MIB // 2,
                         0.05, 151),
    # postgres 17: 13-18 MiB before shared_buffers are touched; 1.45 MiB per
    # backend. shared_buffers come on top, wal_buffers (1/32 of them) too.
    "postgresql": Footprint("PostgreSQL", "PostgreSQL 17", 24 * MIB, 0, False, 3 * MIB // 2,
                            0.05, 100),
    # mongod is not measured here (no image): 192 MiB for mongod itself is an
    # estimate below MongoDB's own rule, which keeps 1 GB out of its cache for
    # everything else; about 1 MiB per connection (MongoDB's production notes).
    "mongodb": Footprint("MongoDB", "mongod (estimated, not measured)", 192 * MIB, 0, False,
                         MIB, 0.0, 0),
    # FerretDB v1.24 (SQLite), the MongoDB-protocol stand-in: 26 MiB; 0.5 MiB
    # per connection.
    "ferretdb": Footprint("FerretDB (MongoDB-protocol stand-in)", "FerretDB v1.24", 32 * MIB, 0,
                          False, MIB // 2, 0.0, 0),
}  # fmt: skip

# The smallest caches the operator computes from a memory limit (topology/
# sizing.py, postgres_sizing.py): the floor with them is the least a server needs.
INNODB_MIN_POOL = 32 * MIB
MIN_SHARED_BUFFERS = 16 * MIB
SHARED_BUFFERS_SHARE = 0.25
MIN_WIRED_TIGER_CACHE = GIB // 4


def footprint(engine: str, protocol_stand_in: bool = False) -> Footprint:
    return FOOTPRINTS["ferretdb" if engine == "mongodb" and protocol_stand_in else engine]


def performance_schema_on(engine: str, value: str | None) -> bool:
    """performance_schema as the settings give it, else the engine's default."""
    if value is None:
        return FOOTPRINTS[engine].performance_schema_default
    return value.strip().upper() in ("ON", "1", "TRUE")


def overhead(fp: Footprint, connections: int, performance_schema: bool) -> int:
    """What the server holds besides its cache: itself, performance_schema, connections."""
    extra = fp.performance_schema if performance_schema else 0
    return fp.server + extra + connections * fp.per_connection


def floor(fp: Footprint, cache: int, connections: int, performance_schema: bool) -> int:
    """Bytes the server needs: its overhead plus the cache and the cache's bookkeeping."""
    return overhead(fp, connections, performance_schema) + int(cache * (1 + fp.cache_overhead))


def suggested_limit(needed: int) -> str:
    """A memory limit that holds `needed`, as a Kubernetes quantity (a multiple of 256Mi)."""
    steps = -(-needed // SUGGESTION_STEP)
    mib = steps * SUGGESTION_STEP // MIB
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def mib(amount: int) -> str:
    return f"{amount / MIB:,.0f} MiB"
