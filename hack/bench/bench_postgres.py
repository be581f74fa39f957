"""make bench, PostgreSQL: the runner's point reads against pgbench on the same server.

Starts its own PostgreSQL (dbbench_local.postgres: Debian's postgresql-15),
loads the runner's indexed4 table (100,000 rows of 200 bytes, as the MySQL
rows) and prints, for 1 and 4 connections, in interleaved rounds (medians):

- pgbench running the runner's own statement (SELECT * FROM indexed4 WHERE
  id = :id, a random id) with `-M prepared`: the reference;
- the same script with `-M simple` (every query parsed and planned);
- `pgbench -S`, its built-in select-only transaction on pgbench_accounts
  (scale 1: 100,000 rows), for the figure people quote;
- the runner on psycopg's C build (psycopg-c, compiled here against the
  system libpq, cached in .tools/bench-psycopg-c) and on psycopg-binary (the
  wheel with its own libpq): which build the runner image should carry; both
  with prepared statements (`runner.statements` unset: PostgreSQL's default),
  beside `-M prepared`;
- the runner with `runner.statements: simple` (binary build), beside `-M simple`;
- a bare loop of each build (the same statement, no runner around it).

The runner prepares each statement once per connection (drivers/postgresql_pq.py);
the bare loops' psycopg prepares a statement after its fifth execution (psycopg's
default): both steady states compare with -M prepared.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from bench.rows import (
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
from dbbench_local.postgres import PostgresServer, start_postgres

ROOT = Path(__file__).resolve().parents[2]
C_BUILD_DIR = ROOT / ".tools/bench-psycopg-c"
TABLE_SIZE = 100_000
STATEMENT = "SELECT * FROM indexed4 WHERE id = {}"
BARE_LOOP = """
import sys, threading, time
import psycopg
conninfo, threads, seconds, size = sys.argv[1], *map(int, sys.argv[2:5])
counts = [0] * threads
def loop(index):
    conn = psycopg.connect(conninfo, autocommit=True)
    cursor = conn.cursor()
    key = index * 7919
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        key = (key * 1103515245 + 12345) & 0x7FFFFFFF
        cursor.execute("SELECT * FROM indexed4 WHERE id = %s", (key % size + 1,))
        cursor.fetchall()
        counts[index] += 1
    conn.close()
cpu = time.process_time()
workers = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
for worker in workers: worker.start()
for worker in workers: worker.join()
print(sum(counts), time.process_time() - cpu, psycopg.pq.__impl__)
"""


def c_build() -> Path | str:
    """psycopg-c of the installed psycopg's version, built once; or why there is none."""
    version = metadata.version("psycopg")
    stamp = C_BUILD_DIR / ".stamp"
    if stamp.exists() and stamp.read_text().strip() == version:
        return C_BUILD_DIR
    shutil.rmtree(C_BUILD_DIR, ignore_errors=True)
    print(f"building psycopg-c {version} against libpq (once, about 2-3 min)", flush=True)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
         str(C_BUILD_DIR), f"psycopg-c=={version}"],
        capture_output=True, text=True, check=False, timeout=1800,
    )  # fmt: skip
    if built.returncode != 0:
        return f"pip could not build psycopg-c {version}: {built.stderr.strip()[-300:]}"
    stamp.write_text(version + "\n")
    return C_BUILD_DIR


def implementations(c_dir: Path | str) -> dict[str, dict[str, str]]:
    """Environment of each psycopg build the rows use (PSYCOPG_IMPL makes psycopg
    load exactly that build or fail)."""
    builds = {"binary": {**os.environ, "PSYCOPG_IMPL": "binary"}}
    if isinstance(c_dir, Path):
        path = os.pathsep.join(p for p in (str(c_dir), os.environ.get("PYTHONPATH", "")) if p)
        builds = {"c": {**os.environ, "PSYCOPG_IMPL": "c", "PYTHONPATH": path}, **builds}
    return builds


def pgbench(
    server: PostgresServer, clients: int, seconds: int, args: list[str]
) -> tuple[float, float]:
    """(transactions/s, client CPU µs per transaction) of one pgbench run."""
    argv = [
        server.binary("pgbench"), "-h", "127.0.0.1", "-p", str(server.port), "-U", server.user,
        "-n", "-c", str(clients), "-j", str(clients), "-T", str(seconds), *args, "bench",
    ]  # fmt: skip
    before = children_cpu()
    result = subprocess.run(
        argv, capture_output=True, text=True, check=True, timeout=600,
        env={**os.environ, "PGPASSWORD": server.password},
    )  # fmt: skip
    cpu = children_cpu() - before
    done = re.search(r"number of transactions actually processed: (\d+)", result.stdout)
    rate = re.search(r"tps = ([\d.]+) \(without initial connection time\)", result.stdout)
    if done is None or rate is None:
        raise RuntimeError(f"cannot parse pgbench output:\n{result.stdout}")
    return float(rate.group(1)), cpu / max(int(done.group(1)), 1) * 1e6


def runner(
    server: PostgresServer, launcher: Launcher, name: str, phase: dict[str, object], threads: int,
    *, statements: str | None = None,
) -> RunnerResult:  # fmt: skip
    config = {
        "target": {
            "name": "postgresql", "engine": "postgresql", "host": "127.0.0.1",
            "port": server.port, "user": server.user, "password": server.password,
            "database": "bench",
        },
        "dataset": {"shape": "indexed4", "records": TABLE_SIZE, "recordSize": 200, "seed": 2},
        # An API name (at most 30 characters); `name` names the files.
        "phase": {"name": name.split("-", 1)[0], **phase},
        "threads": threads,
        "progressEvery": 60,
        # runner.statements; unset on PostgreSQL = prepared.
        **({"statements": statements} if statements else {}),
    }  # fmt: skip
    return run_runner(launcher, name, config)


def bare_loop(
    server: PostgresServer, env: dict[str, str], threads: int, seconds: int
) -> tuple[float, float, str]:
    """(ops/s, client CPU µs per op, implementation), spread over processes like the runner."""
    conninfo = (
        f"host=127.0.0.1 port={server.port} user={server.user} password={server.password} "
        "dbname=bench"
    )
    processes = min(threads, os.cpu_count() or 1)
    shares = [len(range(p, threads, processes)) for p in range(processes)]
    children = [
        subprocess.Popen(
            [sys.executable, "-c", BARE_LOOP, conninfo, str(share), str(seconds), str(TABLE_SIZE)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for share in shares
    ]
    outputs = [child.communicate(timeout=seconds + 120)[0].split() for child in children]
    operations = sum(int(out[0]) for out in outputs)
    cpu = sum(float(out[1]) for out in outputs)
    return operations / seconds, cpu / max(operations, 1) * 1e6, outputs[0][2]


def one_round(
    server: PostgresServer, work: Path, builds: dict[str, dict[str, str]], *, threads: int,
    seconds: int, name: str,
) -> list[Row]:  # fmt: skip
    script = str(work / "point-select.sql")
    rows = []
    for mode in ("prepared", "simple"):
        rate, cpu = pgbench(server, threads, seconds, ["-M", mode, "-f", script])
        label = "pgbench, the same SELECT" + (", simple" if mode == "simple" else "")
        rows.append(Row(label, rate, cpu, f"-M {mode}"))
    rate, cpu = pgbench(server, threads, seconds, ["-S", "-M", "prepared"])
    rows.append(Row("pgbench -S (pgbench_accounts)", rate, cpu, "built-in select-only, prepared"))
    phase = {"type": "mix", "mix": {"read": 100}, "duration": f"{seconds}s"}
    for build, env in builds.items():
        launcher = Launcher((sys.executable,), work / build, work / build, env)
        result = runner(server, launcher, f"{name}-{build}", phase, threads)
        rows.append(runner_row(f"runner, psycopg {build} build", result))
    # The image's build (binary) with the simple query protocol, beside -M simple.
    simple = Launcher((sys.executable,), work / "simple", work / "simple", builds["binary"])
    result = runner(server, simple, f"{name}-simple", phase, threads, statements="simple")
    rows.append(runner_row("runner, binary build, simple", result))
    for build, env in builds.items():
        rate, cpu, loaded = bare_loop(server, env, threads, seconds)
        rows.append(Row(f"bare loop, psycopg {build}", rate, cpu, f"no runner; loaded {loaded}"))
    return rows


def prepare(server: PostgresServer, work: Path, builds: dict[str, dict[str, str]]) -> None:
    """The bench database: the runner's indexed4 table and pgbench's tables."""
    with server.connect() as conn:
        conn.execute("CREATE DATABASE bench")
    (work / "point-select.sql").write_text(
        f"\\set id random(1, {TABLE_SIZE})\n{STATEMENT.format(':id')};\n"
    )
    load = Launcher((sys.executable,), work / "load", work / "load", next(iter(builds.values())))
    runner(server, load, "load", {"type": "insert", "batchSize": 500}, 2)
    subprocess.run(
        [server.binary("pgbench"), "-i", "-s", "1", "-q", "-h", "127.0.0.1", "-p",
         str(server.port), "-U", server.user, "bench"],
        capture_output=True, check=True, timeout=600,
        env={**os.environ, "PGPASSWORD": server.password},
    )  # fmt: skip


def compare(
    server: PostgresServer, work: Path, c_dir: Path | str, *, connections: tuple[int, ...],
    rounds: int, seconds: int,
) -> None:  # fmt: skip
    builds = implementations(c_dir)
    prepare(server, work, builds)
    with server.connect() as conn:
        version = conn.execute("SHOW server_version").fetchone()
    print(f"\nPostgreSQL {version[0] if version else '?'}, psycopg {metadata.version('psycopg')}")
    print(
        f"{'point reads by key':<34}{'conns':>6}{'ops/s':>12}{'x pgbench':>11}"
        f"{'CPU µs/op':>14}{'x pgbench':>12}  (client CPU per operation; medians of "
        f"{rounds} round{'s' if rounds > 1 else ''})"
    )
    for threads in connections:
        measured = [
            one_round(
                server, work, builds, threads=threads, seconds=seconds, name=f"reads{threads}-{n}"
            )
            for n in range(rounds)
        ]
        print_rows(threads, median_rows(measured, reference="pgbench"))
    if isinstance(c_dir, str):
        print(f"NO psycopg C build rows: {c_dir}")


def main(connections: tuple[int, ...], rounds: int, seconds: int) -> None:
    """The PostgreSQL section of `make bench` (BENCH_POSTGRES=0 skips it)."""
    if os.environ.get("BENCH_POSTGRES", "1") == "0":
        print("\nNO PostgreSQL rows: BENCH_POSTGRES=0")
        return
    c_dir = c_build()  # before the server starts: a compile must not share its minutes
    with tempfile.TemporaryDirectory(prefix="dbbench-bench-pg-") as temp:
        try:
            server = start_postgres()
        except (RuntimeError, OSError) as exc:
            print(f"\nNO PostgreSQL rows: cannot start a server: {exc}")
            return
        try:
            compare(server, Path(temp), c_dir, connections=connections, rounds=rounds,
                    seconds=seconds)  # fmt: skip
        except (subprocess.SubprocessError, OSError, RuntimeError) as exc:
            print(f"\nPostgreSQL rows stopped: {failure(exc)}")
        finally:
            with contextlib.suppress(OSError):
                server.stop()
