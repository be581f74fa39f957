"""make bench: is the runner fast and lean enough not to be the bottleneck?

Starts its own MariaDB (the test fixture's code), prepares a sysbench table and
the runner's own table, then prints, side by side in one run:

- point reads by primary key for the same duration at 1 and 4 connections:
  sysbench oltp_point_select queries/s vs the runner's reads/s, and their ratio;
- client CPU seconds per 1,000 operations for both (getrusage of the child
  process tree: the runner's figure includes interpreter start-up);
- data generator throughput (flat45, 1 KB records/s);
- a bare loop with the same connector and statement (no runner around it),
  which shows how much of the gap is the connector rather than the runner;
- the same runner point reads inside a cached Debian trixie chroot, where
  mysql-connector's C extension loads (bookworm's OpenSSL 3.0 is too old for
  it), measured in the same rows as sysbench and the host runner; each
  runner's connector implementation is read from its environment.json;
- the runner with `runner.statements: prepared` (mysql-connector-python, the
  one library that prepares; on the host and in the chroot) beside sysbench's
  default, which prepares too: the like-for-like row; the other runner rows
  send text, like sysbench's `--db-ps-mode=disable` row;
- the runner's peak RSS on the generation + measurement path at 100k and 2M
  records (it must stay flat: constant memory in the data-set size);
- PostgreSQL (bench_postgres.py): the runner on psycopg's C and binary builds
  against pgbench with the same point select, on a server of its own.

A script printing figures, not a test: absolute numbers drift between runs and
machines, only the side-by-side ratios mean something.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import Any

import mysql.connector

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "runner-image"))
sys.path.insert(0, str(ROOT / "hack"))  # this folder, imported as `bench`

from bench import bench_postgres, trixie_chroot  # noqa: E402
from bench.rows import (  # noqa: E402
    Launcher,
    Row,
    RunnerResult,
    children_cpu,
    failure,
    median_rows,
    print_rows,
    run_runner,
    runner_row,
)
from dbbench_local.mariadb import MariaDBServer, start_mariadb  # noqa: E402

DURATION_S = int(os.environ.get("BENCH_DURATION", "10"))
# Interleaved rounds; medians are printed (one noisy minute must not decide a ratio).
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
TABLE_SIZE = 100_000
CONNECTIONS = (1, 4)
DRIVERS = ("mysqlclient", "mysql-connector-python")
RSS_SIZES = (100_000, 2_000_000)
RUNNER_IMAGE = ROOT / "runner-image"
WHEELS_SCRIPT = ROOT / "runner-image/download-wheels.sh"
MIRROR_SCRIPT = ROOT / "hack/debian-mirror.sh"
# Git-ignored: a second `make bench` reuses the root filesystem and wheels.
CHROOT_CACHE = ROOT / ".tools/bench-trixie"
CHROOT_WORK = PurePosixPath("/bench")


def sysbench(
    server: MariaDBServer, command: str, threads: int = 1, *, text_protocol: bool = False
) -> tuple[str, float]:
    """sysbench's default uses server-side prepared statements (binary protocol);
    `text_protocol` (--db-ps-mode=disable) sends COM_QUERY like the runner."""
    argv = [
        "sysbench",
        "oltp_point_select",
        "--db-driver=mysql",
        "--mysql-host=127.0.0.1",
        f"--mysql-port={server.port}",
        "--mysql-user=root",
        f"--mysql-password={server.root_password}",
        "--mysql-db=sbtest",
        "--tables=1",
        f"--table-size={TABLE_SIZE}",
        f"--threads={threads}",
        f"--time={DURATION_S}",
        "--report-interval=0",
        *(["--db-ps-mode=disable"] if text_protocol else []),
        command,
    ]
    before = children_cpu()
    result = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=600)
    return result.stdout, children_cpu() - before


def sysbench_qps(output: str) -> tuple[float, int]:
    match = re.search(r"queries:\s+(\d+)\s+\(([\d.]+) per sec", output)
    if match is None:
        raise RuntimeError(f"cannot parse sysbench output:\n{output}")
    return float(match.group(2)), int(match.group(1))


def runner(
    server: MariaDBServer,
    launcher: Launcher,
    name: str,
    phase: dict[str, object],
    threads: int,
    *,
    driver: str = "mysqlclient",
    statements: str | None = None,
) -> RunnerResult:
    config = {
        "target": {
            "name": "mariadb",
            "engine": "mariadb",
            "host": "127.0.0.1",
            "port": server.port,
            "user": "root",
            "password": server.root_password,
            "database": "bench",
        },
        # indexed4 at 200 bytes: an int primary key and a row close to sbtest's.
        "dataset": {"shape": "indexed4", "records": TABLE_SIZE, "recordSize": 200, "seed": 2},
        # An API name (at most 30 characters); `name` names the files.
        "phase": {"name": name.split("-", 1)[0], **phase},
        "threads": threads,
        "mysqlDriver": driver,
        "progressEvery": 60,
        # runner.statements; unset on MariaDB = simple (the text protocol).
        **({"statements": statements} if statements else {}),
    }
    return run_runner(launcher, name, config)


def _bare_worker(args: tuple[str, dict[str, object], int, float]) -> tuple[int, float]:
    """A minimal loop: the same statement, no runner around it; (operations, CPU s)."""
    import threading  # noqa: PLC0415

    library, connect_args, threads, seconds = args
    counts = [0] * threads
    statement = "SELECT * FROM `indexed4` WHERE `id` = %s"

    def connect() -> Any:
        if library == "mysqlclient":
            import MySQLdb  # noqa: PLC0415

            return MySQLdb.connect(**connect_args, database="bench", autocommit=True)
        return mysql.connector.connect(**connect_args, database="bench", autocommit=True)

    def loop(index: int) -> None:
        conn = connect()
        cursor = conn.cursor()
        key = index * 7919
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            # Masked: an unbounded LCG grows a big int that costs more each call.
            key = (key * 1103515245 + 12345) & 0x7FFFFFFF
            cursor.execute(statement, (key % TABLE_SIZE + 1,))
            cursor.fetchall()
            counts[index] += 1
        conn.close()

    cpu = time.process_time()
    workers = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(counts), time.process_time() - cpu


def bare_loop(server: MariaDBServer, library: str, threads: int) -> tuple[float, float]:
    """(ops/s, client CPU µs per op) of the bare loop, spread over processes like the runner's."""
    import multiprocessing  # noqa: PLC0415

    processes = min(threads, os.cpu_count() or 1)
    shares = [len(range(p, threads, processes)) for p in range(processes)]
    args = server.connect_args()
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        results = pool.map(
            _bare_worker, [(library, args, share, float(DURATION_S)) for share in shares]
        )
    operations = sum(r[0] for r in results)
    return operations / DURATION_S, sum(r[1] for r in results) / max(operations, 1) * 1e6


RSS_PROBE = """
import resource, sys, tempfile, time
from functools import partial
from pathlib import Path
from dbbench_runner.config import parse_config
from dbbench_runner.datasets import generator_for
from dbbench_runner.loop import checkpoint_granularity
from dbbench_runner.measurement import Measurements
from dbbench_runner.operations import Status
from dbbench_runner.seconds_spool import spool_path, write_seconds
from dbbench_runner.workloads import operations_for
records = int(sys.argv[1])
config = parse_config({
    "target": {"name": "x", "engine": "mariadb", "host": "127.0.0.1", "port": 1},
    "dataset": {"shape": "flat45", "records": records, "recordSize": 1024, "seed": 1},
    "phase": {"name": "load", "type": "insert", "reportEvery": 100000},
})
generator = generator_for(config.dataset)
measurements = Measurements(checkpoint_every=checkpoint_granularity(config))
spool = spool_path(Path(tempfile.mkdtemp(prefix="dbbench-rss-")), 0)
measurements.spool_to(str(spool), partial(write_seconds, spool))
ok = Status(ok=True, rows=1)
started = time.perf_counter()
# 10,000 operations a second, 5,000 latencies spread over each: a worst case of
# the per-second histograms. The connection loop seals ended seconds once a
# second (loop._publish); so does this probe, once a second of its timestamps.
for index, operation in enumerate(operations_for(config, generator, 0)):
    epoch = 1.7e9 + index / 1e4
    measurements.record(operation.kind, 150 + index % 5000, ok, epoch)
    if index % 10_000 == 0:
        measurements.seal(int(epoch))
measurements.seal(None)
elapsed = time.perf_counter() - started
spool.unlink()
spool.parent.rmdir()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, elapsed)
"""


def generator_throughput() -> float:
    from dbbench_runner.config import Dataset  # noqa: PLC0415
    from dbbench_runner.datasets import generator_for  # noqa: PLC0415

    generator = generator_for(Dataset(shape="flat45", records=10**8, record_size=1024, seed=1))
    count = 300_000
    started = time.perf_counter()
    for number in range(1, count + 1):
        generator.record(number)
    return count / (time.perf_counter() - started)


def peak_rss(records: int) -> tuple[int, float]:
    result = subprocess.run(
        [sys.executable, "-c", RSS_PROBE, str(records)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    kib, seconds = result.stdout.split()
    return int(kib), float(seconds)


def one_round(
    server: MariaDBServer,
    host: Launcher,
    chroot: Launcher | None,
    threads: int,
    name: str,
) -> tuple[list[Row], str]:
    """Every row once, back to back; the chroot's failure (if any) as the second value."""
    phase = {"type": "mix", "mix": {"read": 100}, "duration": f"{DURATION_S}s"}
    output, sb_cpu = sysbench(server, "run", threads)
    sb_rate, sb_ops = sysbench_qps(output)
    rows = [Row("sysbench oltp_point_select", sb_rate, sb_cpu / sb_ops * 1e6)]
    output, text_cpu = sysbench(server, "run", threads, text_protocol=True)
    text_rate, text_ops = sysbench_qps(output)
    rows.append(
        Row("sysbench, text protocol", text_rate, text_cpu / text_ops * 1e6, "--db-ps-mode=disable")
    )
    for driver in DRIVERS:
        label = f"runner, {driver}" + (" (default)" if driver == "mysqlclient" else "")
        result = runner(server, host, f"{name}-{driver}", phase, threads, driver=driver)
        rows.append(runner_row(label, result))
    prepared = runner(
        server, host, f"{name}-prepared", phase, threads, driver=DRIVERS[1], statements="prepared"
    )
    rows.append(runner_row("runner, prepared (connector)", prepared))
    for library in DRIVERS:
        rate, cpu = bare_loop(server, library, threads)
        rows.append(Row(f"bare loop, {library}", rate, cpu, "no runner around it"))
    if chroot is not None:
        try:
            cext = runner(server, chroot, name, phase, threads, driver=DRIVERS[1])
        except (subprocess.SubprocessError, OSError, KeyError, ValueError) as exc:
            return rows, f"runner in the chroot failed: {failure(exc)}"
        rows.append(runner_row(f"runner, connector ({trixie_chroot.SUITE})", cext))
        try:
            cext = runner(
                server, chroot, f"{name}-prepared", phase, threads, driver=DRIVERS[1],
                statements="prepared",
            )  # fmt: skip
        except (subprocess.SubprocessError, OSError, KeyError, ValueError) as exc:
            return rows, f"runner in the chroot failed: {failure(exc)}"
        rows.append(runner_row(f"runner, prepared ({trixie_chroot.SUITE} C ext)", cext))
    return rows, ""


def compare_point_reads(
    server: MariaDBServer, host: Launcher, chroot: Launcher | None, chroot_status: str
) -> None:
    """sysbench, the runner with each driver, the bare loops and the chroot runner,
    one after the other for each connection count and round: the same minutes for
    every row. Rounds interleave the rows, so a noisy minute touches all of them."""
    conn = mysql.connector.connect(**server.connect_args())
    conn.cursor().execute("CREATE DATABASE sbtest")
    conn.close()
    sysbench(server, "prepare")
    runner(server, host, "load", {"type": "insert", "batchSize": 500}, 2)
    print(
        f"\n{'point reads by key':<34}{'conns':>6}{'ops/s':>12}{'x sysbench':>11}"
        f"{'CPU µs/op':>14}{'x sysbench':>12}  (client CPU per operation; medians of "
        f"{ROUNDS} round{'s' if ROUNDS > 1 else ''})"
    )
    for threads in CONNECTIONS:
        rounds = []
        for round_number in range(ROUNDS):
            name = f"reads{threads}-{round_number}"
            rows, failed = one_round(server, host, chroot, threads, name)
            rounds.append(rows)
            if failed:
                chroot, chroot_status = None, failed
        print_rows(threads, median_rows(rounds))
    if chroot is None:
        print(f"NO {trixie_chroot.SUITE} chroot rows (connector C extension): {chroot_status}")


def chroot_launcher(rootfs: Path, work: Path) -> Launcher:
    return Launcher(
        python=tuple(trixie_chroot.chroot_argv(rootfs, [f"{trixie_chroot.VENV}/bin/python"])),
        host_dir=work,
        guest_dir=CHROOT_WORK,
        env=trixie_chroot.GUEST_ENV,
    )


def measure(server: MariaDBServer, work: Path, prepared: Path | str) -> None:
    """Mounts the chroot (when prepared) around the measurements; always unmounts."""
    host = Launcher(python=(sys.executable,), host_dir=work / "host", guest_dir=work / "host")
    with contextlib.ExitStack() as stack:
        chroot: Launcher | None = None
        status = prepared if isinstance(prepared, str) else ""
        if isinstance(prepared, Path):
            chroot_work = work / "chroot"
            chroot_work.mkdir()
            binds = [
                *trixie_chroot.runner_binds(RUNNER_IMAGE),
                trixie_chroot.Bind(chroot_work, CHROOT_WORK),
            ]
            try:
                stack.enter_context(trixie_chroot.mounted(prepared, binds))
            except trixie_chroot.ChrootUnavailableError as exc:
                status = f"cannot mount the chroot: {exc}"
            else:
                chroot = chroot_launcher(prepared, chroot_work)
        compare_point_reads(server, host, chroot, status)


def prepare_chroot() -> Path | str:
    """The cached trixie root filesystem, or why there is none."""
    try:
        rootfs: Path = trixie_chroot.prepare(CHROOT_CACHE, WHEELS_SCRIPT, MIRROR_SCRIPT)
    except (trixie_chroot.ChrootUnavailableError, OSError) as exc:
        return f"cannot prepare the Debian {trixie_chroot.SUITE} chroot: {exc}"
    return rootfs


def main() -> int:
    cpus = os.cpu_count()
    print(f"dbbench runner bench: {DURATION_S}s per measurement, {TABLE_SIZE:,} rows, {cpus} CPUs")
    implementation = (
        "C extension"
        if mysql.connector.HAVE_CEXT
        else "pure Python (the C extension needs OpenSSL >= 3.2)"
    )
    print(f"mysql-connector-python {mysql.connector.__version__}: {implementation}")
    # Prepared before the server starts: debootstrap must not eat into the
    # minutes that the side-by-side figures share.
    prepared: Path | str = "BENCH_CHROOT=0"
    if os.environ.get("BENCH_CHROOT", "1") != "0":
        prepared = prepare_chroot()
    with tempfile.TemporaryDirectory(prefix="dbbench-bench-") as temp:
        server = start_mariadb(Path(temp) / "mariadb")
        try:
            measure(server, Path(temp), prepared)
        finally:
            server.stop()
    bench_postgres.main(CONNECTIONS, ROUNDS, DURATION_S)
    print(f"\ngenerator: flat45 1 KB records/s: {generator_throughput():,.0f}")
    for records in RSS_SIZES:
        kib, seconds = peak_rss(records)
        print(
            f"runner peak RSS, generate + measure {records:>9,} records: "
            f"{kib / 1024:7.1f} MiB ({seconds:.1f} s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
