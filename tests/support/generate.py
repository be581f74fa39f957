"""Real result sets, laid out as the results service lays them out.

A BenchmarkRun spec is planned and turned into step files by the operator's own
builders (`specs/plan.plan`, `specs/table_state`, `specs/runner_job.build_step_config`);
each step runs the runner CLI (`dbbench_runner.cli.main(["run", ...])`, what
`python -m dbbench_runner run` calls; one runner process per run, see StepProcess)
against a real MariaDB into ``pod-0/``, the results service's own merge
(`dbbench_results.steps.merge_step`) combines the pods into the step directory, and the operator's
`steps/collecting.build_run_summary` writes the run's ``summary.json``. Only the
transport (HTTP uploads) is left out: the files are the ones a cluster run
leaves on the claim.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from dbbench_contract.api import SecretKeyRef, TargetResult, parse_spec
from dbbench_contract.summary import StepSummary
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.addresses import TargetAccess
from dbbench_operator.specs.plan import plan
from dbbench_operator.specs.runner_job import build_step_config, step_dir
from dbbench_operator.specs.table_state import table_state
from dbbench_operator.steps.collecting import build_run_summary
from dbbench_results.steps import merge_step
from tests.fixtures.mariadb import MariaDBServer

NAMESPACE = "bench"


@dataclass(frozen=True)
class RunDir:
    """Where one generated run lives and what it was."""

    root: Path  # the claim
    run: RunRef
    spec: dict[str, Any]

    @property
    def path(self) -> Path:
        return self.root / self.run.namespace / self.run.name / self.run.uid


def small_spec(
    threads: int,
    repeats: int,
    price: float | None,
    target_prices: dict[str, float] | None = None,
    processes: int = 1,
) -> dict[str, Any]:
    """An insert + mix + query run on two external MariaDB targets, at test size;
    `target_prices` give targets a price of their own (`targets[].hardware`)."""
    hardware: dict[str, Any] = {"exclusive": False}
    if price is not None:
        hardware["pricePerHour"] = price
    external = {"uriSecretRef": {"name": "targets", "key": "uri"}}
    targets: list[dict[str, Any]] = [
        {"name": "safe", "engine": "mariadb", "durability": "safe", "external": external},
        {"name": "fast", "engine": "mariadb", "durability": "fast", "external": external},
    ]
    for target in targets:
        if target["name"] in (target_prices or {}):
            target["hardware"] = {"pricePerHour": (target_prices or {})[target["name"]]}
    return {
        "targets": targets,
        "hardware": hardware,
        "runner": {"threads": threads, "processes": processes},
        "dataset": {"shape": "indexed4", "records": 1000, "recordSize": 256, "seed": 11},
        "phases": [
            {"name": "load", "type": "insert", "batchSize": 1, "reportEvery": 150},
            {
                "name": "oltp",
                "type": "mix",
                "mix": {"read": 80, "update": 15, "scan": 5},
                "operations": 800,
                "reportEvery": 200,
            },
            {
                "name": "queries",
                "type": "query",
                "queries": ["indexedEquality", "twoFieldProjection", "sortSkip"],
                "operations": 200,
                "reportEvery": 50,
            },
        ],
        "repeats": repeats,
        "timeout": "30m",
    }


# The runner CLI run once per step, the steps one after another in one process:
# a process per step paid the runner's imports and its worker fork server's
# start again each time: one small_spec run's 12 steps cost 8.3 s of CPU that
# way, 2.9 s in one process (2026-11-28). Each step line is answered by DONE
# and the step's exit code; the steps' own output goes before it.
DONE = "dbbench-test-step-done"
_STEP_LOOP = f"""
import sys
from dbbench_runner.cli import main
for line in sys.stdin:
    config, out = line.rstrip("\\n").split("\\t")
    code = main(["run", "--config", config, "--out", out])
    print("{DONE}", code, flush=True)
"""
STEP_TIMEOUT_S = 300


class StepProcess:
    """One runner process that runs step files as `python -m dbbench_runner run` does."""

    def __init__(self, work: Path) -> None:
        work.mkdir(parents=True, exist_ok=True)
        self.log = work / f"runner-{uuid.uuid4().hex[:8]}.log"
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _STEP_LOOP], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=log, text=True,
            )  # fmt: skip

    def run(self, config: dict[str, Any], work: Path, out: Path) -> None:
        work.mkdir(parents=True, exist_ok=True)
        path = work / "step.yaml"
        path.write_text(yaml.safe_dump(config))
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None
        assert stdout is not None
        stdin.write(f"{path}\t{out}\n")
        stdin.flush()
        # A step that hangs is killed: its line never comes, readline sees the end.
        watchdog = threading.Timer(STEP_TIMEOUT_S, self.process.kill)
        watchdog.start()
        try:
            answer = next((line for line in stdout if line.startswith(DONE)), "")
        finally:
            watchdog.cancel()
        code = answer.split()[1] if answer else f"died: {self.process.poll()}"
        if code != "0":
            tail = self.log.read_text()[-3000:]
            raise RuntimeError(f"runner failed ({code}) on {path}:\n{tail}")

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def generate_run(
    root: Path,
    work: Path,
    name: str,
    uid: str,
    servers: dict[str, MariaDBServer],
    spec_body: dict[str, Any],
) -> RunDir:
    """Run every planned step of `spec_body` against `servers` (by target name)."""
    spec = parse_spec(spec_body)
    run = RunRef(name=name, namespace=NAMESPACE, uid=uid)
    out = RunDir(root, run, spec_body)
    steps = plan(spec)
    access = TargetAccess(engine="mariadb", uri_secret=SecretKeyRef(name="targets", key="uri"))
    uri_files: dict[str, Path] = {}
    work.mkdir(parents=True, exist_ok=True)
    for target, server in servers.items():
        # What the user's Secret would hold; mounted as a file in a runner pod.
        uri = work / f"{name}-{target}.uri"
        database = f"{name}_{target}".replace("-", "_")
        uri.write_text(f"mysql://root:{server.root_password}@127.0.0.1:{server.port}/{database}")
        uri_files[target] = uri
    merged: dict[int, StepSummary] = {}
    runner = StepProcess(work / name)
    try:
        for step in steps:
            # What the target's earlier steps wrote, as the operator passes it on.
            state = table_state(steps, step, merged, spec.dataset.records)
            config = build_step_config(spec, step, access, state).to_wire()
            config["target"]["uriFile"] = str(uri_files[step.target])
            # Frequent storage samples so that a 2-second load still draws a growth curve.
            config["storageEvery"] = 0.25
            directory = out.path / step_dir(step)
            runner.run(config, work / name / step.key, directory / "pod-0")
            merged[step.index] = merge_step(directory, 1)
    finally:
        runner.close()
    status_targets = [
        TargetResult(name=t, server_version=next(merged[s.index].server_version for s in steps
                                                 if s.target == t))
        for t in servers
    ]  # fmt: skip
    summary = build_run_summary(
        run, spec, steps, merged, started_at=datetime(2026, 1, 1, tzinfo=UTC),
        completed_at=datetime(2026, 1, 1, 0, 10, tzinfo=UTC), status_targets=status_targets,
    )  # fmt: skip
    (out.path / "summary.json").write_text(json.dumps(summary.to_wire(), indent=1))
    return out
