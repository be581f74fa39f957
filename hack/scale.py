"""make scale: the operator on a simulated 100-node cluster with 1,000 runs.

Starts its own control plane (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler from .tools/bin, on free loopback ports, in a directory of its
own), kwok with 100 nodes in 5 labelled, tainted pools, a MariaDB as the
external target, a results service and the real operator (`kopf run`, as the
chart's Deployment runs it, as the chart's ServiceAccount). Then prints:

1. a sharded MongoDB (10 shards x 3, 3 config servers, mongos) and a step of
   30 runner pods: time from apply until every pod is scheduled;
2. runs added 100 at a time up to 1,000 in 50 namespaces, each batch held in
   steady state (hack/dbbench_scale/fleet.py says how): operator RSS, CPU and
   API requests per second (the API server's own counts) per 100 runs;
3. placement of every pod, checked against its run's spec: misplaced pods;
4. all runs deleted: time until nothing they owned is left;
5. the results service: a step of 64 runner pods merged (time, peak memory
   against 8 pods), and a run summary of 100 steps with its report.

A script printing figures with the goals beside them, not a timed test.
Sizes: SCALE_NODES, SCALE_RUNS, SCALE_STEP, SCALE_NAMESPACES, SCALE_WINDOW
(seconds measured per step), SCALE_MERGE_PODS (e.g. "8,64"). SCALE_PROFILE=<dir>
profiles the operator (hack/dbbench_scale/profiling/; docs/testing.md).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dbbench_local.controlplane import ControlPlane
from dbbench_local.mariadb import start_mariadb
from dbbench_local.results_service import running_results_service
from dbbench_operator.settings import OperatorSettings
from dbbench_scale import apimetrics, fleet, observing, placement, pools, results_side
from dbbench_scale.observing import Api, wait_for
from dbbench_scale.operating import OPERATOR_NS, Operator, start_operator
from dbbench_scale.simulating import simulated_nodes

NODES = int(os.environ.get("SCALE_NODES", "100"))
RUNS = int(os.environ.get("SCALE_RUNS", "1000"))
STEP = int(os.environ.get("SCALE_STEP", "100"))
NAMESPACES = int(os.environ.get("SCALE_NAMESPACES", "50"))
WINDOW_S = float(os.environ.get("SCALE_WINDOW", "15"))
SETTLE_S = float(os.environ.get("SCALE_SETTLE", "120"))
# The ramp stops adding runs when this is spent (the whole script must stay
# under 20 minutes on a 2-core machine, whatever the operator costs).
RAMP_BUDGET_S = float(os.environ.get("SCALE_RAMP_BUDGET", "750"))
MERGE_PODS = tuple(int(n) for n in os.environ.get("SCALE_MERGE_PODS", "8,64").split(","))
MERGE_PHASE_S = 60.0  # each pod's phase: one interval histogram per second and kind
SHAPES_TIMEOUT_S = float(os.environ.get("SCALE_SHAPES_TIMEOUT", "300"))
DELETE_TIMEOUT_S = float(os.environ.get("SCALE_DELETE_TIMEOUT", "180"))
GOAL_RSS_MB, GOAL_CPU = 200.0, 0.1
# kwok's informers ask for streaming lists (watch-list), which this API server
# refuses on Debian's etcd 3.4 (no RequestWatchProgress): its watches kept
# ending and it saw deletions only at its next relist, 10-30 s later. Without
# the server's WatchList feature they are plain watches (deletions at once).
APISERVER_ARGS = ("--feature-gates=WatchList=false",)

goals: list[tuple[str, str, str]] = []  # (goal, measured, verdict)


@dataclass(frozen=True)
class Row:
    """One step of the ramp: runs applied, the operator's cost, and how many runs
    were not yet steady (`observing.steady`) when it was measured."""

    runs: int
    window: apimetrics.Window
    unsteady: int


def say(text: str = "") -> None:
    print(text, flush=True)


def apply(plane: ControlPlane, docs: list[dict[str, Any]]) -> None:
    plane.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))


def create_runs(api: Api, runs: list[dict[str, Any]]) -> None:
    """POST each run, 8 at a time: `kubectl apply` of 100 runs took 20-30 s of a
    step's settle time on the busy API server (a GET and a write per object, one
    after the other), time that was the script's, not the operator's."""

    def create(run: dict[str, Any]) -> None:
        ns = run["metadata"]["namespace"]
        api.create(f"/apis/dbbench.io/v1alpha1/namespaces/{ns}/benchmarkruns", run)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(create, runs))


def prepare_namespaces(plane: ControlPlane, uri: str) -> list[str]:
    names = sorted({fleet.namespace(i, NAMESPACES) for i in range(NAMESPACES)})
    docs: list[dict[str, Any]] = []
    for ns in names:
        docs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        docs.append({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                     "metadata": {"name": fleet.URI_SECRET, "namespace": ns},
                     "stringData": {"uri": uri}})  # fmt: skip
    apply(plane, docs)
    return names


def time_to_scheduled(api: Api, ns: str, run: str, expected: int, timeout: float) -> str:
    """Seconds until `expected` pods of the run are scheduled (the clock runs from now)."""
    started = time.monotonic()

    def done() -> bool | None:
        pods = api.items(f"/api/v1/namespaces/{ns}/pods", labelSelector=f"dbbench.io/run={run}")
        scheduled = [p for p in pods if (p.get("spec") or {}).get("nodeName")]
        return True if len(scheduled) >= expected else None

    if wait_for(done, timeout) is None:
        return f"not within {timeout:.0f} s"
    return f"{time.monotonic() - started:.1f} s"


def big_shapes(plane: ControlPlane, api: Api) -> None:
    say("== 1. large shapes: apply -> every pod scheduled")
    ns = fleet.namespace(0, NAMESPACES)
    apply(plane, [fleet.sharded_run(ns)])
    # 10 shards x 3 members + 3 config servers + 1 mongos (the operator's default).
    took = time_to_scheduled(api, ns, "sharded", 34, SHAPES_TIMEOUT_S)
    say(f"  MongoDB 10 shards x 3 + 3 config servers + mongos (34 pods): {took}")
    apply(plane, [fleet.wide_runner_run(ns)])
    took = time_to_scheduled(api, ns, "runners30", 30, SHAPES_TIMEOUT_S)
    say(f"  one step of 30 runner pods (external target):               {took}")
    say("  (the sharded target's own runner pods start only after its setup, which")
    say("   needs real mongod: with kwok its pods run but never become ready)")


def sample(operator: Operator, api: Api) -> tuple[float, apimetrics.ProcessSample, str]:
    return time.monotonic(), apimetrics.process_sample(operator.pid), api.metrics()


def ramp(api: Api, operator: Operator) -> list[Row]:
    say(f"\n== 2. steady state, {STEP} runs at a time ({NAMESPACES} namespaces, "
        f"{WINDOW_S:.0f} s measured per step)")  # fmt: skip
    say(f"  {'runs':>5} {'settle':>7} {'RSS MB':>7} {'CPU':>6} {'op req/s':>9} "
        f"{'req/run/min':>11} {'all req/s':>9}  phases; pods")  # fmt: skip
    runs = fleet.fleet(RUNS, NAMESPACES, pools.node_counts(NODES)["exclusive"])
    rows = []
    deadline = time.monotonic() + RAMP_BUDGET_S
    for done in range(STEP, RUNS + STEP, STEP):
        left, steps_left = deadline - time.monotonic(), (RUNS - done) // STEP + 1
        if left < WINDOW_S + 15:
            say(f"  stopped adding runs at {done - STEP}: the ramp's {RAMP_BUDGET_S:.0f} s "
                "budget is spent (SCALE_RAMP_BUDGET)")  # fmt: skip
            break
        batch = runs[done - STEP : done]
        started = time.monotonic()
        create_runs(api, batch)
        # Its share of what is left, less the window and ~8 s of applying, polling and sampling.
        settle_for = min(SETTLE_S, max(10.0, left / steps_left - WINDOW_S - 8))
        state, settled = observing.settle(api, settle_for)
        settle_s = f"{time.monotonic() - started:.0f}s" + ("" if settled else "!")
        if not operator.alive():
            raise RuntimeError(f"the operator exited; see {operator.log}")
        before = sample(operator, api)
        time.sleep(WINDOW_S)
        window = apimetrics.window(before, sample(operator, api))
        total = min(done, RUNS) + 2  # the two large shapes stay too
        rows.append(Row(total, window, state.unsteady))
        say(f"  {total:>5} {settle_s:>7} {window.rss_mb:>7.0f} {window.cpu_cores:>6.2f} "
            f"{window.requests_per_s:>9.1f} {window.per_run_per_minute(total):>11.2f} "
            f"{window.all_requests_per_s:>9.0f}  {state.line()}")  # fmt: skip
    failed = observing.failures(api)
    if failed:
        say(f"  failed runs by reason: {dict(failed)}")
    say(
        "  (settle: time until phases and pods stopped moving; '!' = still moving "
        "when its share of the budget ran out; CPU in cores; req: API requests)"
    )
    return rows


def check_placement(api: Api) -> int:
    say("\n== 3. placement")
    nodes = {n["metadata"]["name"]: n["metadata"].get("labels") or {}
             for n in api.items("/api/v1/nodes")}  # fmt: skip
    runs = {r["metadata"]["uid"]: placement.run_placement(r) for r in api.items(observing.RUNS)}
    pods = [p for p in map(placement.pod_placement,
                           api.items("/api/v1/pods", labelSelector=placement.RUN_UID_LABEL))
            if p is not None]  # fmt: skip
    verdict = placement.check(nodes, runs, pods)
    say(f"  pods checked {verdict.checked}, not scheduled {verdict.unscheduled}, "
        f"misplaced {len(verdict.misplaced)} {verdict.by_rule() or ''}")  # fmt: skip
    for wrong in verdict.misplaced[:5]:
        say(f"    {wrong.pod}: {wrong.rule}: {wrong.detail}")
    sharded_uid = next((uid for uid, r in runs.items() if r.name.endswith("/sharded")), "")
    sharded = [p for p in pods if p.run_uid == sharded_uid]
    used, most = placement.spread_of(sharded)
    placed = sum(1 for p in sharded if p.node)
    say(f"  sharded MongoDB: {placed} of {len(sharded)} pods scheduled, on {used} nodes, "
        f"at most {most} on one node")  # fmt: skip
    return len(verdict.misplaced)


def delete_all(api: Api, namespaces: list[str]) -> dict[str, int]:
    say("\n== 4. deleting every run")
    started = time.monotonic()
    for ns in namespaces:
        api.delete_collection(f"/apis/dbbench.io/v1alpha1/namespaces/{ns}/benchmarkruns",
                              labelSelector="dbbench.io/scale=true")  # fmt: skip
    left: dict[str, int] = {}
    shown = [started]

    def gone() -> bool | None:
        nonlocal left
        left = observing.leftovers(api, set(namespaces))
        if left and time.monotonic() - shown[-1] >= 20:  # what is slow to go, as it goes
            shown.append(time.monotonic())
            say(f"  after {shown[-1] - started:3.0f} s: {left}")
        return True if not left else None

    if wait_for(gone, DELETE_TIMEOUT_S, every=2.0):
        say(f"  nothing left after {time.monotonic() - started:.1f} s")
    else:
        say(f"  after {DELETE_TIMEOUT_S:.0f} s still there: {left}")
    return left


def cluster_part(workdir: Path) -> tuple[list[Row], int, dict[str, int]]:
    with contextlib.ExitStack() as stack:
        started = time.monotonic()
        plane = ControlPlane(workdir / "controlplane", apiserver_args=APISERVER_ARGS).start()
        stack.callback(plane.stop)
        stack.enter_context(simulated_nodes(plane, workdir, NODES))
        mariadb = start_mariadb(workdir / "mariadb")
        stack.callback(mariadb.stop)
        results = stack.enter_context(running_results_service(workdir / "results-op"))
        operator = start_operator(plane, workdir, results)
        stack.callback(operator.stop)
        uri = f"mariadb://root:{mariadb.root_password}@127.0.0.1:{mariadb.port}/"
        namespaces = prepare_namespaces(plane, uri)
        api = Api(plane)
        say(f"control plane, kwok ({NODES} nodes: {pools.node_counts(NODES)}), MariaDB, "
            f"results service and operator up in {time.monotonic() - started:.0f} s")  # fmt: skip
        say(f"(work directory {workdir}; operator {OPERATOR_NS}, pid {operator.pid})\n")
        big_shapes(plane, api)
        rows = ramp(api, operator)
        misplaced = check_placement(api)
        left = delete_all(api, namespaces)
        return rows, misplaced, left


def results_part(workdir: Path) -> None:
    say("\n== 5. results service")
    with running_results_service(workdir / "results-bench") as service:
        settings = OperatorSettings(results_url=service.url, results_key=service.key)
        load = results_side.PodLoad(12_000, MERGE_PHASE_S)
        pods_dir = workdir / "pods"
        # A first merge loads the merge code: the figures then compare merges alone.
        results_side.merge_step_of(settings, service.pid, pods_dir, 1, load)
        figures = [results_side.merge_step_of(settings, service.pid, pods_dir, n, load)
                   for n in MERGE_PODS]  # fmt: skip
        say(
            f"  each pod: {load.operations} operations over {load.seconds:.0f} s, "
            "2 operation kinds (interval histograms per second), checkpoints every 10"
        )
        for f in figures:
            say(f"  merge of {f.pods:>3} pods ({f.upload_mb:4.1f} MB uploaded): "
                f"{f.merge_s:6.1f} s, service RSS {f.rss_before_mb:.0f} MB before, "
                f"peak {f.peak_rss_mb:.0f} MB")  # fmt: skip
        summary = results_side.run_summary(settings, service.pid, service.root, workdir, 5.0)
        say(f"  run summary of {summary.steps} steps (one pod each): written in "
            f"{summary.write_s:.1f} s, report rendered {summary.report_s:.1f} s later; "
            f"service RSS {summary.rss_before_mb:.0f} MB before, peak "
            f"{summary.peak_rss_mb:.0f} MB")  # fmt: skip
    small, large = figures[0], figures[-1]
    goals.append((f"{large.pods}-pod merge in seconds", f"{large.merge_s:.1f} s",
                  "ok" if large.merge_s < 60 else "NO"))  # fmt: skip
    growth = (large.peak_rss_mb - large.rss_before_mb) / max(
        small.peak_rss_mb - small.rss_before_mb, 5.0
    )
    goals.append(("results memory flat in pods",
                  f"merge adds {small.peak_rss_mb - small.rss_before_mb:.0f} MB at "
                  f"{small.pods} pods, {large.peak_rss_mb - large.rss_before_mb:.0f} MB at "
                  f"{large.pods}",
                  "ok" if growth < 1.5 else "NO"))  # fmt: skip


def cluster_goals(rows: list[Row], misplaced: int, left: dict[str, int]) -> None:
    (first_runs, first), (runs, last) = (
        (rows[0].runs, rows[0].window),
        (rows[-1].runs, rows[-1].window),
    )
    goals.append(
        (
            f"operator RSS at {runs} runs < {GOAL_RSS_MB:.0f} MB",
            f"{last.rss_mb:.0f} MB",
            "ok" if last.rss_mb < GOAL_RSS_MB else "NO",
        )
    )
    goals.append(
        (
            f"steady CPU at {runs} runs < {GOAL_CPU} core",
            f"{last.cpu_cores:.2f} core",
            "ok" if last.cpu_cores < GOAL_CPU else "NO",
        )
    )
    growth = last.per_run_per_minute(runs) / max(first.per_run_per_minute(first_runs), 1e-9)
    behind = rows[-1].unsteady
    goals.append(("API requests per run per minute bounded",
                  f"{first.per_run_per_minute(first_runs):.1f} at {first_runs} runs, "
                  f"{last.per_run_per_minute(runs):.1f} at {runs}"
                  + (f" ({behind} runs not yet steady)" if behind else ""),
                  "ok" if growth < 1.5 and not behind else "NO"))  # fmt: skip
    goals.append(("0 misplaced pods", str(misplaced), "ok" if misplaced == 0 else "NO"))
    goals.append(("0 leftovers after deletion", str(sum(left.values())),
                  "ok" if not left else "NO"))  # fmt: skip


def _interrupted(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")  # unwinds: every process stopped by PID


def main() -> int:
    signal.signal(signal.SIGTERM, _interrupted)
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="dbbench-scale-"))
    say(f"make scale: {RUNS} runs on {NODES} simulated nodes (machine: "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})\n")  # fmt: skip
    try:
        rows, misplaced, left = cluster_part(workdir)
        cluster_goals(rows, misplaced, left)
        results_part(workdir)
    except BaseException:
        say(f"\n(the work directory, its logs and data, kept for a look: {workdir})")
        raise
    say(f"\n== goals (whole benchmark {(time.monotonic() - started) / 60:.1f} min)")
    for goal, measured, verdict in goals:
        say(f"  {verdict:>3}  {goal:<42} {measured}")
    # A finished run's control-plane data and logs are ~400 MB; SCALE_KEEP=1 keeps them.
    if os.environ.get("SCALE_KEEP") == "1":
        say(f"(work directory kept: {workdir})")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
