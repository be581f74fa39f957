"""BenchmarkSchedules driven by the operator, in-process as the chart's ServiceAccount,
against the real control plane: one-minute schedules observed over two scheduled
times (about two minutes; the one slow schedule test).

No kubelet runs here: a run made from the quickstart template stays active (its
database pod waits unscheduled), which is what Forbid and Replace are seen
against; a template with `startupGrace: 5s` makes runs that fail within seconds,
which is what the failed-runs history limit is seen against. The succeeded-runs
limit is seen on failed runs whose phase the test turns to Succeeded once the
operator is done with them (cleanedUp), as a finished run would be.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest
import yaml

from tests.fixtures.controlplane import REPO, ControlPlane
from tests.integration.operator.test_operator_lifecycle import (
    condition,
    get_json,
    operator,
    operator_env,
    results_service,
    wait_for,
)
from tests.support.manifests import install_schedule_crd

pytestmark = pytest.mark.integration
__all__ = ["operator_env", "results_service"]  # the module-scoped fixtures, shared

NS = "team-b"
EVERY_MINUTE = "* * * * *"
MINUTE = timedelta(minutes=1)


def template(**overrides: Any) -> dict[str, Any]:
    spec = yaml.safe_load((REPO / "examples" / "quickstart.yaml").read_text())["spec"]
    return {"metadata": {"labels": {"team": "storage"}}, "spec": {**spec, **overrides}}


SCHEDULES: dict[str, dict[str, Any]] = {
    "s-forbid": {"template": template()},
    "s-replace": {"concurrencyPolicy": "Replace", "template": template()},
    "s-suspended": {"suspend": True, "template": template()},
    "s-failed": {"failedRunsHistoryLimit": 1, "template": template(startupGrace="5s")},
    "s-succeeded": {"successfulRunsHistoryLimit": 1, "failedRunsHistoryLimit": 5,
                    "template": template(startupGrace="5s")},
    "s-zone": {"timeZone": "Mars/Olympus", "template": template()},
    "s-cron": {"schedule": "61 * * * *", "template": template()},
    "s-template": {"template": template(results={"claimName": "elsewhere"})},
}  # fmt: skip


def manifest(name: str, fields: dict[str, Any]) -> str:
    return json.dumps({
        "apiVersion": "dbbench.io/v1alpha1", "kind": "BenchmarkSchedule",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"schedule": EVERY_MINUTE, **fields},
    })  # fmt: skip


@pytest.fixture(scope="module")
def schedules_env(kube_cluster: ControlPlane, operator_env: list[str]) -> list[str]:
    install_schedule_crd(kube_cluster, "dbbench-schedules-operator-test")
    return operator_env


def runs_of(cluster: ControlPlane, schedule: str) -> list[dict[str, Any]]:
    found = get_json(cluster, "br", "-n", NS, f"-ldbbench.io/schedule={schedule}")
    items = (found or {"items": []})["items"]
    return sorted((r for r in items if not r["metadata"].get("deletionTimestamp")),
                  key=lambda r: r["metadata"]["name"])  # fmt: skip


# How long after one schedule's run another's for the same time may come (see its use).
OTHER_TICK_S = 40


def names(cluster: ControlPlane, schedule: str) -> list[str]:
    return [r["metadata"]["name"] for r in runs_of(cluster, schedule)]


def status_of(cluster: ControlPlane, schedule: str) -> dict[str, Any]:
    return dict((get_json(cluster, "bs", schedule, "-n", NS) or {}).get("status") or {})


def judged_status(cluster: ControlPlane, schedule: str) -> dict[str, Any] | None:
    """The schedule's status once the operator has given it a condition."""
    status = status_of(cluster, schedule)
    return status if status.get("conditions") else None


def minute_name(schedule: str, when: datetime) -> str:
    return f"{schedule}-{int(when.timestamp()) // 60}"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def set_status(cluster: ControlPlane, run: str, status: dict[str, Any]) -> None:
    cluster.kubectl("patch", "br", run, "-n", NS, "--subresource=status", "--type=merge",
                    "-p", json.dumps({"status": status}))  # fmt: skip


def finish_as_succeeded(cluster: ControlPlane, run: str) -> None:
    """A failed run, once the operator is done with it, turned Succeeded."""
    wait_for(lambda: (get_json(cluster, "br", run, "-n", NS) or {}).get("status", {})
             .get("cleanedUp"), 60, f"{run} cleaned up")  # fmt: skip
    set_status(cluster, run, {"phase": "Succeeded"})


def events_of(cluster: ControlPlane, schedule: str) -> list[dict[str, Any]]:
    found = get_json(cluster, "events", "-n", NS,
                     f"--field-selector=involvedObject.name={schedule}")  # fmt: skip
    return list((found or {"items": []})["items"])


def test_one_minute_schedules_make_runs_by_their_policies_and_limits(
    kube_cluster: ControlPlane, schedules_env: list[str]
) -> None:
    for name, fields in SCHEDULES.items():
        kube_cluster.kubectl("apply", "-f", "-", input=manifest(name, fields))
    with operator(schedules_env) as runner:
        try:
            observe_two_scheduled_times(kube_cluster)
        finally:
            remove_schedules(kube_cluster)
    assert runner.exception is None


def remove_schedules(cluster: ControlPlane) -> None:
    """Delete the schedules while the operator runs (kopf's finalizer is released, the
    runs go with their owner): nothing of this test is left for the next module."""
    cluster.kubectl("delete", "bs", "--all", "-n", NS, "--wait=false", check=False)
    wait_for(lambda: not (get_json(cluster, "bs", "-n", NS) or {"items": []})["items"], 60,
             "the schedules to go")  # fmt: skip
    # Terminating runs count: their deletion handler must have run too.
    wait_for(lambda: not (get_json(cluster, "br", "-n", NS, "-ldbbench.io/schedule")
                          or {"items": []})["items"], 90, "their runs to go")  # fmt: skip


def observe_two_scheduled_times(kube_cluster: ControlPlane) -> None:
    """What the test observes while the operator runs (see the module's docstring)."""
    # -- the first scheduled time: a run per schedule that may make one ----------
    first = wait_for(lambda: runs_of(kube_cluster, "s-forbid"), 75, "the first run")[0]
    t1 = utc(first["metadata"]["annotations"]["dbbench.io/scheduled-at"])
    assert t1.second == 0
    schedule = get_json(kube_cluster, "bs", "s-forbid", "-n", NS) or {}
    meta = first["metadata"]
    assert meta["name"] == minute_name("s-forbid", t1)
    assert meta["labels"] == {"team": "storage", "dbbench.io/series": "s-forbid",
                              "dbbench.io/schedule": "s-forbid"}  # fmt: skip
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "BenchmarkSchedule", "s-forbid", schedule["metadata"]["uid"], True)  # fmt: skip
    wait_for(lambda: status_of(kube_cluster, "s-forbid").get("lastRun"), 20, "lastRun")
    status = status_of(kube_cluster, "s-forbid")
    assert status["lastRun"] == meta["name"]
    assert utc(status["lastScheduleTime"]) == t1
    assert utc(status["nextScheduleTime"]) == t1 + MINUTE
    assert status["active"] == [meta["name"]]
    assert condition({"status": status}, "Accepted")["status"] == "True"
    # Each schedule has its own 10 s tick, so another schedule's run for the same
    # time can come a tick or more after s-forbid's: under a loaded run, more than
    # 20 s after it once.
    wait_for(lambda: names(kube_cluster, "s-replace") == [minute_name("s-replace", t1)],
             OTHER_TICK_S, "s-replace's first run")  # fmt: skip
    failed1 = minute_name("s-failed", t1)
    succeeded1 = minute_name("s-succeeded", t1)
    wait_for(lambda: succeeded1 in names(kube_cluster, "s-succeeded"), OTHER_TICK_S, succeeded1)
    finish_as_succeeded(kube_cluster, succeeded1)
    # -- refused schedules: a condition and an Event naming the field, no runs ----
    for name, reason, field in (("s-zone", "TimeZoneInvalid", "spec.timeZone"),
                                ("s-cron", "ScheduleInvalid", "spec.schedule"),
                                ("s-template", "TemplateInvalid",
                                 "spec.template.spec.results.claimName")):  # fmt: skip
        # The operator takes the schedules one by one: a first run made within a
        # second or two of its start can come before a refused schedule's first pass.
        status = wait_for(partial(judged_status, kube_cluster, name), 20, f"{name}'s condition")
        accepted = condition({"status": status}, "Accepted")
        assert (accepted["status"], accepted["reason"]) == ("False", reason), accepted
        assert field in accepted["message"]
        warned = [e for e in events_of(kube_cluster, name) if e["reason"] == reason]
        assert warned, events_of(kube_cluster, name)
        assert field in warned[0]["message"]
        assert "nextScheduleTime" not in status_of(kube_cluster, name)
    # -- the second scheduled time ----------------------------------------------
    t2 = t1 + MINUTE
    wait_for(lambda: names(kube_cluster, "s-replace") == [minute_name("s-replace", t2)], 75,
             "Replace to delete the active run and start the next")  # fmt: skip
    assert any(e["reason"] == "RunReplaced" for e in events_of(kube_cluster, "s-replace"))
    succeeded2 = minute_name("s-succeeded", t2)
    wait_for(lambda: succeeded2 in names(kube_cluster, "s-succeeded"), OTHER_TICK_S, succeeded2)
    finish_as_succeeded(kube_cluster, succeeded2)
    # successfulRunsHistoryLimit 1: the older succeeded run goes.
    wait_for(lambda: names(kube_cluster, "s-succeeded") == [succeeded2], 30,
             "the older succeeded run to be deleted")  # fmt: skip
    # failedRunsHistoryLimit 1: once the second run has failed, the first goes.
    failed2 = minute_name("s-failed", t2)
    wait_for(lambda: names(kube_cluster, "s-failed") == [failed2], 60,
             "the older failed run to be deleted")  # fmt: skip
    assert failed1 not in names(kube_cluster, "s-failed")
    # Forbid: the first run is still active, so the second time made no run.
    assert names(kube_cluster, "s-forbid") == [meta["name"]]
    told = [e["reason"] for e in events_of(kube_cluster, "s-forbid")]
    assert "RunAlreadyActive" in told, told
    forbid = status_of(kube_cluster, "s-forbid")
    assert utc(forbid["lastScheduleTime"]) == t1  # the skipped time was not started
    assert (utc(forbid["nextScheduleTime"]) - t1).total_seconds() >= 120
    # suspend: no run at either time, and no next time shown.
    assert names(kube_cluster, "s-suspended") == []
    assert "nextScheduleTime" not in status_of(kube_cluster, "s-suspended")
    for refused in ("s-zone", "s-cron", "s-template"):
        assert names(kube_cluster, refused) == []
    # -- the series' latest verdict: the ChangePoint condition of its latest run --
    change = {"type": "ChangePoint", "status": "True", "reason": "Regression",
              "message": "ops/s of oltp on mariadb: 1200 -> 900",
              "lastTransitionTime": "2026-11-28T02:00:00Z"}  # fmt: skip
    run = get_json(kube_cluster, "br", succeeded2, "-n", NS) or {}
    set_status(
        kube_cluster,
        succeeded2,
        {
            "completedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            # In place of the operator's own verdict (NotJudged: the run measured nothing).
            "conditions": [
                *(c for c in run["status"]["conditions"] if c["type"] != "ChangePoint"),
                change,
            ],
        },
    )
    # Earlier runs carry the operator's own NotJudged: the next tick moves to this one.
    expected = {"run": succeeded2, "reason": "Regression", "message": change["message"]}
    wait_for(lambda: status_of(kube_cluster, "s-succeeded").get("latestVerdict") == expected,
             30, f"the latest verdict {expected}")  # fmt: skip
    # Suspending the Forbid schedule: no next time.
    kube_cluster.kubectl("patch", "bs", "s-forbid", "-n", NS, "--type=merge",
                         "-p", json.dumps({"spec": {"suspend": True}}))  # fmt: skip
    wait_for(lambda: "nextScheduleTime" not in status_of(kube_cluster, "s-forbid"), 30,
             "a suspended schedule to show no next time")  # fmt: skip
    # Deleting a schedule deletes its runs (their owner) and is not held up by kopf's
    # finalizer.
    kube_cluster.kubectl("delete", "bs", "s-forbid", "-n", NS, "--wait=false")
    wait_for(lambda: get_json(kube_cluster, "bs", "s-forbid", "-n", NS) is None, 30,
             "the schedule to go")  # fmt: skip
    wait_for(lambda: not names(kube_cluster, "s-forbid"), 60, "its run to go with it")
