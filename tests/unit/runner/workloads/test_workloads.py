from __future__ import annotations

import collections
import itertools
import math
import time

from dbbench_runner.config import StepConfig, parse_config
from dbbench_runner.datasets import generator_for
from dbbench_runner.datasets.indexed4 import NUMBER_RANGE
from dbbench_runner.drivers.base import ServerInfo, StorageSample
from dbbench_runner.histogram import lowest_of
from dbbench_runner.loop import PhaseClock, Progress, run_connection
from dbbench_runner.measurement import Measurements
from dbbench_runner.operations import Insert, Operation, Query, Read, Scan, Status, Update
from dbbench_runner.workloads import operations_for
from dbbench_runner.workloads.query import MISS_BOUND, must_find

TARGET = {"name": "m", "engine": "mariadb", "host": "127.0.0.1", "port": 1}


def config(shape: str, phase: dict[str, object], threads: int = 1) -> StepConfig:
    return parse_config(
        {
            "target": TARGET,
            "dataset": {"shape": shape, "records": 1000},
            "phase": {"name": "p", **phase},
            "threads": threads,
        }
    )


def test_mix_follows_the_proportions() -> None:
    step = config(
        "ycsb",
        {
            "type": "mix",
            "mix": {"read": 50, "insert": 10, "update": 30, "scan": 10},
            "operations": 1,
        },
    )
    generator = generator_for(step.dataset)
    ops = list(itertools.islice(operations_for(step, generator, 0), 20_000))
    kinds = collections.Counter(op.kind for op in ops)
    for kind, share in {"read": 0.5, "insert": 0.1, "update": 0.3, "scan": 0.1}.items():
        assert abs(kinds[kind] / len(ops) - share) < 0.015
    inserted = [op.records[0]["YCSB_KEY"] for op in ops if isinstance(op, Insert)]
    assert inserted[:2] == [generator.key(1001), generator.key(1002)]
    for op in ops:
        if isinstance(op, Update):
            assert set(op.fields) == {"field0"}
        if isinstance(op, Scan):
            assert op.count == 100


def test_query_workload_cycles_and_stays_in_the_hot_range() -> None:
    names = ["indexedEquality", "twoFieldProjection", "sortSkip", "scan100"]
    hot = {"type": "hotspot", "dataFraction": 0.1}
    step = config(
        "indexed4", {"type": "query", "queries": names, "operations": 1, "distribution": hot}
    )
    ops = list(itertools.islice(operations_for(step, generator_for(step.dataset), 0), 4000))
    assert [op.kind for op in ops[:8]] == names * 2
    assert all(isinstance(op, Query) and 0 <= op.number < NUMBER_RANGE // 10 for op in ops)


def _chance_of_at_most(mean: float, rows: int) -> float:
    """P(X <= rows) for X Poisson(mean), summed exactly."""
    return sum(math.exp(-mean + k * math.log(mean) - math.lgamma(k + 1)) for k in range(rows + 1))


def test_a_query_must_find_only_where_an_empty_answer_is_practically_impossible() -> None:
    assert must_find("scan100", 0, 0, 1)  # no condition: empty only if the table is
    assert not any(must_find(q, 0, 0, 0) for q in ("scan100", "indexedEquality", "sortSkip"))
    # An equality at 20,000 records finds a row about 4% of the time: never an error.
    assert not must_find("indexedEquality", 7, 0, 20_000)
    # Field benchmark 2 at scale (200M records): about 380 matches per value.
    assert must_find("indexedEquality", 7, 0, 200_000_000)
    assert must_find("twoFieldProjection", 7, 500, 200_000_000)
    assert not must_find("twoFieldProjection", 7, 999, 200_000_000)  # 1 in 1000 of 380
    # sortSkip skips 100 rows: at 20,000 records a value in the hot 10% leaves ~18,000.
    assert must_find("sortSkip", NUMBER_RANGE // 10, 0, 20_000)
    assert not must_find("sortSkip", NUMBER_RANGE - 10, 0, 20_000)
    assert not must_find("sortSkip", 0, 0, 100)
    # Where it says must, the exact chance of an empty answer is below the bound.
    cases = [(records, number) for records in (20_000, 10**6, 10**7, 10**8)
             for number in range(0, NUMBER_RANGE, NUMBER_RANGE // 50)]  # fmt: skip
    musts = 0
    for records, number in cases:
        for name, mean, rows in (
            ("indexedEquality", records / NUMBER_RANGE, 0),
            ("sortSkip", records * (NUMBER_RANGE - number) / NUMBER_RANGE, 100),
        ):
            if must_find(name, number, 0, records):
                musts += 1
                assert _chance_of_at_most(mean, rows) < MISS_BOUND, (name, records, number)
    assert musts > len(cases)  # most sortSkips, and the equalities at 10^8 records


class SlowDriver:
    """A stand-in for a database that stalls once (to test the timing wrapper only)."""

    def __init__(self, stall_at: int, stall_s: float) -> None:
        self.calls = 0
        self.stall_at = stall_at
        self.stall_s = stall_s

    def prepare(self) -> None:
        pass

    def execute(self, operation: Operation) -> Status:
        self.calls += 1
        if self.calls == self.stall_at:
            time.sleep(self.stall_s)
        return Status(ok=True, rows=1 if isinstance(operation, Read) else 0)

    def drain(self) -> None:
        pass

    def server_info(self) -> ServerInfo:
        return ServerInfo("test", "0")

    def storage(self) -> StorageSample:
        return StorageSample(0, 0, 0, 0)

    def close(self) -> None:
        pass


def run(step: StepConfig, driver: SlowDriver, warmup: float = 0.0) -> object:
    now = time.monotonic()
    deadline = now + warmup + step.duration if step.duration else None
    clock = PhaseClock(now, now + warmup, deadline, time.time() - time.monotonic())
    return run_connection(
        step,
        dataset=generator_for(step.dataset),
        driver=driver,
        worker=0,
        clock=clock,
        stopped=lambda: False,
        progress=Progress(),
    )


def test_open_loop_latency_counts_from_the_intended_start() -> None:
    # 200 ops/s; the 20th call stalls 0.5 s. A closed-loop timer would record one
    # slow op; measured from the intended start, the ~100 ops scheduled during
    # the stall are late too (coordinated omission corrected).
    step = config(
        "flat45", {"type": "mix", "mix": {"read": 1}, "operations": 200, "targetRate": 200}
    )
    measurements = run(step, SlowDriver(stall_at=20, stall_s=0.5))
    histogram = measurements.histograms["read"]  # type: ignore[attr-defined]
    assert histogram.get_total_count() == 200
    late = sum(count for index, count in histogram.buckets() if lowest_of(index) > 100_000)
    assert late > 50


def test_closed_loop_records_the_stall_once() -> None:
    step = config("flat45", {"type": "mix", "mix": {"read": 1}, "operations": 200})
    measurements = run(step, SlowDriver(stall_at=20, stall_s=0.3))
    histogram = measurements.histograms["read"]  # type: ignore[attr-defined]
    assert histogram.get_total_count() == 200
    assert histogram.get_value_at_percentile(99) < 100_000
    assert histogram.get_max_value() > 250_000


def test_target_rate_is_held() -> None:
    step = config(
        "flat45", {"type": "mix", "mix": {"read": 1}, "duration": "1s", "targetRate": 300}
    )
    measurements = run(step, SlowDriver(stall_at=-1, stall_s=0))
    assert abs(measurements.operations - 300) <= 6  # type: ignore[attr-defined]


def test_warmup_is_excluded_from_the_results() -> None:
    step = config(
        "flat45",
        {
            "type": "mix",
            "mix": {"read": 1},
            "operations": 100,
            "targetRate": 500,
        },
    )
    driver = SlowDriver(stall_at=-1, stall_s=0)
    # The clock's warm-up (a step file gives one only with a duration).
    measurements = run(step, driver, warmup=0.3)
    assert measurements.operations == 100  # type: ignore[attr-defined]
    assert 130 <= measurements.warmup_operations <= 170  # type: ignore[attr-defined]
    assert driver.calls == 100 + measurements.warmup_operations  # type: ignore[attr-defined]


def test_point_reads_with_a_duration_read_the_keys_again() -> None:
    # The quickstart's pointReads (warm-up 5 s, duration 20 s) read each key once
    # and measured nothing: warm-up had used up the keys.
    timed = config("flat45", {"type": "pointReads", "keys": 100, "duration": "20s"})
    generator = generator_for(timed.dataset)
    ops = list(itertools.islice(operations_for(timed, generator, 0), 250))
    keys = [op.key for op in ops if isinstance(op, Read)]
    assert len(keys) == 250
    assert len(set(keys[:100])) == 100
    assert keys[100:200] == keys[:100]
    counted = config("flat45", {"type": "pointReads", "keys": 100, "operations": 100})
    assert len(list(operations_for(counted, generator_for(counted.dataset), 0))) == 100


class ClockedDriver(SlowDriver):
    """Records when each call started and ended (time.monotonic); each takes `slow_s`."""

    def __init__(self, slow_s: float = 0.0) -> None:
        super().__init__(stall_at=-1, stall_s=0)
        self.slow_s = slow_s
        self.spans: list[tuple[float, float]] = []
        self.returned = 0.0

    def execute(self, operation: Operation) -> Status:
        began = time.monotonic()
        time.sleep(self.slow_s)
        status = super().execute(operation)
        self.spans.append((began, time.monotonic()))
        return status


def clocked_run(step: StepConfig, driver: ClockedDriver) -> tuple[Measurements, PhaseClock]:
    """The connection's measurements and clock; `driver.returned`: when it returned."""
    now = time.monotonic()
    deadline = now + step.duration if step.duration else None
    clock = PhaseClock(now, now, deadline, time.time() - time.monotonic())
    measurements = run_connection(step, dataset=generator_for(step.dataset), driver=driver,
                                  worker=0, clock=clock, stopped=lambda: False,
                                  progress=Progress())  # fmt: skip
    driver.returned = time.monotonic()
    return measurements, clock


def epoch(clock: PhaseClock, monotonic: float) -> float:
    """A time.monotonic() as the measurements' epoch (computed as they compute it)."""
    return monotonic + clock.epoch_offset


def test_a_paced_phase_does_its_rate_until_the_deadline_and_its_window_ends_there() -> None:
    # Issue 29: the connection slept until the next scheduled time even past the
    # deadline and ran one more operation after it.
    step = config("flat45", {"type": "mix", "mix": {"read": 1}, "duration": "1s",
                             "targetRate": 200})  # fmt: skip
    driver = ClockedDriver()
    measurements, clock = clocked_run(step, driver)
    assert clock.deadline is not None
    assert measurements.operations == len(driver.spans) == 200
    # Even when the machine stalls the connection and the last operation, due
    # before the deadline, ends after it: the window ends at the deadline.
    assert measurements.ended == epoch(clock, clock.deadline)


def test_an_operation_running_at_the_deadline_counts_and_the_window_ends_there() -> None:
    # Closed loop: an operation started before the deadline and still running at it
    # is counted (it started inside the window), and the window ends at the deadline,
    # not at its completion nor later at the connection's own end.
    step = config("flat45", {"type": "mix", "mix": {"read": 1}, "duration": "500ms"})
    driver = ClockedDriver(slow_s=0.6)
    measurements, clock = clocked_run(step, driver)
    assert clock.deadline is not None
    ((began, ended),) = driver.spans
    assert began < clock.deadline < ended
    assert measurements.operations == 1
    assert measurements.ended == epoch(clock, clock.deadline)


def test_an_operation_bounded_phase_ends_its_window_at_its_last_operation() -> None:
    step = config("flat45", {"type": "mix", "mix": {"read": 1}, "operations": 50})
    driver = ClockedDriver()
    measurements, clock = clocked_run(step, driver)
    assert measurements.operations == len(driver.spans) == 50
    ended = driver.spans[-1][1]
    assert epoch(clock, ended) <= (measurements.ended or 0) < epoch(clock, driver.returned)
