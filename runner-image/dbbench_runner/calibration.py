"""The runner's latency floor: this phase's loop with a driver that calls nothing.

Run once per pod before the load (a fraction of a second, one thread): the
same workload stream, pacing checks, timing wrapper and recording as a real
connection. Its per-operation time is what the runner adds to every latency
it reports; environment.json records it as runner.noopLoop.
"""

from __future__ import annotations

import time

from dbbench_contract.durations import Duration
from dbbench_contract.environment import NoopLoop
from dbbench_runner.client_usage import process_cpu_seconds
from dbbench_runner.config import StepConfig
from dbbench_runner.datasets import DatasetGenerator
from dbbench_runner.drivers.noop import NoopDriver
from dbbench_runner.loop import PhaseClock, Progress, run_connection

CALIBRATION_S = 0.3


def noop_loop(
    config: StepConfig, dataset: DatasetGenerator, seconds: float = CALIBRATION_S
) -> NoopLoop:
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
