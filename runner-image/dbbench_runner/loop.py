"""One connection's load loop: pacing, warm-up, and the time/operation bounds."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from dbbench_runner.config import StepConfig
from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.drivers import Driver
from dbbench_runner.measurement import Measurements, SecondBucket
from dbbench_runner.operations import Insert
from dbbench_runner.seconds_spool import write_seconds
from dbbench_runner.series import series_unit
from dbbench_runner.sources import refused_row
from dbbench_runner.timing import TimedDriver
from dbbench_runner.workloads import operation_budget, operations_for

# Checking the cross-process stop flag takes a lock; do it every N operations.
STOP_CHECK_EVERY = 64
PUBLISH_EVERY_S = 1.0


@dataclass(frozen=True)
class PhaseClock:
    """Shared time marks (time.monotonic, the same clock in every process)."""

    start: float
    measure_from: float
    deadline: float | None
    epoch_offset: float


@dataclass
class Progress:
    operations: int = 0
    records: int = 0  # measured, for records/s
    written: int = 0  # warm-up included, for storage samples
    errors: int = 0
    p99_ms: float = 0.0
    finished: bool = False
    # Whole seconds' buckets (operation type, bucket) not yet forwarded to the
    # parent's live metrics: a bucket is final once its second has passed, so
    # the worker's reporting thread reads it without a lock (deque appends and
    # pops are atomic).
    seconds: deque[tuple[str, SecondBucket]] = field(default_factory=deque)


def checkpoint_granularity(config: StepConfig) -> int:
    """Series units (records or operations) per checkpoint: fine enough for
    reportEvery windows over all workers."""
    return max(1, config.phase.report_every // (4 * config.workers_total))


def run_connection(
    config: StepConfig,
    *,
    dataset: DatasetGenerator,
    driver: Driver,
    worker: int,
    clock: PhaseClock,
    stopped: Callable[[], bool],
    progress: Progress,
    spool: Path | None = None,
) -> Measurements:
    """`spool`: the file that takes this connection's ended seconds out of memory
    (dbbench_runner.seconds_spool); without it they stay in the measurements."""
    measurements = Measurements(
        checkpoint_every=checkpoint_granularity(config),
        series_unit=series_unit(config.phase.type),
    )
    if spool is not None:
        spool.unlink(missing_ok=True)
        measurements.spool_to(str(spool), partial(write_seconds, spool))
    timed = TimedDriver(driver, measurements, clock.epoch_offset)
    budget = operation_budget(config, worker)
    rate = config.phase.target_rate
    interval = config.workers_total / rate if rate > 0 else 0.0
    now = time.monotonic()
    if clock.start > now:
        time.sleep(clock.start - now)
    measured = 0
    deadline_reached = False
    next_publish = time.monotonic() + PUBLISH_EVERY_S
    # issued counts operations started, warm-up included: the open-loop schedule index.
    for issued, operation in enumerate(operations_for(config, dataset, worker)):
        now = time.monotonic()
        if clock.deadline is not None and now >= clock.deadline:
            deadline_reached = True
            break
        if (budget is not None and measured >= budget) or (
            issued % STOP_CHECK_EVERY == 0 and stopped()
        ):
            break
        intended = None
        if interval:
            intended = clock.start + issued * interval
            if clock.deadline is not None and intended >= clock.deadline:
                # Scheduled at or past the deadline: not part of the phase (waiting
                # for it would run one operation per connection after the window).
                deadline_reached = True
                break
            if intended > now:
                time.sleep(intended - now)
        measuring = (now if intended is None else intended) >= clock.measure_from
        status = timed.execute(operation, intended, measuring)
        measured += measuring
        if isinstance(operation, Insert):
            measurements.inserted(operation.last_number, status.rows)
            if operation.origins and not status.ok:
                # Records from files load whole or fail the step: name the refused row.
                raise refused_row(driver.execute, operation, status)
        if now >= next_publish:
            _publish(progress, measurements, time.monotonic() + clock.epoch_offset)
            next_publish = now + PUBLISH_EVERY_S
    _close_window(
        config,
        driver=driver,
        timed=timed,
        measurements=measurements,
        clock=clock,
        deadline_reached=deadline_reached,
    )
    _publish(progress, measurements, None)
    progress.finished = True
    return measurements


def _close_window(
    config: StepConfig,
    *,
    driver: Driver,
    timed: TimedDriver,
    measurements: Measurements,
    clock: PhaseClock,
    deadline_reached: bool,
) -> None:
    # Within the measured window: unacknowledged writes count once applied.
    driver.drain()
    last = timed.last_ended
    if last is not None and config.write_concern == "unacknowledged":
        last = time.monotonic()  # the w:0 writes were done when the drain answered
    measurements.ended = _window_end(last, clock.deadline if deadline_reached else None)
    if measurements.ended is not None:
        measurements.ended += clock.epoch_offset
    # The last partial checkpoint closes with the window: the series' last window
    # spans the same time as the summary's.
    ended = measurements.ended
    measurements.flush(time.monotonic() + clock.epoch_offset if ended is None else ended)


def _window_end(last_ended: float | None, deadline: float | None) -> float | None:
    """Where this connection's measured window ends (time.monotonic): at the deadline
    when the phase ran to it; otherwise (operations done, stopped) at the last
    measured operation's completion. Never at the connection's shutdown: what follows
    the work is not the time it took. An operation counts when it starts (open loop:
    is due) inside the window, at both ends: one still running at the deadline is
    counted and its whole latency recorded, and the window still ends at the
    deadline, so a phase paced at R ops/s reports R. None: nothing was measured."""
    if deadline is None:
        return last_ended
    return deadline


def _publish(progress: Progress, measurements: Measurements, epoch: float | None) -> None:
    """Once a second (never per operation): totals, and the seconds that have ended
    before `epoch` (all of them when None: the loop is over)."""
    # Written by this thread only; readers see whole ints (the GIL).
    progress.operations = measurements.operations
    progress.records = measurements.records["insert"]
    progress.written = measurements.written_records
    progress.errors = measurements.error_count
    progress.p99_ms = measurements.p99_ms()
    # Later operations end after `epoch` (same clock): earlier seconds are final.
    current = None if epoch is None else int(epoch)
    progress.seconds.extend(measurements.seal(current))
