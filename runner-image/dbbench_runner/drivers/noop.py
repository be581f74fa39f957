"""A driver that calls no database: the runner's own cost per operation (calibration)."""

from __future__ import annotations

from dbbench_runner.drivers.base import CounterSample, ServerInfo, StorageSample
from dbbench_runner.operations import Insert, Operation, Status

_ONE_ROW = Status(ok=True, rows=1)


class NoopDriver:
    def prepare(self) -> None:
        return None

    def execute(self, operation: Operation) -> Status:
        if isinstance(operation, Insert):
            return Status(ok=True, rows=len(operation.records))
        return _ONE_ROW

    def drain(self) -> None:
        return None

    def server_info(self) -> ServerInfo:
        return ServerInfo(engine="none", version="none")

    def storage(self) -> StorageSample:
        return StorageSample(0, 0, 0, 0)

    def disk_reads(self) -> CounterSample | None:
        return None

    def close(self) -> None:
        return None
