"""The timing wrapper around a driver (YCSB's DBWrapper).

Latency runs from the intended start time when one is given (open loop), so
a slow response delays the clock of every later operation instead of hiding
behind it: coordinated omission is corrected by construction.
"""

from __future__ import annotations

from time import monotonic

from dbbench_runner.drivers import Driver
from dbbench_runner.measurement import Measurements
from dbbench_runner.operations import Operation, Status


class TimedDriver:
    def __init__(self, driver: Driver, measurements: Measurements, epoch_offset: float) -> None:
        # Bound methods looked up once: this runs once per operation.
        self._execute = driver.execute
        self._record = measurements.record
        self._record_warmup = measurements.record_warmup
        # time.time() - time.monotonic(), fixed once: epoch stamps without a syscall per op.
        self._epoch_offset = epoch_offset
        # time.monotonic() when the last measured operation completed (None: none
        # yet): where an operation-bounded phase's measured window ends.
        self.last_ended: float | None = None

    def execute(self, operation: Operation, intended: float | None, measuring: bool) -> Status:
        started = monotonic()
        status = self._execute(operation)
        ended = monotonic()
        if measuring:
            origin = started if intended is None else intended
            self._record(
                operation.kind,
                int((ended - origin) * 1_000_000),
                status,
                ended + self._epoch_offset,
                operation.must_find,
            )
            self.last_ended = ended
        else:
            self._record_warmup(status.rows)
        return status
