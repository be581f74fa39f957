"""What a schedule's tick decides: CronJob's concurrency policies, suspend, history
limits, the run it makes and the verdict it shows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from dbbench_contract.api import parse_spec
from dbbench_contract.api.schedule import parse_schedule_spec
from dbbench_operator.schedules.planning import (
    RunView,
    ScheduleRef,
    expired,
    latest_verdict,
    plan,
    run_manifest,
    run_name,
)

T0 = datetime(2026, 11, 28, 2, 0, tzinfo=UTC)
REF = ScheduleRef(name="nightly", namespace="team-a", uid="uid-s", created=T0 - timedelta(days=1))
TEMPLATE = {
    "metadata": {"labels": {"team": "storage"}},
    "spec": {
        "targets": [{"name": "db", "engine": "mariadb"}],
        "phases": [{"name": "r", "type": "pointReads", "duration": "1m"}],
    },
}


def spec(**fields: Any) -> Any:
    return parse_schedule_spec({"schedule": "0 2 * * *", "template": TEMPLATE, **fields})


def run(name: str, phase: str, minutes_ago: int, *, owned: bool = True, **kw: Any) -> RunView:
    return RunView(name=name, created=T0 - timedelta(minutes=minutes_ago), phase=phase,
                   owned=owned, **kw)  # fmt: skip


NOW = T0 + timedelta(seconds=5)
LAST = T0 - timedelta(days=1)  # yesterday's 02:00 was started


def test_a_due_time_starts_a_run_named_after_it() -> None:
    p = plan(spec(), REF, LAST, [], NOW)
    assert p.start == T0
    assert p.recorded == T0
    assert p.active == (run_name("nightly", T0),)
    assert run_name("nightly", T0) == f"nightly-{int(T0.timestamp()) // 60}"
    assert p.next_time == T0 + timedelta(days=1)
    assert p.delete == ()


def test_forbid_skips_while_a_run_is_active_and_keeps_the_time_due() -> None:
    busy = [run("nightly-old", "Running", 60 * 24)]
    p = plan(spec(), REF, LAST, busy, NOW)
    assert (p.start, p.skipped, p.recorded) == (None, T0, None)
    assert p.active == ("nightly-old",)
    # The active run ends an hour later: the skipped time starts then (no deadline set) ...
    ended = [run("nightly-old", "Succeeded", 60 * 24)]
    assert plan(spec(), REF, LAST, ended, NOW + timedelta(hours=1)).start == T0
    # ... but not past startingDeadlineSeconds.
    late = plan(spec(startingDeadlineSeconds=600), REF, LAST, ended, NOW + timedelta(hours=1))
    assert late.start is None


def test_allow_starts_beside_the_active_run() -> None:
    busy = [run("nightly-old", "Running", 60 * 24)]
    p = plan(spec(concurrencyPolicy="Allow"), REF, LAST, busy, NOW)
    assert p.start == T0
    assert p.delete == ()
    assert p.active == ("nightly-old", run_name("nightly", T0))


def test_replace_deletes_the_active_run_and_starts_the_new_one() -> None:
    busy = [run("nightly-old", "Provisioning", 60 * 24)]
    p = plan(spec(concurrencyPolicy="Replace"), REF, LAST, busy, NOW)
    assert p.start == T0
    assert p.replaced == ("nightly-old",)
    assert "nightly-old" in p.delete
    assert p.active == (run_name("nightly", T0),)


def test_suspend_starts_nothing_and_shows_no_next_time() -> None:
    p = plan(spec(suspend=True), REF, LAST, [], NOW)
    assert (p.start, p.next_time) == (None, None)


def test_a_time_whose_run_exists_is_recorded_not_started_again() -> None:
    made = [run(run_name("nightly", T0), "Pending", 0)]
    p = plan(spec(), REF, LAST, made, NOW)
    assert (p.start, p.recorded) == (None, T0)


def test_history_limits_delete_the_oldest_finished_runs_beyond_them() -> None:
    runs = [
        run("s1", "Succeeded", 50), run("s2", "Succeeded", 40), run("s3", "Succeeded", 30),
        run("s4", "Succeeded", 20), run("f1", "Failed", 45), run("f2", "Failed", 25),
        run("a1", "Running", 10), run("other", "Succeeded", 60, owned=False),
    ]  # fmt: skip
    assert expired(runs, succeeded=3, failed=1) == ("s1", "f1")
    assert expired(runs, succeeded=0, failed=0) == ("s1", "s2", "s3", "s4", "f1", "f2")
    assert expired(runs, succeeded=10, failed=10) == ()
    # Applied on every tick, not only when a run starts.
    p = plan(spec(successfulRunsHistoryLimit=1, failedRunsHistoryLimit=1), REF, T0, runs, NOW)
    assert p.start is None
    assert p.delete == ("s1", "s2", "s3", "f1")


def test_latest_verdict_is_the_latest_finished_judged_run_of_the_series() -> None:
    runs = [
        run("r1", "Succeeded", 30, ended=T0 - timedelta(minutes=20),
            verdict=("NoChange", "no change in 12 metrics")),
        run("r2", "Succeeded", 20, owned=False, ended=T0 - timedelta(minutes=10),
            verdict=("Regression", "ops/s of oltp on db: 1200 -> 900")),
        run("r3", "Succeeded", 10, ended=T0 - timedelta(minutes=5)),  # not judged yet
        run("r4", "Running", 5, verdict=("Improvement", "x")),  # not finished
    ]  # fmt: skip
    verdict = latest_verdict(runs)
    assert verdict is not None
    assert (verdict.run, verdict.reason, verdict.message) == (
        "r2", "Regression", "ops/s of oltp on db: 1200 -> 900")  # fmt: skip
    assert latest_verdict(runs[2:]) is None


def test_a_run_is_read_from_its_object() -> None:
    obj = {
        "metadata": {"name": "nightly-1", "creationTimestamp": "2026-11-28T02:00:04Z",
                     "ownerReferences": [{"uid": "uid-s", "kind": "BenchmarkSchedule"}]},
        "status": {"phase": "Succeeded", "completedAt": "2026-11-28T02:10:00Z",
                   "conditions": [{"type": "ChangePoint", "status": "False",
                                   "reason": "NotJudged", "message": "too few runs"}]},
    }  # fmt: skip
    view = RunView.from_object(obj, "uid-s")
    assert (view.owned, view.active, view.verdict) == (True, False, ("NotJudged", "too few runs"))
    assert not RunView.from_object({"metadata": {"name": "x"}}, "uid-s").owned
    assert RunView.from_object({"metadata": {"name": "x"}}, "uid-s").phase == "Pending"


def test_the_run_is_owned_by_the_schedule_and_labelled_with_its_series() -> None:
    manifest = run_manifest(spec(), REF, T0)
    meta = manifest["metadata"]
    assert meta["name"] == run_name("nightly", T0)
    assert meta["namespace"] == "team-a"
    assert meta["labels"] == {
        "team": "storage",
        "dbbench.io/series": "nightly",
        "dbbench.io/schedule": "nightly",
    }
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == (
        "BenchmarkSchedule",
        "uid-s",
        True,
    )
    # The template's spec as the API server stored it (defaults in), nothing else.
    assert parse_spec(manifest["spec"]) == spec().template.spec
