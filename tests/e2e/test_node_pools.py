"""Placement on real kubelets: the node pools of a multi-node kind cluster
(`make e2e-placement`, docs/testing.md "The placement suite").

Each test needs the pools of `DBBENCH_CLUSTER=kind DBBENCH_NODES=4` (runners,
db-small, db-large; tests/e2e/placement.py) and is skipped, saying so, on a
cluster without them (the one node of `make e2e`). Every test is `disruptive`:
its runs hold pools, and in `make e2e` it runs alone.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml

from dbbench_local.install import Kube, wait_for
from dbbench_local.kind_pools import DB_LARGE, DB_SMALL, POOL_LABEL, RUNNERS
from tests.e2e.conftest import (
    FIELD,
    RUNS_NS,
    apply_run,
    condition,
    delete_run,
    owned_children,
    run_status,
    session_name,
    small_spec,
    wait_phase,
)
from tests.e2e.placement import misplaced, missing_pools, node_pools, placed, watching_pods

pytestmark = [pytest.mark.e2e, pytest.mark.disruptive, pytest.mark.placement]

FIELD4 = FIELD / "4-oltp-replicas-cost-small.yaml"
# Two database pools for field benchmark 4's three targets: the stand-in joins
# PostgreSQL on db-large (db-small's allocatable is half of it).
FIELD4_POOLS = {"mysql": DB_SMALL, "postgres": DB_LARGE, "mongo-standin": DB_LARGE}


@pytest.fixture(scope="session")
def pools(local_cluster: Any) -> dict[str, str | None]:
    """{node: pool}; the test is skipped on a cluster without the pools, before the
    chart is installed (list this fixture before `kube`)."""
    nodes = Kube(local_cluster.kubeconfig).get("nodes") or {"items": []}
    found = node_pools(nodes)
    reason = missing_pools(found)
    if reason is not None:
        pytest.skip(reason)
    return found


def nodes_of(pools: dict[str, str | None], pool: str) -> list[str]:
    return sorted(node for node, have in pools.items() if have == pool)


def test_a_pool_no_node_has_is_refused_at_once_naming_the_selector(
    pools: dict[str, str | None], kube: Kube
) -> None:
    """`dbbench.io/pool: db-huge` on a cluster whose nodes are runners, db-small and
    db-large: Failed, NoNodeInPool, within seconds and before anything is deployed
    (without the refusal its pod waits Unschedulable for spec.startupGrace)."""
    name = session_name("no-pool")
    spec = small_spec(startupGrace="5m")
    spec["hardware"] = placed(spec["hardware"], "db-huge")
    started = time.monotonic()
    apply_run(kube, name, spec)
    status = wait_phase(kube, name, ("Failed", "Succeeded", "Provisioning", "Running"), 60)
    took = time.monotonic() - started
    failed = condition(status, "Failed")
    assert failed["reason"] == "NoNodeInPool", status
    assert failed["message"].startswith(
        "spec.hardware.nodeSelector={dbbench.io/pool=db-huge}: no node has these labels "
        f"({len(pools)} node(s) seen; the nodes' values of dbbench.io/pool: "
        "db-large, db-small, runners)"
    ), failed["message"]
    assert took < 45, f"refused after {took:.0f}s"
    assert "startedAt" not in status
    assert not owned_children(kube, name).get("StatefulSet"), owned_children(kube, name)
    delete_run(kube, name)


def _field4_on_pools() -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load(FIELD4.read_text())["spec"]
    for target in spec["targets"]:
        target["hardware"] = placed(target["hardware"], FIELD4_POOLS[target["name"]])
    spec["runner"]["nodeSelector"] = {POOL_LABEL: RUNNERS}
    return spec


def test_field_benchmark_4_small_runs_each_target_on_its_pool_and_runners_on_theirs(
    pools: dict[str, str | None], kube: Kube
) -> None:
    """examples/field/4-oltp-replicas-cost-small.yaml with each target's nodeSelector
    and toleration (FIELD4_POOLS) and the runners on the runner pool: every pod of
    the run, recorded as it was scheduled, is on its pool's node(s) and nowhere
    else; the run succeeds. The runner pool is untainted: a runner pod placed
    by default would land there too, but the database pods would not land on their
    tainted pools without the toleration, nor stay off the runner node without
    the selector."""
    name = session_name("field4-pools")
    spec = _field4_on_pools()
    with watching_pods(kube, name) as watch:
        uid = apply_run(kube, name, spec)
        status = wait_phase(kube, name, ("Succeeded", "Failed"), 1500)
    assert status["phase"] == "Succeeded", status.get("conditions")
    pods = watch.pods
    wrong = misplaced(pods, pools, FIELD4_POOLS)
    assert not wrong, "\n".join(wrong)
    database = [p for p in pods.values() if not p.runner]
    runners = [p for p in pods.values() if p.runner]
    # Every member of every target (2 + 2 + 1) and each step's runner pod (one pod
    # of 2 processes; a step per target and phase) were seen.
    by_target = {t: sorted(p.name for p in database if p.target == t) for t in FIELD4_POOLS}
    assert {t: len(n) for t, n in by_target.items()} == {
        "mysql": 2, "postgres": 2, "mongo-standin": 1}, by_target  # fmt: skip
    steps = len(spec["targets"]) * len(spec["phases"])
    assert len(runners) >= steps, sorted(p.name for p in runners)
    used = {p.node for p in pods.values()}
    assert used <= {*nodes_of(pools, DB_SMALL), *nodes_of(pools, DB_LARGE),
                    *nodes_of(pools, RUNNERS)}, used  # fmt: skip
    print(f"pods and nodes: {sorted((p.name, p.node) for p in pods.values())}")
    # Each database pool is one node here: the primary/replica members share it,
    # and the run says so for each target (condition Degraded, a Warning each).
    shared = _shared_node_warnings(kube, uid)
    for target, pool in (("mysql", DB_SMALL), ("postgres", DB_LARGE)):
        members = ", ".join(by_target[target])
        (node,) = nodes_of(pools, pool)
        assert any(m.startswith(f"target {target}: members {members} share node {node} (")
                   for m in shared), shared  # fmt: skip
    assert condition(status, "Degraded")["reason"] == "MembersShareANode", status["conditions"]
    delete_run(kube, name)


def _shared_node_warnings(kube: Kube, uid: str) -> list[str]:
    events = kube.get("events", "-n", RUNS_NS, f"--field-selector=involvedObject.uid={uid},"
                      "reason=MembersShareANode") or {"items": []}  # fmt: skip
    return [str(e["message"]) for e in events["items"] if e["type"] == "Warning"]


def test_members_get_a_node_each_when_their_pool_has_enough(
    pools: dict[str, str | None], kube: Kube
) -> None:
    """A MariaDB primary/replica target whose pool is the three workers (selected by
    `kubernetes.io/os`, tolerating both database pools; the control plane's taint
    keeps it off): its two members are scheduled to two distinct nodes of the
    pool, and the run reports no shared node (compare field benchmark 4 above,
    whose one-node pools make its members share)."""
    name = session_name("spread")
    spec = small_spec(
        targets=[{"name": "maria", "engine": "mariadb", "topology": "primaryReplica",
                  "members": 2, "settings": {"innodb_buffer_pool_size": "128M"}}],
        dataset={"shape": "flat45", "records": 2000, "recordSize": 256},
        phases=[{"name": "load", "type": "insert", "batchSize": 100},
                {"name": "reads", "type": "pointReads", "operations": 1000,
                 "readPreference": "secondaryPreferred"}],
    )  # fmt: skip
    tolerations = [placed({}, pool)["tolerations"][0] for pool in (DB_SMALL, DB_LARGE)]
    spec["hardware"] = {**spec["hardware"], "nodeSelector": {"kubernetes.io/os": "linux"},
                        "tolerations": tolerations}  # fmt: skip
    spec["runner"] = {**spec["runner"], "nodeSelector": {POOL_LABEL: RUNNERS}}
    with watching_pods(kube, name) as watch:
        uid = apply_run(kube, name, spec)
        status = wait_phase(kube, name, ("Succeeded", "Failed"), 600)
    assert status["phase"] == "Succeeded", status.get("conditions")
    members = {p.name: p.node for p in watch.pods.values() if not p.runner}
    assert len(members) == 2, members
    assert len(set(members.values())) == 2, f"members share a node: {members}"
    workers = {*nodes_of(pools, DB_SMALL), *nodes_of(pools, DB_LARGE), *nodes_of(pools, RUNNERS)}
    assert set(members.values()) <= workers, members
    assert not _shared_node_warnings(kube, uid)
    degraded = [c for c in status.get("conditions") or [] if c["type"] == "Degraded"]
    assert not degraded, degraded
    print(f"members and nodes: {sorted(members.items())}")
    delete_run(kube, name)


def _holding_spec(pool: str, hold: str, exclusive: bool) -> dict[str, Any]:
    """A small MariaDB run on `pool`: a load, then reads for `hold`."""
    spec = small_spec(
        dataset={"shape": "flat45", "records": 2000, "recordSize": 256},
        phases=[{"name": "load", "type": "insert", "batchSize": 100},
                {"name": "hold", "type": "pointReads", "duration": hold}],
    )  # fmt: skip
    spec["hardware"] = placed({**spec["hardware"], "exclusive": exclusive}, pool)
    spec["runner"] = {**spec["runner"], "nodeSelector": {POOL_LABEL: RUNNERS}}
    return spec


def _waiting(kube: Kube, name: str) -> dict[str, Any] | None:
    status = run_status(kube, name)
    found = [c for c in status.get("conditions") or []
             if c["type"] == "Progressing" and c["reason"] == "WaitingForNodes"]  # fmt: skip
    return found[0] if found and status.get("phase", "Pending") == "Pending" else None


def test_an_exclusive_pool_makes_a_second_run_wait_naming_the_holder_and_not_another_pool(
    pools: dict[str, str | None], kube: Kube
) -> None:
    """An exclusive run on db-small: a second run for db-small waits (Pending,
    WaitingForNodes naming the holder and db-small's node) and starts only after
    the holder ended; a run on db-large meanwhile is not held up."""
    holder, waiter, other = (session_name(n) for n in ("pool-holder", "pool-waiter",
                                                       "other-pool"))  # fmt: skip
    apply_run(kube, holder, _holding_spec(DB_SMALL, "60s", exclusive=True))
    wait_phase(kube, holder, ("Running",), 300)  # admitted: it holds db-small
    apply_run(kube, waiter, _holding_spec(DB_SMALL, "5s", exclusive=False))
    apply_run(kube, other, _holding_spec(DB_LARGE, "5s", exclusive=False))
    waits = wait_for(lambda: _waiting(kube, waiter), 60, f"{waiter} to wait for db-small")
    (small_node,) = nodes_of(pools, DB_SMALL)
    assert f"node(s) {small_node} exclusively in use by BenchmarkRun {RUNS_NS}/{holder};" in (
        waits["message"]), waits  # fmt: skip
    # Another pool's run is not held: it runs while the holder still does.
    other_running = wait_phase(kube, other, ("Running", "Succeeded", "Failed"), 300)
    assert run_status(kube, holder)["phase"] == "Running", "the holder ended too early to tell"
    assert other_running["phase"] in ("Running", "Succeeded"), other_running.get("conditions")
    assert _waiting(kube, waiter), f"{waiter} left Pending while {holder} held db-small"
    ended = {n: wait_phase(kube, n, ("Succeeded", "Failed"), 900) for n in (holder, waiter, other)}
    assert {n: s["phase"] for n, s in ended.items()} == dict.fromkeys(ended, "Succeeded"), ended
    assert ended[waiter]["startedAt"] >= ended[holder]["completedAt"], ended
    assert ended[other]["startedAt"] < ended[holder]["completedAt"], ended
    for name in (holder, waiter, other):
        delete_run(kube, name)


# The node lifecycle controller's grace before a silent node is Ready=Unknown
# (node-monitor-grace-period, 50 s in Kubernetes 1.34), then the operator's next
# pass of a running step (a few seconds), on a busy 2-core machine.
NODE_LOST_BOUND_S = 150


def _in_phase(kube: Kube, name: str, phase: str) -> dict[str, Any] | None:
    status = run_status(kube, name)
    progress = status.get("progress") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        raise AssertionError(f"{name} ended before its {phase} phase ran: {status}")
    running = progress.get("phase") == phase and progress.get("stage") == "Running"
    return status if running and (progress.get("opsPerSecond") or 0) > 0 else None


def _node_ready(kube: Kube, node: str) -> bool:
    found = kube.get("node", node) or {}
    conditions = (found.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def test_a_database_node_lost_mid_phase_fails_the_run_naming_it_and_the_rest_carry_on(
    pools: dict[str, str | None], kube: Kube
) -> None:
    """db-small's node paused (its container frozen) while a run reads from its
    MariaDB: the run fails NodeLost within NODE_LOST_BOUND_S, naming the node and
    the database pod; a run on db-large meanwhile succeeds; once the node is back,
    deleting the failed run leaves nothing it owned. Without the node check on
    the not-ready path the run was not ended 150 s after the pause (its unready
    pods read as a target not started, waited out for startupGrace)."""
    from dbbench_local.kind_nodes import paused  # noqa: PLC0415 (kind only)

    lost, after = session_name("node-lost"), session_name("after-loss")
    (small_node,) = nodes_of(pools, DB_SMALL)
    spec = _holding_spec(DB_SMALL, "4m", exclusive=False)
    spec["phases"][1]["targetRate"] = 200  # paced: the cores stay free for the other run
    with watching_pods(kube, lost) as watch:
        apply_run(kube, lost, spec)
        wait_for(lambda: _in_phase(kube, lost, "hold"), 420, f"{lost} reading", every=3)
    database = sorted(p.name for p in watch.pods.values() if not p.runner)
    assert [watch.pods[p].node for p in database] == [small_node], watch.pods
    with paused(small_node):
        frozen = time.monotonic()
        status = wait_phase(kube, lost, ("Succeeded", "Failed"), NODE_LOST_BOUND_S)
        took = time.monotonic() - frozen
        failed = condition(status, "Failed")
        assert failed["reason"] == "NodeLost", failed
        assert failed["message"].startswith(
            f"node {small_node} is not Ready (Ready=Unknown since "
        ), failed["message"]
        assert f"with database pod(s) {database[0]}, during step 2/2 (maria/hold/1)" in (
            failed["message"]), failed["message"]  # fmt: skip
        print(f"NodeLost {took:.0f} s after the pause: {failed['message']}")
        # The remaining nodes serve the next run while db-small's node is away.
        apply_run(kube, after, _holding_spec(DB_LARGE, "5s", exclusive=False))
        done = wait_phase(kube, after, ("Succeeded", "Failed"), 600)
        assert done["phase"] == "Succeeded", done.get("conditions")
    wait_for(lambda: _node_ready(kube, small_node), 180, f"{small_node} Ready again")
    delete_run(kube, lost)  # waits until nothing labelled with the run, nor its volume, is left
    delete_run(kube, after)


def test_a_runner_node_lost_mid_phase_fails_the_step_and_merges_nothing_of_it(
    pools: dict[str, str | None], kube: Kube
) -> None:
    """The runners on db-large (selected and tolerated: the runner pool also holds
    the operator, which pausing it would freeze), the database on db-small;
    db-large's node paused during a paced insert phase: the run fails NodeLost
    naming the node and the runner pod, the step's Job made one pod only (never
    retried elsewhere, which would insert its share twice), and nothing of the
    interrupted phase is merged into the results (no window stretched over the
    pause). Once the node is back, deleting the run leaves nothing."""
    from dbbench_local.kind_nodes import paused  # noqa: PLC0415 (kind only)

    name = session_name("runner-lost")
    (large_node,) = nodes_of(pools, DB_LARGE)
    spec = _holding_spec(DB_SMALL, "4m", exclusive=False)
    spec["phases"][1] = {"name": "writes", "type": "mix", "mix": {"insert": 1},
                         "duration": "4m", "targetRate": 200}  # fmt: skip
    toleration = placed({}, DB_LARGE)["tolerations"]
    spec["runner"] = {**spec["runner"], "nodeSelector": {POOL_LABEL: DB_LARGE},
                      "tolerations": toleration}  # fmt: skip
    with watching_pods(kube, name) as watch:
        apply_run(kube, name, spec)
        wait_for(lambda: _in_phase(kube, name, "writes"), 420, f"{name} writing", every=3)
        writers = sorted(p.name for p in watch.pods.values() if p.runner and "-step-2-" in p.name)
        assert [watch.pods[p].node for p in writers] == [large_node], watch.pods
        with paused(large_node):
            frozen = time.monotonic()
            status = wait_phase(kube, name, ("Succeeded", "Failed"), NODE_LOST_BOUND_S)
            took = time.monotonic() - frozen
        wait_for(lambda: _node_ready(kube, large_node), 180, f"{large_node} Ready again")
    failed = condition(status, "Failed")
    assert failed["reason"] == "NodeLost", failed
    assert failed["message"].startswith(f"node {large_node} is not Ready (Ready=Unknown since "), (
        failed["message"])  # fmt: skip
    assert f"with runner pod(s) {writers[0]}, during step 2/2 (maria/writes/1)" in (
        failed["message"]), failed["message"]  # fmt: skip
    print(f"NodeLost {took:.0f} s after the pause: {failed['message']}")
    step2 = sorted(p.name for p in watch.pods.values() if p.runner and "-step-2-" in p.name)
    assert step2 == writers, f"the step's Job made another pod: {step2}"
    phases = [p["name"] for t in status.get("targets") or [] for p in t.get("phases") or []]
    assert "writes" not in phases, status["targets"]
    delete_run(kube, name)
