"""A schedule's series on the real node (issue 31, "Done when"): a
BenchmarkSchedule firing every minute makes its runs, keeps only as many
succeeded ones as its history limit says (the series' index keeps them all),
and a setting changed in its template is found as a change point at the
first run made from the changed template, with none before it.

The changed setting is the reads' paced rate (`targetRate` 100 -> 50 ops/s):
a paced figure is the one whose level is known in advance, so the test can
say where the change must be and that no other paced figure moved. A step in
an unpaced figure is found too (tests/unit/results/test_history_changes.py),
but with four runs and the node's own noise it cannot be said in advance
whether one run after it is enough.

Concurrent (it runs beside the other tests, its runs sharing the node): the
four runs wait for minute boundaries and use little of the cores, so alone
they held the node idle for most of five minutes. Beside other runs the
latencies move from run to run with the node's load, so a change point in a
latency of the unchanged runs would be the node's, not the schedule's: only
the paced figures (each phase's ops/s) are required to change at the changed
run and nowhere else. Low rates, so that a runner sharing the cores keeps
its pace (at 300 ops/s one fell 1.5% behind in the concurrent phase). The
load's four paced seconds are short enough that a runner ending a fifth of a
second late is more than the 5% worth reporting: a change point in the load
is accepted where, and only where, the load's own figures fell behind.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from dbbench_local.install import NAMESPACE, Kube, wait_for
from tests.e2e.conftest import RUNS_NS, admitted_spec, session_name, small_spec

pytestmark = pytest.mark.e2e

SERIES_LABEL = "dbbench.io/series"
LOAD_PACE = 50  # batches of 10 per second: 2,000 records in four seconds
LOAD = {"name": "load", "type": "insert", "batchSize": 10, "targetRate": LOAD_PACE}
READS = {"name": "reads", "type": "pointReads", "duration": "10s", "targetRate": 100}
RUNS = 4  # the chart's results.history.minRuns: the fourth run is the first judged
KEPT = 2  # successfulRunsHistoryLimit
MIN_CHANGE = 0.05  # the chart's results.history.minChange: smaller changes are not reported


def _template(kube: Kube, name: str, reads_rate: int) -> dict[str, Any]:
    spec = small_spec(
        dataset={"shape": "flat45", "records": 2000, "recordSize": 256},
        phases=[LOAD, {**READS, "targetRate": reads_rate}],
        startupGrace="5m", timeout="10m",
    )  # fmt: skip
    return {"spec": admitted_spec(kube, name, spec)}


def _schedule(kube: Kube, name: str) -> str:
    return json.dumps({
        "apiVersion": "dbbench.io/v1alpha1", "kind": "BenchmarkSchedule",
        "metadata": {"name": name, "namespace": RUNS_NS},
        "spec": {"schedule": "* * * * *", "concurrencyPolicy": "Forbid",
                 "startingDeadlineSeconds": 120, "successfulRunsHistoryLimit": KEPT,
                 "failedRunsHistoryLimit": 1, "template": _template(kube, name, 100)},
    })  # fmt: skip


def _runs(kube: Kube, series: str) -> dict[str, dict[str, Any]]:
    found = kube.get("benchmarkruns", "-n", RUNS_NS, "-l", f"{SERIES_LABEL}={series}")
    return {r["metadata"]["name"]: r for r in (found or {"items": []})["items"]}


def _series(kube: Kube, series: str, run: str | None = None) -> dict[str, Any]:
    """The results browser's answer for the series, through the API server's service
    proxy (as `dbbench history` reads it)."""
    query = f"?run={run}" if run else ""
    proxy = f"/api/v1/namespaces/{NAMESPACE}/services/dbbench-browser:http/proxy"
    raw = kube.kubectl("get", "--raw", f"{proxy}/api/series/{RUNS_NS}/{series}{query}")
    answer: dict[str, Any] = json.loads(raw.stdout)
    return answer


def _assert_load_changes_only_where_the_node_moved_it(
    history: dict[str, Any], order: list[str], load: list[dict[str, Any]]
) -> None:
    """The load's pace (50 batches/s: 200 batches, four seconds) is the same in
    every run, so it raises no change point while the runner keeps it. Beside the
    concurrent phase's other runs a runner can end a fifth of a second late, which
    is more than MIN_CHANGE of so short a phase (once in CI, at the fourth run):
    then the detector is right to report it, and the test checks that the report
    is at a run that fell behind and says it got slower (or at a later run, back
    at its pace, and says it got faster)."""
    rates = {p["run"]: p["opsPerSecond"] for p in history["points"]
             if p["phase"] == "load" and p["operationType"] == "all"}  # fmt: skip
    assert sorted(rates) == sorted(order), rates
    behind = {r for r in order if rates[r] < LOAD_PACE * (1 - MIN_CHANGE)}
    assert all(rates[r] <= LOAD_PACE * (1 + MIN_CHANGE) for r in order), rates  # never ahead
    if not behind:  # every run kept its pace: the load raised nothing
        assert not load, (rates, load)
    for change in load:
        # Slower at a run that fell behind, or faster again at a run after one.
        slower = change["run"] in behind
        assert slower or order.index(change["run"]) > min(map(order.index, behind)), (rates, change)
        assert change["direction"] == ("Regression" if slower else "Improvement"), (rates, change)


def _by_minute(names: set[str]) -> list[str]:
    """Run names `<schedule>-<unix minutes>` in the order of their times."""
    return sorted(names, key=lambda n: int(n.rsplit("-", 1)[1]))


@pytest.mark.timeout(1800)
def test_a_schedules_series_finds_the_changed_setting_at_its_run_and_keeps_its_limits(
    kube: Kube,
) -> None:
    name = session_name("series")
    kube.kubectl("create", "-f", "-", stdin=_schedule(kube, name))
    seen: set[str] = set()  # every run the schedule made (history limits delete some)
    ended: dict[str, dict[str, Any]] = {}  # each run's status once it ended

    def seen_at_least(runs: int, ended_too: bool = False) -> bool:
        """Notes the schedule's runs as they are now; at least `runs` made (or ended)?"""
        for run, body in _runs(kube, name).items():
            seen.add(run)
            status = body.get("status") or {}
            if status.get("phase") in ("Succeeded", "Failed") and status.get("cleanedUp"):
                ended.setdefault(run, status)
        return len(ended if ended_too else seen) >= runs

    try:
        # The template changes once its third run exists: runs 1-3 read at 100 ops/s,
        # run 4 (and any later) at 50. On a loaded node a run can outlast its
        # minute; Forbid then starts the next one when it ends.
        wait_for(lambda: seen_at_least(RUNS - 1), 9 * 60, "three runs")
        changed = _template(kube, name, 50)
        kube.kubectl("patch", "benchmarkschedule", name, "-n", RUNS_NS, "--type=merge",
                     "-p", json.dumps({"spec": {"template": changed}}))  # fmt: skip
        before_change = set(seen)
        # Suspended once the fourth run exists: no fifth (a time Forbid held back
        # would start as soon as the fourth ended).
        wait_for(lambda: seen_at_least(RUNS), 5 * 60, f"{RUNS} runs")
        kube.kubectl("patch", "benchmarkschedule", name, "-n", RUNS_NS, "--type=merge",
                     "-p", json.dumps({"spec": {"suspend": True}}))  # fmt: skip
        wait_for(lambda: seen_at_least(len(seen), ended_too=True), 8 * 60, "its runs ended")
        order = _by_minute(set(ended))
        assert len(order) == RUNS, order
        first_changed = order[RUNS - 1]
        assert set(order[: RUNS - 1]) == before_change, (order, before_change)
        for run in order:
            assert ended[run]["phase"] == "Succeeded", (run, ended[run].get("message"))
        # The changed run's verdict: a Regression in the reads' ops/s, 100 -> 50.
        verdict = next(c for c in ended[first_changed]["conditions"]
                       if c["type"] == "ChangePoint")  # fmt: skip
        assert (verdict["status"], verdict["reason"]) == ("True", "Regression"), verdict
        history = _series(kube, name)
        assert [p["run"] for p in history["points"] if p["phase"] == "reads"
                and p["operationType"] == "all"] == order  # fmt: skip
        changes = history["changePoints"]
        # Every change point of the reads' paced figures is at the changed run: the
        # unchanged runs raised none. The load's pace did not change (the helper).
        paced = [c for c in changes if c["metric"] in ("opsPerSecond", "recordsPerSecond")]
        assert {c["run"] for c in paced if c["phase"] == "reads"} == {first_changed}, changes
        assert {c["phase"] for c in paced} <= {"reads", "load"}, changes
        _assert_load_changes_only_where_the_node_moved_it(
            history, order, [c for c in paced if c["phase"] == "load"]
        )
        reads = [c for c in paced if (c["phase"], c["metric"], c["operationType"])
                 == ("reads", "opsPerSecond", "all")]  # fmt: skip
        assert len(reads) == 1, changes
        assert reads[0]["direction"] == "Regression"
        assert reads[0]["before"] == pytest.approx(100, rel=0.03)
        assert reads[0]["after"] == pytest.approx(50, rel=0.03)
        # The runs before it: too few to judge (the chart's minRuns is 4), and no mark.
        for run in order[: RUNS - 1]:
            early = _series(kube, name, run)["verdict"]
            assert early["reason"] == "NotJudged", (run, early)
        # History limits: only the newest KEPT succeeded runs are left as objects;
        # their results, and the index's points of all four, stay.
        wait_for(lambda: len(_runs(kube, name)) <= KEPT, 60, f"{KEPT} runs kept")
        left = _by_minute(set(_runs(kube, name)))
        assert left == order[-KEPT:], left
        assert history["runs"] == RUNS
        status = (kube.get("benchmarkschedule", name, "-n", RUNS_NS) or {}).get("status") or {}
        assert status["latestVerdict"] == {"run": first_changed, "reason": "Regression",
                                           "message": verdict["message"]}, status  # fmt: skip
        assert status["lastScheduleTime"]
    finally:
        started = time.monotonic()
        kube.kubectl("delete", "benchmarkschedule", name, "-n", RUNS_NS, "--ignore-not-found",
                     "--wait=true", timeout=300)  # fmt: skip
        # Its runs are owned by it: the garbage collector takes them.
        wait_for(lambda: not _runs(kube, name), 300 - (time.monotonic() - started),
                 "the schedule's runs deleted with it")  # fmt: skip
