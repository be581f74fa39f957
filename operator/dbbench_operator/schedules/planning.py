"""What a schedule does on a tick (pure: the schedule, its runs and the clock in,
a plan out): which run to start, which runs to delete (Replace, history limits),
and the status to show.

CronJob's rules: a due time (`timing.due_time`) starts a run unless the schedule
is suspended or, with Forbid, a run of it is still active; then the time stays
unstarted (lastScheduleTime does not move), so it starts when the active run
ends if that is within startingDeadlineSeconds and no later time came.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from dbbench_contract.api.schedule import (
    SCHEDULE_LABEL,
    SERIES_LABEL,
    BenchmarkScheduleSpec,
    Verdict,
)
from dbbench_operator.schedules import timing

FINAL_PHASES = frozenset({"Succeeded", "Failed"})
CHANGE_POINT = "ChangePoint"
SCHEDULE_KIND = "BenchmarkSchedule"


@dataclass(frozen=True)
class ScheduleRef:
    """The identity of one BenchmarkSchedule, read once from its metadata."""

    name: str
    namespace: str
    uid: str
    created: datetime


@dataclass(frozen=True)
class RunView:
    """What a tick needs of one run of the series."""

    name: str
    created: datetime
    phase: str
    owned: bool  # made by this schedule (its owner reference), not only in its series
    ended: datetime | None = None
    verdict: tuple[str, str | None] | None = None  # ChangePoint reason, message

    @property
    def active(self) -> bool:
        return self.phase not in FINAL_PHASES

    @classmethod
    def from_object(cls, obj: Mapping[str, Any], schedule_uid: str) -> RunView:
        meta, status = obj.get("metadata") or {}, obj.get("status") or {}
        owners = meta.get("ownerReferences") or []
        change = next((c for c in status.get("conditions") or []
                       if c.get("type") == CHANGE_POINT and c.get("reason")), None)  # fmt: skip
        ended = status.get("completedAt")
        return cls(
            name=str(meta.get("name") or ""),
            created=_time(meta.get("creationTimestamp")) or datetime.min.replace(tzinfo=UTC),
            phase=str(status.get("phase") or "Pending"),
            owned=any(o.get("uid") == schedule_uid for o in owners),
            ended=_time(ended),
            verdict=None if change is None else (str(change["reason"]), change.get("message")),
        )


def _time(value: Any) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


@dataclass(frozen=True)
class Plan:
    """One tick's actions and the status it leaves."""

    start: datetime | None = None  # the scheduled time of the run to create
    recorded: datetime | None = None  # the new lastScheduleTime (a started time)
    delete: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()  # active runs deleted by Replace (also in `delete`)
    skipped: datetime | None = None  # a due time Forbid kept from starting
    active: tuple[str, ...] = ()
    next_time: datetime | None = None
    verdict: Verdict | None = None


def run_name(schedule: str, scheduled: datetime) -> str:
    """`<schedule>-<unix minutes>`, as CronJob names its Jobs: one name per time, so a
    retried tick cannot start the same time twice."""
    return f"{schedule}-{int(scheduled.timestamp()) // 60}"


def expired(runs: Sequence[RunView], succeeded: int, failed: int) -> tuple[str, ...]:
    """The schedule's finished runs beyond its history limits, oldest first."""
    doomed: list[str] = []
    for phase, keep in (("Succeeded", succeeded), ("Failed", failed)):
        done = sorted((r for r in runs if r.owned and r.phase == phase),
                      key=lambda r: (r.created, r.name))  # fmt: skip
        doomed += [r.name for r in done[: max(0, len(done) - keep)]]
    return tuple(doomed)


def latest_verdict(runs: Sequence[RunView]) -> Verdict | None:
    """The ChangePoint condition of the series' latest finished run that has one."""
    judged = [r for r in runs if not r.active and r.verdict is not None]
    if not judged:
        return None
    latest = max(judged, key=lambda r: (r.ended or r.created, r.created, r.name))
    assert latest.verdict is not None
    reason, message = latest.verdict
    return Verdict(run=latest.name, reason=reason, message=message)


def plan(
    spec: BenchmarkScheduleSpec,
    schedule: ScheduleRef,
    last_scheduled: datetime | None,
    runs: Sequence[RunView],
    now: datetime,
) -> Plan:
    """What to do now. `runs`: the series' runs (those the schedule owns and any
    others labelled with its series); `last_scheduled`: status.lastScheduleTime."""
    owned = [r for r in runs if r.owned]
    active = tuple(r.name for r in sorted(owned, key=lambda r: r.created) if r.active)
    since = last_scheduled or schedule.created
    due = None if spec.suspend else timing.due_time(
        spec.schedule, spec.time_zone, since, now, spec.starting_deadline_seconds
    )  # fmt: skip
    after = max(now, due) if due is not None else now
    upcoming = None if spec.suspend else timing.next_time(spec.schedule, spec.time_zone, after)
    base = Plan(active=active, next_time=upcoming, verdict=latest_verdict(runs))
    history = expired(owned, spec.successful_runs_history_limit, spec.failed_runs_history_limit)
    if due is None:
        return replace(base, delete=history)
    name = run_name(schedule.name, due)
    if any(r.name == name for r in owned):  # started by an earlier tick whose status was lost
        return replace(base, recorded=due, delete=history)
    if active and spec.concurrency_policy == "Forbid":
        return replace(base, skipped=due, delete=history)
    replaced = active if spec.concurrency_policy == "Replace" else ()
    still = tuple(a for a in active if a not in replaced)
    return replace(base, start=due, recorded=due, replaced=replaced,
                   delete=(*replaced, *history), active=(*still, name))  # fmt: skip


def run_manifest(
    spec: BenchmarkScheduleSpec, schedule: ScheduleRef, scheduled: datetime
) -> dict[str, Any]:
    """The run a scheduled time makes: the template's spec, owned by the schedule
    (deleting the schedule deletes its runs), labelled with its series."""
    labels = {
        **spec.template.labels,
        SERIES_LABEL: schedule.name,
        SCHEDULE_LABEL: schedule.name,
    }
    return {
        "apiVersion": "dbbench.io/v1alpha1",
        "kind": "BenchmarkRun",
        "metadata": {
            "name": run_name(schedule.name, scheduled),
            "namespace": schedule.namespace,
            "labels": labels,
            "annotations": {"dbbench.io/scheduled-at": scheduled.strftime("%Y-%m-%dT%H:%M:%SZ")},
            "ownerReferences": [
                {
                    "apiVersion": "dbbench.io/v1alpha1",
                    "kind": SCHEDULE_KIND,
                    "name": schedule.name,
                    "uid": schedule.uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec.template.spec.model_dump(by_alias=True, exclude_none=True, mode="json"),
    }
