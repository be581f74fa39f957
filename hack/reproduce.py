"""`make reproduce`: the field benchmarks' small variants on the local cluster.

The cluster is already up (the Makefile brings it up first). The chart is
installed as `make e2e` installs it (cold-cache Jobs allowed: benchmarks 3 and
5 restart their databases and drop the node's page cache). Then each
examples/field/*-small.yaml that can run here is applied in the namespace
`reproduce`, one after another: the node has two cores, and two runs at once
would measure each other (and the exclusive ones wait for the node anyway).
Each is waited for (`kubectl get br`, its own timeout), fetched with `dbbench
fetch` into build/reproduce/<run>/ and deleted; the variants that cannot run
here (MongoDB without a mongod) are named with the reason. The table
(hack/dbbench_local/reproductions.py) goes to build/reproductions-table.md and
to stdout. Exit 1 when a runnable variant did not succeed.

`--table-only` rebuilds the table from what build/reproduce/ already holds;
`--only TEXT` (repeatable) runs the variants whose file name contains TEXT.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from dbbench_contract.durations import parse_duration
from dbbench_local.cluster import chosen
from dbbench_local.controlplane import REPO
from dbbench_local.install import (
    LOCAL_IMAGES,
    Kube,
    install_chart,
    node_engine_images,
    wait_for_run,
)
from dbbench_local.reproductions import Outcome, Variant, table, variant
from dbbench_report import ResultsError, read_run

FIELD = REPO / "examples" / "field"
NAMESPACE = "reproduce"
FETCHED = REPO / "build" / "reproduce"
TABLE = REPO / "build" / "reproductions-table.md"
# Beyond a run's own timeout: the wait for its node (an exclusive run waits for
# the previous run's databases to go), and the operator's collecting and cleanup.
MARGIN_S = 600


def say(message: str) -> None:
    print(f"reproduce: {message}", file=sys.stderr, flush=True)


def variants(only: list[str]) -> list[tuple[Variant, Path]]:
    found = []
    for path in sorted(FIELD.glob("*-small.yaml")):
        if not only or any(text in path.name for text in only):
            found.append((variant(path.name, yaml.safe_load(path.read_text())), path))
    return found


def machine() -> str:
    """This machine in one line: CPU model and count, memory, kernel."""
    cpu = "unknown CPU"
    memory = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            memory = f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
    return (f"{platform.node()} ({os.cpu_count()} x {cpu}, {memory} memory, Linux "
            f"{platform.release()}; the local single-node cluster, `make cluster-up`)")  # fmt: skip


def dbbench(kube: Kube, *args: str) -> subprocess.CompletedProcess[str]:
    """The user's CLI against the cluster, through the API server's service proxy."""
    command = [sys.executable, "-m", "dbbench_cli", "--kubeconfig", str(kube.kubeconfig),
               "-n", NAMESPACE, *args]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)


def run_one(kube: Kube, v: Variant, path: Path) -> Outcome:
    """Apply one variant, wait for it to end, fetch its results, delete it."""
    spec: dict[str, Any] = yaml.safe_load(path.read_text())["spec"]
    kube.kubectl("delete", "benchmarkrun", v.name, "-n", NAMESPACE, "--ignore-not-found",
                 "--wait=true", timeout=600)  # fmt: skip
    kube.kubectl("apply", "-n", NAMESPACE, "-f", str(path))
    started = time.monotonic()
    say(f"applied {path.name}; waiting (kubectl -n {NAMESPACE} get br {v.name} -w)")

    def show(run: dict[str, Any]) -> None:
        status = run.get("status") or {}
        progress = status.get("progress") or {}
        where = " ".join(f"{k}={progress[k]}" for k in ("target", "phase", "repeat", "stage")
                         if progress.get(k) is not None)  # fmt: skip
        say(f"{v.name} {time.monotonic() - started:5.0f}s {status.get('phase')} {where}")

    timeout = parse_duration(str(spec.get("timeout", "2h"))) + MARGIN_S
    problem = None
    try:
        ended = wait_for_run(kube, NAMESPACE, v.name, timeout=timeout, on_change=show)
    except TimeoutError as exc:
        ended, problem = None, f"did not end within {timeout:.0f} s ({exc})"
    out = FETCHED / v.name
    if out.exists():
        shutil.rmtree(out)
    fetched = dbbench(kube, "fetch", v.name, "--out", str(out))
    if fetched.returncode != 0:
        problem = problem or f"`dbbench fetch` failed: {fetched.stderr.strip()[-500:]}"
    elif ended is not None and (ended.get("status") or {}).get("phase") != "Succeeded":
        problem = "the run failed (its reason and message above)"
    say(f"{v.name} ended after {time.monotonic() - started:.0f}s: {problem or 'Succeeded'}")
    kube.kubectl("delete", "benchmarkrun", v.name, "-n", NAMESPACE, "--ignore-not-found",
                 "--wait=true", timeout=600, check=False)  # fmt: skip
    return read_outcome(v, problem)


def read_outcome(v: Variant, problem: str | None = None) -> Outcome:
    """The variant's fetched results under build/reproduce/, if any."""
    if v.not_here is not None:
        return Outcome(v, problem=v.not_here)
    try:
        return Outcome(v, run=read_run(FETCHED / v.name), problem=problem)
    except ResultsError as exc:
        return Outcome(v, problem=problem or f"no results fetched ({exc})")


def when(outcomes: list[Outcome]) -> str:
    """From the first run's start to the last one's end (now, when none ran)."""
    starts = [o.run.meta.started_at for o in outcomes if o.run and o.run.meta.started_at]
    ends = [o.run.meta.completed_at for o in outcomes if o.run and o.run.meta.completed_at]
    if not starts or not ends:
        return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{min(starts)} .. {max(ends)}"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="TEXT",
        help="run the variants whose file name contains TEXT (repeatable)",
    )
    parser.add_argument("--table-only", action="store_true",
                        help="no runs: the table from what build/reproduce/ holds")  # fmt: skip
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    chosen_variants = variants(args.only)
    outcomes: list[Outcome] = []
    failed = False
    if args.table_only:
        outcomes = [read_outcome(v) for v, _ in chosen_variants]
    else:
        kube = Kube(chosen().kubeconfig)
        say("installing the chart with helm (cold-cache Jobs allowed)")
        install_chart(kube, ["coldCache.allowPrivilegedPods=true", *LOCAL_IMAGES],
                      node_engine_images())  # fmt: skip
        kube.kubectl("create", "namespace", NAMESPACE, check=False)
        for v, path in chosen_variants:
            if v.not_here is not None:
                say(f"{path.name}: not run here: {v.not_here}")
                outcomes.append(Outcome(v, problem=v.not_here))
                continue
            outcome = run_one(kube, v, path)
            failed = failed or outcome.run is None or outcome.problem is not None
            outcomes.append(outcome)
    text = table(outcomes, machine(), when(outcomes))
    TABLE.parent.mkdir(parents=True, exist_ok=True)
    TABLE.write_text(text)
    print(text)
    say(f"wrote {TABLE.relative_to(REPO)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
