"""What the bench's comparisons share: rows, medians over rounds, runner results.

Each comparison prints rows against a reference tool (sysbench for MySQL,
pgbench for PostgreSQL) measured in the same minutes: ops/s and client CPU
per operation, both also as a multiple of the reference's.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

import yaml

from dbbench_contract.environment import Environment
from dbbench_runner.results import read_environment, read_summary


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass(frozen=True)
class Launcher:
    """Where `python -m dbbench_runner` runs: the host venv, or the trixie chroot."""

    python: tuple[str, ...]
    host_dir: Path  # config and results, as the bench sees them
    guest_dir: PurePath  # the same folder, as the runner sees it
    env: dict[str, str] | None = None


@dataclass(frozen=True)
class RunnerResult:
    rate: float
    operations: int
    cpu_s: float  # the runner's whole process tree, start-up included
    phase_cpu_per_op_us: float  # summary.json clientCpuPerOpUs: the phase only
    client_bound: bool
    client: str  # connector and implementation, from the runner's environment.json


def client_description(environment: Environment) -> str:
    client = environment.runner.client
    # runner.statements as the runner ran it (prepared or simple; absent on MongoDB).
    statements = f"{client['statements']} statements, " if "statements" in client else ""
    return (
        f"{client['driver']} {client['version']}, {client['implementation']}, "
        f"{statements}Python {environment.runner.python}"
    )


def run_runner(launcher: Launcher, name: str, config: dict[str, Any]) -> RunnerResult:
    """`python -m dbbench_runner run` on a step file; its figures and client."""
    launcher.host_dir.mkdir(parents=True, exist_ok=True)
    (launcher.host_dir / f"{name}.yaml").write_text(yaml.safe_dump(config))
    argv = [
        *launcher.python,
        "-m",
        "dbbench_runner",
        "run",
        "--config",
        str(launcher.guest_dir / f"{name}.yaml"),
        "--out",
        str(launcher.guest_dir / name),
    ]
    before = children_cpu()
    subprocess.run(argv, check=True, capture_output=True, timeout=600, env=launcher.env)
    cpu = children_cpu() - before
    out = launcher.host_dir / name
    summary = read_summary(out)
    return RunnerResult(
        rate=summary.throughput,
        operations=summary.operations,
        cpu_s=cpu,
        phase_cpu_per_op_us=summary.client_cpu_per_op_us or 0.0,
        client_bound=bool(summary.client_bound),
        client=client_description(read_environment(out)),
    )


def failure(exc: Exception) -> str:
    if isinstance(exc, subprocess.CalledProcessError):
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else ""
        tail = " | ".join(stderr.strip().splitlines()[-3:])
        return f"the runner exited with {exc.returncode}: {tail}"
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class Row:
    name: str
    rate: float
    cpu_per_op_us: float
    note: str = ""


def print_rows(threads: int, rows: list[Row]) -> None:
    reference = rows[0]
    for row in rows:
        print(
            f"{row.name:<34}{threads:>6}{row.rate:>12,.0f}{row.rate / reference.rate:>11.2f}"
            f"{row.cpu_per_op_us:>14.1f}{row.cpu_per_op_us / reference.cpu_per_op_us:>12.1f}"
            f"  {row.note}"
        )


def runner_row(name: str, result: RunnerResult) -> Row:
    bound = "client-bound" if result.client_bound else "not client-bound"
    whole = result.cpu_s / result.operations * 1e6
    return Row(
        name,
        result.rate,
        result.phase_cpu_per_op_us,
        f"{bound}; {whole:.1f} µs/op with start-up; {result.client}",
    )


def median_rows(rounds: list[list[Row]], reference: str = "sysbench") -> list[Row]:
    """Each row's median rate and CPU over the rounds; ratios to sysbench taken
    within each round (the same minutes), and their range shown when rounds > 1."""
    merged = []
    for index, row in enumerate(rounds[0]):
        same = [r[index] for r in rounds if index < len(r)]
        ratios = [r[index].rate / r[0].rate for r in rounds if index < len(r)]
        note = row.note
        if len(same) > 1:
            spread = f"{min(ratios):.2f}-{max(ratios):.2f}"
            note = f"x {reference} {spread} over {len(same)} rounds; {note}"
        merged.append(
            Row(
                row.name,
                statistics.median(r.rate for r in same),
                statistics.median(r.cpu_per_op_us for r in same),
                note,
            )
        )
    return merged
