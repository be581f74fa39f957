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
    "open_driver",
]


def open_driver(
    config: StepConfig, dataset: DatasetGenerator, worker: int = 0, *, control: bool = False
) -> Driver:
    """Connect (with bounded retries) to the target of a step.

    The control connection (prepare, server info, storage samples) must not
    assume the database exists yet; worker connections open it directly.
    """
    if config.target.engine == "mongodb":
        from dbbench_runner.drivers.mongodb import MongoDriver  # noqa: PLC0415

        return MongoDriver.connect(config, dataset)
    from dbbench_runner.drivers.mysql import MySQLDriver  # noqa: PLC0415

    return MySQLDriver.connect(config, dataset, worker, control=control)
