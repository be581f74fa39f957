"""InnoDB buffer pool sizing (issue 8, defect 4): what MySQL actually allocates
fits the memory limit, for every memory size a benchmark might use.

MySQL rounds `innodb_buffer_pool_size` UP to a multiple of
chunk size x instances (and defaults to 8 instances from 1 GiB on), so the
computed size must already be such a multiple, with the instances emitted.
"""

from __future__ import annotations

import math

import pytest

from dbbench_operator.specs.databases import sizing
from dbbench_operator.specs.databases.request import Hardware
from tests.fixtures.topology import make_request

MIB, GIB = sizing.MIB, sizing.GIB
CHUNK = 128 * MIB
# What a MySQL server uses besides the pool, at worst, with default buffers:
# per connection (thread stack 1 MiB, sort/join/read/read_rnd buffers, net and
# binlog caches) about 2 MiB; performance_schema, the redo log buffer and the
# server itself a few hundred MiB; InnoDB's per-page control blocks ~5% of the pool.
PER_CONNECTION = 2 * MIB
FIXED = 256 * MIB + 128 * MIB  # server + performance_schema (MySQL 8.4 defaults)
CONTROL_BLOCKS = 0.05

SIZES = [
    int(x * MIB)
    for x in (768, 1024, 1536, 2048, 3000, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 65536)
] + [n * GIB for n in (96, 128, 192, 256, 512)]


def mysql_allocated(settings: dict[str, str]) -> int:
    """The pool MySQL 8.4 allocates for these flags (its documented rounding)."""
    size = int(settings["innodb_buffer_pool_size"])
    instances = int(settings.get("innodb_buffer_pool_instances", 8 if size >= GIB else 1))
    if size < GIB:
        instances = 1
    chunk = min(CHUNK, size // instances)
    unit = chunk * instances
    return math.ceil(size / unit) * unit


def request(limit: int, **settings: str) -> object:
    hardware = Hardware(
        resources={"limits": {"memory": str(limit)}, "requests": {"memory": str(limit)}}
    )
    return make_request("mysql", "standalone", hardware=hardware, settings=settings)


@pytest.mark.parametrize("limit", SIZES, ids=[f"{s // MIB}Mi" for s in SIZES])
def test_pool_mysql_allocates_fits_the_limit_with_headroom(limit: int) -> None:
    settings = sizing.engine_settings(request(limit))  # type: ignore[arg-type]
    assert "innodb_buffer_pool_instances" in settings
    allocated = mysql_allocated(settings)
    assert allocated == int(settings["innodb_buffer_pool_size"]), "MySQL would round it up"
    used = allocated * (1 + CONTROL_BLOCKS) + FIXED + 151 * PER_CONNECTION
    assert used <= limit
    # ...and not wastefully small: at least half the limit from 2 GiB on.
    if limit >= 2 * GIB:
        assert allocated >= limit / 2


def test_more_connections_leave_a_smaller_pool() -> None:
    few = sizing.engine_settings(request(8 * GIB))  # type: ignore[arg-type]
    many = sizing.engine_settings(request(8 * GIB, max_connections="1000"))  # type: ignore[arg-type]
    assert int(many["innodb_buffer_pool_size"]) < int(few["innodb_buffer_pool_size"])
    used = mysql_allocated(many) * (1 + CONTROL_BLOCKS) + FIXED + 1000 * PER_CONNECTION
    assert used <= 8 * GIB


@pytest.mark.parametrize("engine", ["mysql", "mariadb"])
def test_max_connections_is_sized_from_the_runs_connections(engine: str) -> None:
    """The run's connections (request.connections, from runner.pods x threads: see
    tests/unit/contract/api/test_mysql_connections.py) become max_connections, never below the
    servers' default 151, and the pool keeps per-connection memory for that many;
    the user's max_connections wins over both."""
    hardware = Hardware(resources={"limits": {"memory": "8Gi"}})

    def settings(connections: int, **given: str) -> dict[str, str]:
        return sizing.engine_settings(make_request(
            engine, "standalone", hardware=hardware, connections=connections, settings=given
        ))  # fmt: skip

    def pool(connections: int) -> str:
        return str(sizing.innodb_buffer_pool(8 * GIB, connections)[0])

    many, few, given = settings(913), settings(23), settings(913, max_connections="1200")
    assert (many["max_connections"], many["innodb_buffer_pool_size"]) == ("913", pool(913))
    assert (few["max_connections"], few["innodb_buffer_pool_size"]) == ("151", pool(151))
    assert (given["max_connections"], given["innodb_buffer_pool_size"]) == ("1200", pool(1200))
    assert int(many["innodb_buffer_pool_size"]) < int(few["innodb_buffer_pool_size"])
    # Without a memory limit there is no pool to size, but the connections still count.
    unlimited = make_request(engine, "standalone", hardware=Hardware(), connections=913)
    assert sizing.engine_settings(unlimited)["max_connections"] == "913"


def test_mariadb_gets_no_instances_flag() -> None:
    # MariaDB 10.6+ removed innodb_buffer_pool_instances: the flag would stop the server.
    hardware = Hardware(resources={"limits": {"memory": "8Gi"}})
    settings = sizing.engine_settings(make_request("mariadb", "standalone", hardware=hardware))
    assert "innodb_buffer_pool_instances" not in settings
    assert int(settings["innodb_buffer_pool_size"]) % CHUNK == 0


@pytest.mark.parametrize(
    ("pool", "depth"),
    [("8M", "100"), ("16M", "100"), ("64M", "256"), ("128M", "512"), ("256M", None), ("2G", None)],
)
def test_small_pools_keep_few_pages_free(pool: str, depth: str | None) -> None:
    """The page cleaner keeps ~innodb_lru_scan_depth pages free (1536 on MariaDB): in a
    16 MiB pool (1024 pages) that was most of it. Small pools get a sixteenth instead
    (tests/integration/runner/test_disk_reads_mariadb.py runs MariaDB with these flags)."""
    for engine in ("mysql", "mariadb"):
        settings = sizing.engine_settings(
            make_request(engine, "standalone", settings={"innodb_buffer_pool_size": pool})
        )
        assert settings.get("innodb_lru_scan_depth") == depth
        # a restart starts with an empty pool (cache: cold), never with a reloaded dump
        assert settings["innodb_buffer_pool_dump_at_shutdown"] == "OFF"
        assert settings["innodb_buffer_pool_load_at_startup"] == "OFF"
