"""The runner's latency floor: this phase's loop with a driver that calls nothing.

Run once per pod before the load (a fraction of a second, one thread): the
same workload stream, pacing checks, timing wrapper and recording as a real
connection. Its per-operation time is what the runner adds to every latency
it reports; environment.json records it as runner.noopLoop (its `seconds`
included, so a shorter loop says so).

Its length is CALIBRATION_S unless DBBENCH_NOOP_LOOP_SECONDS says otherwise: the
test suite runs hundreds of steps per process and shortens it (docs/testing.md,
"How `make test` runs"); the operator never sets it, so a pod's loop is 0.3 s.
"""

from __future__ import annotations

import os
import time

from dbbench_contract.durations import Duration
from dbbench_contract.environment import NoopLoop
from dbbench_runner.client_usage import process_cpu_seconds
from dbbench_runner.config import StepConfig
from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.drivers.noop import NoopDriver
from dbbench_runner.loop import PhaseClock, Progress, run_connection

CALIBRATION_S = 0.3
SECONDS_VARIABLE = "DBBENCH_NOOP_LOOP_SECONDS"


def calibration_seconds() -> float:
    """The loop's length: DBBENCH_NOOP_LOOP_SECONDS when set, else CALIBRATION_S
    (read at each step, so a process's later setting takes effect)."""
    raw = os.environ.get(SECONDS_VARIABLE, "").strip()
    if not raw:
        return CALIBRATION_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 60:
        raise ValueError(f"{SECONDS_VARIABLE}={raw!r}: give seconds between 0 and 60, or unset it")
    return seconds


def noop_loop(
    config: StepConfig, dataset: DatasetGenerator, seconds: float | None = None
) -> NoopLoop:
    seconds = calibration_seconds() if seconds is None else seconds
    # Unpaced and unbounded but by time: the loop's cost, not the schedule's.
    phase = config.phase.model_copy(
        update={
            "target_rate": 0,
            "warmup": None,
            "operations": None,
            "duration": Duration.of_seconds(seconds),
        }
    )
    unpaced = config.model_copy(update={"phase": phase})
    now = time.monotonic()
    clock = PhaseClock(now, now, now + seconds, time.time() - now)
    cpu = process_cpu_seconds()
    measurements = run_connection(
        unpaced,
        dataset=dataset,
        driver=NoopDriver(),
        worker=0,
        clock=clock,
        stopped=lambda: False,
        progress=Progress(),
    )
    cpu = process_cpu_seconds() - cpu
    wall = time.monotonic() - now
    operations = measurements.operations
    per_op = 1e6 / operations if operations else None
    return NoopLoop(
        operations=operations,
        cpu_per_op_us=cpu * per_op if per_op is not None else None,
        wall_per_op_us=wall * per_op if per_op is not None else None,
        seconds=wall,
    )
