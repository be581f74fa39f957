"""A database's first start, on the real node (issue 35): a memory limit the
server cannot start in is refused at admission; a server killed during its
first initialisation is initialised again and the run succeeds; a server whose
users do not match the run's credentials fails the run after its
`startupGrace`, saying what that means and where to look.

Each run's name carries this session's token; its pods are found through what
the run's uid owns. Every wait is bounded; the runs are deleted at the end.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from dbbench_local.install import Kube, wait_for
from tests.e2e.conftest import (
    RUNS_NS,
    apply_run,
    condition,
    database_pod_objects,
    delete_run,
    owned_children,
    run_status,
    run_uid,
    session_name,
    small_spec,
    wait_phase,
)
from tests.e2e.test_engines import MYSQL_HARDWARE
from tests.e2e.test_tenant import kill_container

pytestmark = pytest.mark.e2e

GRACE_S = 45
FAIL_SLACK_S = 30
DENIED = "AccessDenied"


def test_a_512mi_mysql_primary_replica_run_is_refused_at_admission(kube: Kube) -> None:
    name = session_name("mysql-512")
    spec = small_spec(targets=[{"name": "mysql", "engine": "mysql", "topology": "primaryReplica",
                                "members": 2}])  # fmt: skip
    assert spec["hardware"]["resources"]["limits"]["memory"] == "512Mi"
    started = time.monotonic()
    apply_run(kube, name, spec)
    status = wait_phase(kube, name, ("Failed", "Succeeded", "Provisioning"), 60)
    elapsed = time.monotonic() - started
    accepted = condition(status, "Accepted")
    assert (status["phase"], accepted["status"], accepted["reason"]) == (
        "Failed", "False", "InvalidSpec"), status  # fmt: skip
    assert (
        "spec.hardware.resources.limits.memory: 512Mi is below what MySQL needs at target "
        "mysql's settings: about 627 MiB"
    ) in accepted["message"], accepted
    assert "set limits.memory to at least 768Mi" in accepted["message"]
    assert 'settings.performance_schema: "OFF"' in accepted["message"]
    assert elapsed < 30, f"refused after {elapsed:.0f}s"
    assert "startedAt" not in status
    assert not owned_children(kube, name).get("StatefulSet")
    delete_run(kube, name)


def _log(kube: Kube, pod: str, container: str, *extra: str) -> str:
    result = kube.kubectl("logs", "-n", RUNS_NS, pod, "-c", container, *extra, check=False)
    return result.stdout if result.returncode == 0 else ""


def _initialising(kube: Kube, name: str, uid: str) -> dict[str, Any] | None:
    """The database pod while its first start is between `mysqld --initialize` and
    the end of the initialisation (the temporary server loading time zones)."""
    for pod in database_pod_objects(kube, name, uid):
        statuses = pod["status"].get("containerStatuses") or []
        if not statuses or "running" not in (statuses[0].get("state") or {}):
            continue
        said = _log(kube, pod["metadata"]["name"], "mysql")
        if "starting a temporary server" in said and "initialisation done" not in said:
            return pod
    return None


def test_a_database_killed_during_its_first_start_is_initialised_again(kube: Kube) -> None:
    """MySQL's container SIGKILLed through containerd while its first start loads the
    time zones (after `mysqld --initialize`, before the accounts): the kubelet
    restarts it, the entrypoint says the first initialisation did not complete,
    initialises again, and the run reaches Succeeded with every operation done."""
    name = session_name("killed-init")
    spec = small_spec(
        targets=[{"name": "mysql", "engine": "mysql",
                  "settings": {"innodb_buffer_pool_size": "128M"}}],
        hardware=MYSQL_HARDWARE,
        phases=[{"name": "load", "type": "insert", "batchSize": 100, "reportEvery": 1000},
                {"name": "reads", "type": "pointReads", "operations": 2000}],
    )  # fmt: skip
    uid = apply_run(kube, name, spec)
    pod = wait_for(lambda: _initialising(kube, name, uid), 600, "MySQL's first initialisation",
                   every=0.5)  # fmt: skip
    pod_name = pod["metadata"]["name"]
    kill_container(pod)

    def initialised_again() -> str | None:
        said = _log(kube, pod_name, "mysql")
        return said if "the first initialisation did not complete" in said and (
            "initialisation done" in said) else None  # fmt: skip

    current = wait_for(initialised_again, 600, "the restarted container's initialisation")
    assert "removing what it created and initialising again" in current
    previous = _log(kube, pod_name, "mysql", "--previous")
    assert "starting a temporary server" in previous, previous
    assert "initialisation done" not in previous, previous
    status = wait_phase(kube, name, ("Succeeded", "Failed"), 900)
    assert status["phase"] == "Succeeded", status
    (target,) = status["targets"]
    phases = {p["name"]: p for p in target["phases"]}
    assert (phases["load"]["records"], phases["load"]["errors"]) == (5000, 0), phases
    assert (phases["reads"]["operations"], phases["reads"]["errors"]) == (2000, 0), phases
    delete_run(kube, name)


def _credentials_secret(kube: Kube, name: str, uid: str) -> str:
    listed = kube.get("secrets", "-n", RUNS_NS, f"-ldbbench.io/run={name}") or {"items": []}
    (secret,) = [s for s in listed["items"]
                 if any(r.get("uid") == uid for r in s["metadata"].get("ownerReferences") or [])
                 and "root-password" in (s.get("data") or {})]  # fmt: skip
    return str(secret["metadata"]["name"])


def _running_pod(kube: Kube, name: str, uid: str) -> dict[str, Any] | None:
    for pod in database_pod_objects(kube, name, uid):
        statuses = pod["status"].get("containerStatuses") or []
        if statuses and "running" in (statuses[0].get("state") or {}):
            return pod
    return None


def test_a_target_whose_credentials_cannot_log_in_fails_after_the_grace(kube: Kube) -> None:
    """The server initialised its users from the run's Secret; the Secret changes
    under it (as when a data volume outlives the credentials it was made with): the
    operator's login is refused, explained at once, and the run fails after its
    startupGrace naming the target and the error."""
    name = session_name("refused")
    uid = apply_run(kube, name, small_spec(startupGrace=f"{GRACE_S}s"))
    # Before the server is Ready (its first start takes seconds): the operator has
    # not logged in yet.
    pod = wait_for(lambda: _running_pod(kube, name, uid), 600, "the database container to run",
                   every=0.5)  # fmt: skip
    pod_name = pod["metadata"]["name"]
    secret = _credentials_secret(kube, name, uid)
    changed = "not-what-the-server-has"
    kube.kubectl("patch", "secret", secret, "-n", RUNS_NS, "--type=merge",
                 "-p", json.dumps({"stringData": {"root-password": changed}}))  # fmt: skip

    def refused() -> dict[str, Any] | None:
        conditions = run_status(kube, name).get("conditions") or []
        wanted = [c for c in conditions if (c["type"], c["reason"]) == ("Progressing", DENIED)]
        return wanted[0] if wanted else None

    seen = wait_for(refused, 300, "Progressing=AccessDenied")
    first_seen = time.monotonic()
    assert "refused the operator's user name and password (MariaDB error 1045)" in seen["message"]
    assert "credentials Secret does not match the data volume's users" in seen["message"]
    assert f"kubectl logs -n {RUNS_NS} {pod_name} -c mariadb" in seen["message"]
    assert f"spec.startupGrace {GRACE_S}s" in seen["message"]
    status = wait_phase(kube, name, ("Failed", "Succeeded"), GRACE_S + FAIL_SLACK_S + 60)
    waited = time.monotonic() - first_seen
    failed = condition(status, "Failed")
    assert (status["phase"], failed["reason"]) == ("Failed", "AccessDenied"), status
    assert (f"target maria: the database was not usable within spec.startupGrace ({GRACE_S}s) "
            "after its pods were ready; last error: AccessDenied") in failed["message"]  # fmt: skip
    assert waited < GRACE_S + FAIL_SLACK_S, f"failed {waited:.0f}s after the refusal showed"
    assert changed not in json.dumps(kube.get("benchmarkrun", name, "-n", RUNS_NS))
    assert run_uid(kube, name) == uid
    delete_run(kube, name)
