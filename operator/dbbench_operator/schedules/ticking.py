"""One tick of a BenchmarkSchedule: parse, admit, read its series' runs, plan
(`planning`, pure), act (delete, create), and patch the status when it changed.

Idempotent, so a tick that fails half way is simply done again: a run's name
is fixed by its scheduled time (a second create is a 409, taken as done), and a
deleted run that is already gone is not an error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from dbbench_contract.api import API_VERSION, KIND
from dbbench_contract.api.base import Problem, SpecError
from dbbench_contract.api.schedule import (
    SERIES_LABEL,
    BenchmarkScheduleSpec,
    BenchmarkScheduleStatus,
    operator_problems,
    parse_schedule_spec,
)
from dbbench_contract.api.schedule_crd import KIND as SCHEDULE_KIND
from dbbench_contract.api.status import Condition
from dbbench_operator.k8s import api
from dbbench_operator.schedules.planning import (
    Plan,
    RunView,
    ScheduleRef,
    plan,
    run_manifest,
    run_name,
)
from dbbench_operator.settings import OperatorSettings

Post = Callable[[str, str, str], None]  # (Normal|Warning, reason, message)
ACCEPTED = "Accepted"
_MESSAGE_LIMIT = 4096
# Due times Forbid kept from starting, already told in an Event (per schedule uid):
# a tick every few seconds must not post one Event per tick.
_told_skipped: dict[str, datetime] = {}
_told_lock = threading.Lock()


def _reason(problems: list[Problem]) -> str:
    fields = [p.field for p in problems]
    if any(f.startswith("spec.template") for f in fields):
        return "TemplateInvalid"
    if any(f.startswith("spec.timeZone") for f in fields):
        return "TimeZoneInvalid"
    return "ScheduleInvalid"


def admit(
    raw: Mapping[str, Any], results_claim: str
) -> tuple[BenchmarkScheduleSpec | None, list[Problem]]:
    """The typed spec, or the problems that keep the schedule from making runs: what
    the API server checks (an old CRD, a spec written around it), the cron expression
    and zone as croniter and the time zone database read them, and the template as
    the operator checks a run."""
    try:
        spec = parse_schedule_spec(raw)
    except SpecError as exc:
        return None, list(exc.problems)
    problems = operator_problems(spec, results_claim)
    return (None, problems) if problems else (spec, [])


def _accepted(old: BenchmarkScheduleStatus, problems: list[Problem], now: datetime,
              generation: int) -> Condition:  # fmt: skip
    status = "False" if problems else "True"
    reason = _reason(problems) if problems else "Valid"
    message = (
        "; ".join(str(p) for p in problems)[:_MESSAGE_LIMIT] or "schedule and template admitted"
    )
    before = next((c for c in old.conditions if c.type == ACCEPTED), None)
    # Seconds, as Kubernetes writes condition times.
    since = (
        before.last_transition_time
        if before and before.status == status
        else now.replace(microsecond=0)
    )
    return Condition(type=ACCEPTED, status=status, reason=reason, message=message,
                     last_transition_time=since, observed_generation=generation)  # fmt: skip


def _dump(status: BenchmarkScheduleStatus) -> dict[str, Any]:
    return status.model_dump(by_alias=True, exclude_none=True, mode="json")


def _patch(ref: ScheduleRef, old: dict[str, Any], new: BenchmarkScheduleStatus) -> None:
    wanted = _dump(new)
    if wanted == old:
        return
    # Keys the new status leaves out are removed (merge patch: null deletes).
    patch: dict[str, Any] = {key: None for key in old if key not in wanted}
    patch.update(wanted)
    api.patch_status(API_VERSION, SCHEDULE_KIND, ref.namespace, ref.name, patch)


def _act(ref: ScheduleRef, spec: BenchmarkScheduleSpec, p: Plan, post: Post) -> None:
    for name in p.delete:
        api.delete(API_VERSION, KIND, ref.namespace, name)
        if name in p.replaced:
            post("Normal", "RunReplaced", f"deleted active run {name} (concurrencyPolicy: Replace)")
    if p.start is not None:
        manifest = run_manifest(spec, ref, p.start)
        if api.create_if_absent(manifest):
            when = p.start.strftime("%Y-%m-%dT%H:%M:%SZ")
            post("Normal", "RunStarted", f"created BenchmarkRun {manifest['metadata']['name']} "
                                         f"for {when}")  # fmt: skip
    with _told_lock:
        told = p.skipped is not None and _told_skipped.get(ref.uid) == p.skipped
        if p.skipped is None:
            _told_skipped.pop(ref.uid, None)
        else:
            _told_skipped[ref.uid] = p.skipped
    if p.skipped is not None and not told:
        post("Normal", "RunAlreadyActive",
             f"not starting the run of {p.skipped:%Y-%m-%dT%H:%M:%SZ}: {', '.join(p.active)} "
             "is still active (concurrencyPolicy: Forbid); it starts when that run ends, "
             "within startingDeadlineSeconds, unless a later time comes first")  # fmt: skip


def tick(body: Mapping[str, Any], now: datetime, settings: OperatorSettings, post: Post) -> None:
    """Everything a schedule needs now (kopf's timer calls this every few seconds)."""
    meta, raw_status = body.get("metadata") or {}, dict(body.get("status") or {})
    ref = ScheduleRef(
        name=str(meta["name"]), namespace=str(meta["namespace"]), uid=str(meta.get("uid") or ""),
        created=datetime.fromisoformat(str(meta["creationTimestamp"]).replace("Z", "+00:00")),
    )  # fmt: skip
    generation = int(meta.get("generation") or 1)
    old = BenchmarkScheduleStatus.model_validate(raw_status)
    spec, problems = admit(body.get("spec") or {}, settings.results_claim)
    condition = _accepted(old, problems, now, generation)
    before = next((c for c in old.conditions if c.type == ACCEPTED), None)
    if problems and (before is None or before.message != condition.message):
        post("Warning", condition.reason or "ScheduleInvalid", condition.message or "")
    others = [c for c in old.conditions if c.type != ACCEPTED]
    if spec is None:
        refused = old.model_copy(update={"conditions": [*others, condition], "next_schedule_time":
                                         None, "observed_generation": generation})  # fmt: skip
        _patch(ref, raw_status, refused)
        return
    found = api.list_objects(API_VERSION, KIND, ref.namespace, {SERIES_LABEL: ref.name})
    runs = [RunView.from_object(obj, ref.uid) for obj in found]
    p = plan(spec, ref, old.last_schedule_time, runs, now)
    _act(ref, spec, p, post)
    status = old.model_copy(update={
        "observed_generation": generation, "conditions": [*others, condition],
        "active": list(p.active), "next_schedule_time": p.next_time, "latest_verdict": p.verdict,
        "last_schedule_time": p.recorded or old.last_schedule_time,
        "last_run": run_name(ref.name, p.recorded) if p.recorded else old.last_run,
    })  # fmt: skip
    _patch(ref, raw_status, status)
