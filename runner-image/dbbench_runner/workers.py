"""Worker processes: each opens its connections, then runs one thread per connection.

Several processes per pod keep the GIL from capping throughput. Messages to
the parent go through one queue: ("ready", n), ("failed", n, text[, exit code]),
("progress", n, ops, errors, p99, records, written, seconds),
("done", n, wire measurements, (cpu, wait, wall)): the last is the process's
client usage over the phase (client_usage.py). `seconds` holds the whole
seconds that ended since the previous message, summed by operation type (the
parent's live metrics, live_metrics.py).

Workers are forked from a fork server (multiprocessing "forkserver") that has
imported this module and the engine's driver once: a spawned worker imported
them again (~0.4 s of CPU per process, the runner's largest start cost), and
a long-lived caller (the tests call run_step hundreds of times) paid that on
every step. Plain fork is not an option: the parent may hold threads (the
/metrics server, pymongo's monitors) when it starts workers; the fork server
is a fresh single-threaded interpreter. What a worker would otherwise inherit
from the parent at start comes in its plan instead (the debug switch: the
server's environment is the one it started with), and a pipe only the parent
holds open tells it that the parent is gone (its parent process is the server,
which outlives the parent while any worker runs).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

from dbbench_runner.client_usage import process_cpu_seconds, thread_wait_seconds
from dbbench_runner.config import StepConfig
from dbbench_runner.datasets import DatasetGenerator, generator_for
from dbbench_runner.drivers import Driver, driver_module, open_driver
from dbbench_runner.keyspace import worker_index
from dbbench_runner.live_metrics import SecondsWire, drain_seconds
from dbbench_runner.logs import configure_logging, debug_requested
from dbbench_runner.loop import PhaseClock, Progress, run_connection
from dbbench_runner.measurement import Measurements
from dbbench_runner.seconds_spool import spool_path
from dbbench_runner.series import series_unit
from dbbench_runner.sources import SourceError

# The exit code of a step whose data source has bad input (running.EXIT_BAD_SOURCE).
EXIT_BAD_SOURCE = 7

REPORT_EVERY_S = 1.0


@dataclass(frozen=True)
class WorkerPlan:
    process: int
    config_json: str
    threads: tuple[int, ...]  # this pod's thread numbers run by this process
    # Where connections spool their ended seconds (seconds_spool); "": in memory.
    spool_dir: str = ""
    # The parent's --debug/DBBENCH_DEBUG (the fork server's environment may be older).
    debug: bool = False


def worker_context(engine: str) -> ForkServerContext:
    """The start method of worker processes (see the module's docstring).

    The preload list is read when the server starts (once per parent process):
    a later step on another engine imports its driver in each worker, as before.
    """
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__, driver_module(engine)])
    return context


def threads_of(process: int, processes: int, threads: int) -> tuple[int, ...]:
    return tuple(range(process, threads, processes))


def worker_main(
    plan: WorkerPlan, queue: Any, go: Event, stop: Event, clock_box: Any, *, alive: Connection
) -> None:
    """Process entry point (forked by the fork server). Never raises: failures go to
    the parent. `alive`: the read end of a pipe the parent alone holds open."""
    configure_logging(debug=plan.debug)
    config = StepConfig.model_validate_json(plan.config_json)
    dataset = generator_for(config.dataset, config.phase.id_mode)
    drivers = _connect(plan, config, dataset, queue)
    if drivers is None:
        return
    orphaned = _watch_parent(alive)
    queue.put(("ready", plan.process))
    if not _started(go, stop, orphaned):
        _close(drivers)
        return
    start, measure_from, deadline, epoch_offset = clock_box[:]
    cpu_at_go = process_cpu_seconds()

    def stopped() -> bool:
        # Stop when told to, or when the parent is gone (never load an orphaned run).
        return stop.is_set() or orphaned.is_set()

    clock = PhaseClock(start, measure_from, deadline if deadline > 0 else None, epoch_offset)
    results: list[Measurements] = []
    failures: list[str] = []
    bad_input: list[str] = []
    progresses = [Progress() for _ in drivers]
    waits: list[float] = []
    ends: list[float] = []  # when each connection ended (the main loop hears of it after)
    finished = threading.Event()  # set by the last connection to end

    def run(index: int, worker: int, driver: Driver) -> None:
        waited = thread_wait_seconds()
        try:
            results.append(
                run_connection(
                    config,
                    dataset=dataset,
                    driver=driver,
                    worker=worker,
                    clock=clock,
                    stopped=stopped,
                    progress=progresses[index],
                    spool=spool_path(Path(plan.spool_dir), worker) if plan.spool_dir else None,
                )
            )
        except SourceError as exc:
            # Bad input is the user's to fix, not a crash: its message, and every
            # connection of the pod stops (the step fails; nothing is reported).
            bad_input.append(str(exc))
            stop.set()
        except Exception:  # noqa: BLE001 - a crashed connection must not hang the pod
            failures.append(traceback.format_exc())
        finally:
            progresses[index].finished = True
            waits.append(thread_wait_seconds() - waited)
            ends.append(time.monotonic())
            if len(ends) == len(drivers):
                finished.set()

    connections = [
        threading.Thread(target=run, args=(i, w, d), daemon=True)
        for i, (w, d) in enumerate(drivers)
    ]
    for connection in connections:
        connection.start()
    # A message a second while connections run, and the last figures as soon as
    # they end (a plain sleep made every step wait up to a second more).
    ended = not drivers
    while not ended:
        ended = finished.wait(REPORT_EVERY_S)
        queue.put(_progress(plan.process, progresses))
    for connection in connections:
        connection.join()
    cpu = process_cpu_seconds() - cpu_at_go
    usage = (cpu, sum(waits), max(ends, default=time.monotonic()) - start)
    _close(drivers)
    queue.put(
        _outcome(
            plan.process,
            config,
            results=results,
            failures=failures,
            bad_input=bad_input,
            usage=usage,
        )
    )


def _connect(
    plan: WorkerPlan, config: StepConfig, dataset: DatasetGenerator, queue: Any
) -> list[tuple[int, Driver]] | None:
    """This process's connections; None once a failure has gone to the parent."""
    drivers: list[tuple[int, Driver]] = []
    try:
        for thread in plan.threads:
            worker = worker_index(config.pod.index, config.threads, thread)
            drivers.append((worker, open_driver(config, dataset, worker)))
    except Exception as exc:  # noqa: BLE001 - unreachable or not: reported to the parent
        queue.put(("failed", plan.process, f"{exc}"))
        _close(drivers)
        return None
    return drivers


def worker_processes(
    context: ForkServerContext,
    config: StepConfig,
    out: Path,
    processes: int,
    shared: tuple[Any, Event, Event, Any, Connection],
) -> list[Any]:
    """The pod's worker processes, not started. `shared`: the queue, go, stop,
    the clock box and the read end of the parent's alive pipe."""
    messages, go, stop, clock_box, alive = shared
    children = []
    for process in range(processes):
        plan = WorkerPlan(
            process,
            config.model_dump_json(),
            threads_of(process, processes, config.threads),
            str(out),
            debug=debug_requested(),
        )
        children.append(
            context.Process(
                target=worker_main,
                args=(plan, messages, go, stop, clock_box),
                kwargs={"alive": alive},
                daemon=True,
            )
        )
    return children


def _started(go: Event, stop: Event, orphaned: threading.Event) -> bool:
    """Wait for "go"; False: stopped first, or the parent died before the start."""
    while not go.wait(REPORT_EVERY_S):
        if orphaned.is_set():
            return False
    return not stop.is_set()


def _watch_parent(alive: Connection) -> threading.Event:
    """Set once the parent is gone: nothing is ever sent on `alive`, so a read
    returns only at end of file, when the parent's end closes (its exit, a kill)."""
    orphaned = threading.Event()

    def wait() -> None:
        with contextlib.suppress(EOFError, OSError):
            alive.recv_bytes()
        orphaned.set()

    threading.Thread(target=wait, name="parent-watch", daemon=True).start()
    return orphaned


def _outcome(
    process: int,
    config: StepConfig,
    *,
    results: list[Measurements],
    failures: list[str],
    bad_input: list[str],
    usage: tuple[float, float, float],
) -> tuple[Any, ...]:
    """The process's last message: bad input, a crash, or its measurements."""
    if bad_input:
        return ("failed", process, bad_input[0], EXIT_BAD_SOURCE)
    if failures:
        return ("failed", process, failures[0])
    total = Measurements(
        checkpoint_every=results[0].checkpoint_every if results else 1,
        series_unit=series_unit(config.phase.type),
    )
    for measurements in results:
        total.add(measurements)
    return ("done", process, total.to_wire(), usage)


def _progress(process: int, progresses: list[Progress]) -> tuple[Any, ...]:
    return (
        "progress",
        process,
        sum(p.operations for p in progresses),
        sum(p.errors for p in progresses),
        max((p.p99_ms for p in progresses), default=0.0),
        sum(p.records for p in progresses),
        sum(p.written for p in progresses),
        _seconds(progresses),
    )


def _seconds(progresses: list[Progress]) -> SecondsWire:
    return drain_seconds(p.seconds for p in progresses)


def _close(drivers: list[tuple[int, Driver]]) -> None:
    for _, driver in drivers:
        driver.close()
