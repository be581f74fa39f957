"""Database drivers; `open_driver` picks one by engine."""

from __future__ import annotations

from dbbench_runner.config import StepConfig
from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.drivers.base import (
    CounterSample,
    DatabaseUnreachableError,
    Driver,
    ServerInfo,
    StorageSample,
)

__all__ = [
    "CounterSample",
    "DatabaseUnreachableError",
    "Driver",
    "ServerInfo",
    "StorageSample",
    "driver_module",
    "open_driver",
]


def driver_module(engine: str) -> str:
    """The module open_driver imports for `engine` (what a fork server preloads)."""
    if engine == "mongodb":
        return "dbbench_runner.drivers.mongodb"
    if engine == "postgresql":
        return "dbbench_runner.drivers.postgresql"
    return "dbbench_runner.drivers.mysql"


def open_driver(
    config: StepConfig, dataset: DatasetGenerator, worker: int = 0, *, control: bool = False
) -> Driver:
    """Connect (with bounded retries) to the target of a step.

    The control connection (prepare, server info, storage samples) must not
    assume the database exists yet; worker connections open it directly.
    Each client library is imported only for its engine.
    """
    engine = config.target.engine
    if engine == "mongodb":
        from dbbench_runner.drivers.mongodb import MongoDriver  # noqa: PLC0415

        return MongoDriver.connect(config, dataset)
    if engine == "postgresql":
        from dbbench_runner.drivers.postgresql import PostgresDriver  # noqa: PLC0415

        return PostgresDriver.connect(config, dataset, worker, control=control)
    from dbbench_runner.drivers.mysql import MySQLDriver  # noqa: PLC0415

    return MySQLDriver.connect(config, dataset, worker, control=control)
