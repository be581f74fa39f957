"""One pod's run of one step: prepare, start workers, watch, collect, write results."""

from __future__ import annotations

import json
import logging
import queue as queue_module
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from dbbench_runner import environment as env
from dbbench_runner.calibration import noop_loop
from dbbench_runner.client_usage import ProcessUsage, pod_usage, process_cpu_seconds
from dbbench_runner.config import StepConfig
from dbbench_runner.cpu_budget import cpu_budget
from dbbench_runner.datasets import DatasetGenerator, generator_for
from dbbench_runner.drivers import CounterSample, DatabaseUnreachableError, Driver, open_driver
from dbbench_runner.keyspace import split, worker_index
from dbbench_runner.live_metrics import LiveTotals
from dbbench_runner.measurement import Measurements
from dbbench_runner.progress import progress_line, report
from dbbench_runner.results import ENVIRONMENT, PROGRESS, RunMeta, atomic_write, write_results
from dbbench_runner.seconds_spool import remove_spools
from dbbench_runner.series import series_unit
from dbbench_runner.server_counters import CounterWindow, window
from dbbench_runner.sources import SourceError, check_source
from dbbench_runner.storage import StorageRow
from dbbench_runner.workers import EXIT_BAD_SOURCE, worker_context, worker_processes

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_CONFIG = 2
EXIT_ERROR_RATE = 3
EXIT_UNREACHABLE = 4
EXIT_WORKER_FAILED = 5
# 6: the results upload failed (job.py); 7: bad input in the data source (EXIT_BAD_SOURCE).
# Workers wait this long after "go" so that all start together.
START_DELAY_S = 0.2
POLL_S = 0.25


class RunFailedError(Exception):
    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class Watch:
    """The parent's view of its workers while they run."""

    processes: int
    ready: set[int] = field(default_factory=set)
    done: dict[int, Measurements] = field(default_factory=dict)
    usage: dict[int, ProcessUsage] = field(default_factory=dict)
    # process -> (operations, errors, p99 ms, records measured, records written)
    progress: dict[int, tuple[int, int, float, int, int]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    failed: set[int] = field(default_factory=set)
    # A worker's own exit code for the step (bad input: EXIT_BAD_SOURCE).
    exit_code: int | None = None
    # The server's disk-read counter at the measured part's start (taken once).
    disk_reads_before: CounterSample | None = None
    disk_reads_sampled: bool = False
    live: LiveTotals | None = None  # the pod's /metrics (exporting.py), when served

    def handle(self, message: tuple[Any, ...]) -> None:
        kind, process = message[0], message[1]
        if kind == "ready":
            self.ready.add(process)
        elif kind == "failed":
            if len(message) > 3:
                # Bad input: its message alone, first, once (every connection may
                # find it: a row count differing from dataset.records).
                self.exit_code = message[3]
                if message[2] not in self.failures:
                    self.failures.insert(0, message[2])
            else:
                self.failures.append(f"worker process {process}: {message[2]}")
            self.failed.add(process)
        elif kind == "progress":
            self.progress[process] = (message[2], message[3], message[4], message[5], message[6])
            if self.live is not None:
                self.live.add(process, message[7], message[5])
        elif kind == "done":
            self.done[process] = Measurements.from_wire(message[2])
            self.usage[process] = ProcessUsage(*message[3])
            if self.live is not None:
                self.live.finish(process, self.done[process])

    def totals(self) -> list[tuple[int, int, float, int, int]]:
        """Each process's latest figures (final ones for finished processes)."""
        done = {
            p: (m.operations, m.error_count, m.p99_ms(), m.records["insert"], m.written_records)
            for p, m in self.done.items()
        }
        return list({**self.progress, **done}.values())

    def written(self) -> int:
        return sum(t[4] for t in self.totals())


def expected_pod_operations(config: StepConfig) -> int | None:
    phase = config.phase
    workers = [worker_index(config.pod.index, config.threads, t) for t in range(config.threads)]
    if phase.type == "insert":
        records, total = config.dataset.records, config.workers_total
        sizes = [
            len(range(w, records, total) if config.loads_source else split(records, total, w))
            for w in workers
        ]
        return sum(-(-s // phase.batch_size) for s in sizes)
    if config.keys is not None and config.duration is None:
        return sum(len(split(config.keys, config.workers_total, w)) for w in workers)
    if config.operations is not None:
        return sum(len(split(config.operations, config.workers_total, w)) for w in workers)
    return None


def run_step(config: StepConfig, out: Path, live: LiveTotals | None = None) -> int:
    """Run the step; returns the process exit code (results are written in all cases but
    unreachable databases and crashed workers). `live`: what the pod's /metrics shows."""
    out.mkdir(parents=True, exist_ok=True)
    try:
        return _run_step(config, out, live)
    finally:
        remove_spools(out)  # written into the step's files, or of a failed attempt


def _run_step(config: StepConfig, out: Path, live: LiveTotals | None) -> int:
    dataset = generator_for(config.dataset, config.phase.id_mode)
    try:
        if config.loads_source:
            check_source(config, dataset)  # before the database is touched
        return _load_or_measure(config, dataset, out, live)
    except SourceError as exc:
        raise RunFailedError(str(exc), EXIT_BAD_SOURCE) from None


def _load_or_measure(
    config: StepConfig, dataset: DatasetGenerator, out: Path, live: LiveTotals | None
) -> int:
    control = open_driver(config, dataset, control=True)
    try:
        control.prepare()
        info = control.server_info()
        before = config.records_before
        storage = [StorageRow(time.time(), control.storage(), before, written=0)]
        cpus = cpu_budget()
        processes = config.worker_processes(cpus)
        noop = noop_loop(config, dataset)
        environment = env.environment(
            config, info, storage[-1].sample, processes, cpu_budget=cpus, noop_loop=noop
        )
        atomic_write(out / ENVIRONMENT, json.dumps(environment.to_wire(), indent=2))
        log.info("%s %s; client %s", info.engine, info.version, info.client)
        parent_cpu = process_cpu_seconds()
        measurements, started, ended, stopped, usage, disk_reads = _run_workers(
            config, control, storage, out, processes, live=live
        )
        parent_cpu = process_cpu_seconds() - parent_cpu
        # After the last write: this sample's count is exact.
        _final_sample(
            config, dataset, control, storage, before=before, written=measurements.written_records
        )
        environment = env.with_storage(environment, storage[-1].sample)
    finally:
        control.close()
    meta = RunMeta(
        target=config.target.name,
        engine=config.target.engine,
        phase=config.phase.name,
        type=config.phase.type,
        pods=(config.pod.index,),
        pod_count=config.pod.count,
        threads=config.threads,
        started=started,
        ended=ended,
        report_every=config.phase.report_every,
        max_error_rate=config.phase.max_error_rate,
        server_version=info.version,
        series_unit=series_unit(config.phase.type),
        stopped=stopped,
        expects_operations=expected_pod_operations(config) != 0,
        verify_applied=config.write_concern == "unacknowledged",
        writes_records=config.phase.writes_records,
        connection_groups=tuple(config.connection_groups.items()),
        records_before=config.records_before,
    )
    client = pod_usage(
        config.pod.index,
        cpus,
        usage,
        parent_cpu,
        measurements.operations + measurements.warmup_operations,
    )
    summary = write_results(
        out, meta, measurements, storage, environment, client=[client], counters=[disk_reads]
    )
    records = f"{summary.records} records, " if summary.records else ""
    records_rate = f", {summary.records_per_second:.0f} records/s" if summary.records else ""
    print(
        f"[{config.phase.name}] {summary.status}: {summary.operations} ops, "
        f"{records}{summary.errors} errors, {summary.throughput:.0f} ops/s{records_rate}, "
        f"client CPU {client.utilization:.0%} of {cpus:g}",
        flush=True,
    )
    if client.bound:
        log.warning(
            "runner saturated (client CPU + run-queue wait %.0f%% of %g CPUs): "
            "add runner pods or threads",
            client.demand * 100,
            cpus,
        )
    if summary.status == "failed":
        log.error("%s", summary.reason)
        return EXIT_ERROR_RATE
    return EXIT_OK


def _run_workers(
    config: StepConfig,
    control: Driver,
    storage: list[StorageRow],
    out: Path,
    processes: int,
    *,
    live: LiveTotals | None,
) -> tuple[Measurements, float, float, bool, list[ProcessUsage], CounterWindow | None]:
    ctx = worker_context(config.target.engine)
    messages: Any = ctx.Queue()
    go, stop = ctx.Event(), ctx.Event()
    clock_box: Any = ctx.Array("d", 4)
    alive, alive_end = ctx.Pipe(duplex=False)  # the parent alone holds alive_end
    watch = Watch(processes, live=live)
    previous = signal.signal(signal.SIGTERM, _stop_handler(stop))
    children = worker_processes(ctx, config, out, processes, (messages, go, stop, clock_box, alive))
    try:
        for child in children:
            child.start()
        _wait_ready(config, watch, messages, children)
        if watch.failures:
            stop.set()
            go.set()
            raise RunFailedError("; ".join(watch.failures), EXIT_UNREACHABLE)
        now = time.monotonic()
        start = now + START_DELAY_S
        measure_from = start + config.warmup
        deadline = measure_from + config.duration if config.duration else 0.0
        epoch_offset = time.time() - time.monotonic()
        clock_box[:] = [start, measure_from, deadline, epoch_offset]
        if not config.warmup:
            # Measured from the first operation: sample before any is sent.
            _sample_disk_reads(control, watch)
        go.set()
        _watch(
            config,
            watch=watch,
            messages=messages,
            control=control,
            storage=storage,
            out=out,
            measure_from=measure_from,
            children=children,
            stop=stop,
        )
        if live is not None:
            live.end()
        disk_reads = window(watch.disk_reads_before, _disk_reads(control))
    finally:
        signal.signal(signal.SIGTERM, previous)
        for child in (c for c in children if c.pid is not None):  # those started
            child.join(timeout=10)
            if child.is_alive():
                child.kill()
                child.join(timeout=5)
        alive_end.close()
        alive.close()
    if watch.failures:
        raise RunFailedError("; ".join(watch.failures), watch.exit_code or EXIT_WORKER_FAILED)
    total = Measurements(checkpoint_every=1)
    for measurements in watch.done.values():
        total.add(measurements)
    usage = list(watch.usage.values())
    # The window ends where the work did (the deadline, or the last operation),
    # not once the workers have shut down: that time did no work.
    started = measure_from + epoch_offset
    ended = time.time() if total.ended is None else max(total.ended, started)
    return total, started, ended, stop.is_set(), usage, disk_reads


def _disk_reads(control: Driver) -> CounterSample | None:
    """The server's disk-read counter; a failed sample is logged, never fatal."""
    try:
        return control.disk_reads()
    except Exception as exc:  # noqa: BLE001 - any driver error; the load goes on
        log.warning("disk-read counter sample failed: %s", exc)
        return None


def _sample_disk_reads(control: Driver, watch: Watch) -> None:
    watch.disk_reads_before = _disk_reads(control)
    watch.disk_reads_sampled = True


def _stop_handler(stop: Any) -> Any:
    def handler(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        stop.set()

    return handler


def _wait_ready(config: StepConfig, watch: Watch, messages: Any, children: list[Any]) -> None:
    target = config.target
    # Every connection may use all its retries (with backoff capped at 10 s).
    limit = time.monotonic() + target.connect_retries * (target.connect_timeout + 10) + 30
    while len(watch.ready) + len(watch.failures) < len(children):
        if time.monotonic() > limit:
            raise RunFailedError("worker processes did not connect in time", EXIT_UNREACHABLE)
        try:
            watch.handle(messages.get(timeout=POLL_S))
        except queue_module.Empty:
            if not any(c.is_alive() for c in children):
                raise RunFailedError(
                    "worker processes exited before connecting", EXIT_WORKER_FAILED
                ) from None


def _watch(
    config: StepConfig,
    *,
    watch: Watch,
    messages: Any,
    control: Driver,
    storage: list[StorageRow],
    out: Path,
    measure_from: float,
    children: list[Any],
    stop: Any,
) -> None:
    expected = expected_pod_operations(config)
    next_progress = time.monotonic() + config.progress_every
    next_storage = time.monotonic() + config.storage_every
    while len(watch.done) + len(watch.failures) < watch.processes:
        now = time.monotonic()
        if not watch.disk_reads_sampled and now >= measure_from:
            _sample_disk_reads(control, watch)  # warm-up over: the measured part starts
        # Wake at the end of the warm-up to sample the counter on time.
        wait = POLL_S if watch.disk_reads_sampled else min(POLL_S, measure_from - now)
        try:
            watch.handle(messages.get(timeout=max(wait, 0.001)))
        except queue_module.Empty:
            _check_children(watch, children, stop)
        now = time.monotonic()
        if now >= next_progress:
            _progress(config, watch, out, now - measure_from, expected)
            next_progress = now + config.progress_every
        if now >= next_storage:
            _sample(control, storage, config.records_before, watch.written())
            next_storage = now + config.storage_every
    _progress(config, watch, out, time.monotonic() - measure_from, expected)


def _check_children(watch: Watch, children: list[Any], stop: Any) -> None:
    """A worker killed from outside (the OOM killer) sends nothing: fail, don't wait forever.

    A worker that exited normally has sent its result before exiting (exit code 0),
    so only a non-zero exit code without a message counts.
    """
    for index, child in enumerate(children):
        reported = index in watch.done or index in watch.failed
        if not reported and child.exitcode not in (None, 0):
            watch.failures.append(f"worker process {index} died (exit code {child.exitcode})")
            watch.failed.add(index)
            stop.set()


def _final_sample(
    config: StepConfig,
    dataset: DatasetGenerator,
    control: Driver,
    storage: list[StorageRow],
    *,
    before: int,
    written: int,
) -> None:
    """The closing storage sample, on a new connection if the database restarted.

    A database pod lost mid-phase breaks the control connection; the phase's
    errors are results, so the runner must still finish and report them
    instead of failing (the Job would retry and replace them with a clean run).
    """
    try:
        storage.append(StorageRow(time.time(), control.storage(), before, written))
    except Exception as exc:  # noqa: BLE001 - any driver error: try a fresh connection
        log.warning("closing storage sample failed (%s); reconnecting once", exc)
    else:
        return
    try:
        fresh = open_driver(config, dataset, control=True)
    except DatabaseUnreachableError as exc:
        log.warning("no closing storage sample: %s", exc)
        return
    try:
        _sample(fresh, storage, before, written)
    finally:
        fresh.close()


def _sample(control: Driver, storage: list[StorageRow], before: int, written: int) -> None:
    """A storage sample; a failed sample is logged, never fatal to the run."""
    try:
        storage.append(StorageRow(time.time(), control.storage(), before, written))
    except Exception as exc:  # noqa: BLE001 - any driver error; the load goes on
        log.warning("storage sample failed: %s", exc)


def _progress(
    config: StepConfig, watch: Watch, out: Path, elapsed: float, expected: int | None
) -> None:
    values = watch.totals()
    current = report(
        config.phase.name,
        operations=sum(v[0] for v in values),
        records=sum(v[3] for v in values),
        errors=sum(v[1] for v in values),
        p99_ms=max((v[2] for v in values), default=0.0),
        elapsed=max(elapsed, 0.0),
        expected=expected,
        duration=config.duration,
    )
    print(progress_line(current), flush=True)
    atomic_write(out / PROGRESS, json.dumps(current.to_wire()))


__all__ = ["EXIT_CONFIG", "DatabaseUnreachableError", "RunFailedError", "run_step"]
