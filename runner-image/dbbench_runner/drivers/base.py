"""The driver contract: one database call per operation, a Status back.

Drivers know nothing of histograms or time; the timing wrapper measures them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from dbbench_contract.shard_storage import ShardStorage
from dbbench_runner.operations import Operation, Status

log = logging.getLogger(__name__)
T = TypeVar("T")


class DatabaseUnreachableError(Exception):
    """Connecting failed after the configured number of attempts."""


@dataclass(frozen=True)
class StorageSample:
    data_bytes: int
    index_bytes: int
    storage_bytes: int
    # The engine's own row count: an estimate on InnoDB (TABLE_ROWS), never
    # what storage per record is computed from (see dbbench_runner.storage).
    engine_records: int
    # A sharded MongoDB target: the collection on each shard (documents, sizes,
    # chunks; drivers/mongodb_distribution.py); () elsewhere.
    shards: tuple[ShardStorage, ...] = ()


@dataclass(frozen=True)
class CounterSample:
    """The engine's own cumulative count of pages read from disk into its cache
    (InnoDB Innodb_buffer_pool_reads; WiredTiger "pages read into cache"),
    server-wide and reset by a restart."""

    name: str
    value: int


@dataclass(frozen=True)
class ServerInfo:
    engine: str
    version: str
    settings: dict[str, str] = field(default_factory=dict)
    # Bytes of the engine's data cache (InnoDB buffer pool / WiredTiger cache /
    # PostgreSQL's shared_buffers).
    cache_bytes: int | None = None
    client: dict[str, str] = field(default_factory=dict)
    # A sharded MongoDB target: each shard's own mongod (then `settings` and
    # `cache_bytes` are the shards', never the router's), and the router's settings.
    shards: tuple[ShardInfo, ...] = ()
    router: dict[str, str] = field(default_factory=dict)
    # Seconds the server says it has been up (None: it does not say, or a router,
    # whose uptime is not the data's), and when the runner read it: what tells a
    # restart between steps (cache: cold and coldOnce) from none.
    uptime_seconds: float | None = None
    read_at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class ShardInfo:
    """One shard's server as the runner read it on the shard itself (its primary)."""

    name: str
    hosts: str  # listShards' "<replica set>/<member>,<member>"
    version: str = ""
    settings: dict[str, str] = field(default_factory=dict)
    cache_bytes: int | None = None
    error: str | None = None  # why it could not be read (the error's type and code)


class Driver(Protocol):
    def prepare(self) -> None:
        """Create the database, tables/collections and indexes (idempotent)."""

    def execute(self, operation: Operation) -> Status:
        """Perform exactly one database call (one transaction for news+tags rows)."""

    def drain(self) -> None:
        """Return once every write this connection sent has been applied (a no-op
        where writes are acknowledged; MongoDB w:0 returns before applying)."""

    def server_info(self) -> ServerInfo: ...

    def storage(self) -> StorageSample: ...

    def disk_reads(self) -> CounterSample | None:
        """The engine's disk-read counter now; None where the server has none."""

    def close(self) -> None: ...


def with_retries(
    connect: Callable[[], T],
    *,
    what: str,
    attempts: int,
    retry_on: tuple[type[BaseException], ...],
    permanent: Callable[[BaseException], bool] | None = None,
    delay: float = 1.0,
) -> T:
    """Call connect up to `attempts` times, doubling the delay; then a clear error.

    Errors that retrying cannot fix (`permanent`, e.g. access denied) fail at once.
    """
    last: BaseException | None = None
    for attempt in range(1, attempts + 1):
        try:
            return connect()
        except retry_on as exc:
            if permanent is not None and permanent(exc):
                raise DatabaseUnreachableError(f"cannot connect to {what}: {exc}") from exc
            last = exc
            log.warning("connecting to %s failed (attempt %d/%d): %s", what, attempt, attempts, exc)
            if attempt < attempts:
                time.sleep(min(delay * 2 ** (attempt - 1), 10.0))
    raise DatabaseUnreachableError(f"cannot connect to {what} after {attempts} attempts: {last}")
