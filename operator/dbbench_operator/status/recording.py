"""What a pass writes into the status, and the events it posts (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from dbbench_contract.api.status import BenchmarkRunStatus, Progress, TargetResult
from dbbench_contract.summary import StepSummary
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.specs.plan import Step
from dbbench_operator.status.lifecycle import TERMINAL, Decision, merge_conditions
from dbbench_operator.status.observations import TargetSeen
from dbbench_operator.status.summaries import RunProgress

TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"


def stamp(moment: datetime) -> str:
    return moment.strftime(TIMESTAMP)


def parse_stamp(text: object) -> datetime | None:
    if not text:
        return None
    return datetime.strptime(str(text), TIMESTAMP).replace(tzinfo=UTC)


def read_status(raw: Mapping[str, Any] | BenchmarkRunStatus) -> BenchmarkRunStatus:
    """A run's status as the API server keeps it, in the API's model: read once
    per pass, never key by key. Keys this operator does not know (a newer
    one's) are ignored."""
    if isinstance(raw, BenchmarkRunStatus):
        return raw
    return BenchmarkRunStatus.model_validate(raw, extra="ignore")


def as_patch(model: BaseModel | None) -> dict[str, Any]:
    """A part of the status read back, as the patch this pass writes starts from."""
    return {} if model is None else model.model_dump(mode="json", exclude_none=True)


def target_entries(
    previous: Sequence[TargetResult], names: Sequence[str], seen: TargetSeen | None
) -> list[dict[str, Any]]:
    """One entry per spec target, in spec order: what was known, updated by `seen`."""
    by_name = {t.name: as_patch(t) for t in previous}
    out = []
    for name in names:
        entry = by_name.get(name, {"name": name})
        if seen is not None and seen.name == name:
            entry = {**entry, **seen.status()}
        out.append(entry)
    return out


def progress_block(
    previous: Progress | None,
    *,
    steps_total: int,
    steps_done: int,
    current: Step | None,
    stage: str | None,
    run_progress: RunProgress,
    ops_per_second: float | None,
    records_per_second: float | None,
    cold_mark: tuple[int, tuple[str, ...]] | None,
) -> dict[str, Any]:
    block: dict[str, Any] = {
        "steps": steps_total,
        "stepsDone": steps_done,
        "percent": run_progress.percent,
        # merge-patch semantics: None removes a key that no longer applies
        "eta": stamp(run_progress.eta) if run_progress.eta else None,
        "opsPerSecond": round(ops_per_second, 1) if ops_per_second is not None else None,
        # only while the step writes records (a reading step removes it)
        "recordsPerSecond": round(records_per_second, 1) if records_per_second else None,
        "stage": stage,
    }
    if current is not None:
        block.update(
            step=current.index + 1, target=current.target, phase=current.phase,
            repeat=current.repeat,
        )  # fmt: skip
    if cold_mark is not None:
        block.update(coldStep=cold_mark[0], coldPods=list(cold_mark[1]))
    return {**as_patch(previous), **block}


def cold_mark_of(progress: Progress | None) -> tuple[int, tuple[str, ...]] | None:
    if progress is None or not progress.cold_step:
        return None
    return progress.cold_step, tuple(progress.cold_pods or ())


def runner_image(status: BenchmarkRunStatus, settings: OperatorSettings) -> str:
    """The runner image of this run: fixed in the status when it left Pending, so an
    operator upgraded mid-run does not mix runner versions in one run (a run started
    by an operator that did not record it takes the current one from then on)."""
    return status.runner_image or settings.runner_image


def status_patch(
    run: RunRef,
    *,
    status: BenchmarkRunStatus,
    decision: Decision,
    now: datetime,
    results_path: str,
    started: bool,
    runner_image: str = "",
) -> dict[str, Any]:
    """Phase, conditions, timestamps and message: the part every pass writes.

    `started`: the run has left Pending (a run that fails there never started).
    `runner_image` is recorded when it does, once: every later step uses it.
    """
    patch: dict[str, Any] = {
        "phase": str(decision.phase),
        "observedGeneration": run.generation,
        "conditions": merge_conditions(
            [as_patch(c) for c in status.conditions], decision.conditions, now, run.generation
        ),
        "message": next(
            (c.message for c in decision.conditions if c.type in ("Failed", "Progressing")), ""
        ),
    }
    if started and status.started_at is None:
        patch["startedAt"] = stamp(now)
        if results_path:
            patch["resultsPath"] = results_path
    if started and runner_image and not status.runner_image:
        patch["runnerImage"] = runner_image
    if decision.phase in TERMINAL:
        patch["completedAt"] = stamp(now)
    return patch


def step_event(step: Step, merged: StepSummary) -> str:
    return (
        f"step {step.index + 1} ({step.target}/{step.phase}/{step.repeat}): "
        f"{merged.operations:,} ops, {merged.throughput:,.0f} ops/s, "
        f"p99 {merged.latency_ms.p99:.2f} ms, {merged.errors} errors"
    )


def without_none(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_none(v) for v in value]
    return value


def _deletions(typed: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """`typed` with the patch's None values back (merge patch: remove that key)."""
    out = dict(typed)
    for key, value in patch.items():
        if value is None:
            out[key] = None
        elif isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _deletions(out[key], value)
    return out


def conform(patch: Mapping[str, Any]) -> dict[str, Any]:
    """A status patch built through the status model (the CRD's own schema): keys
    it does not know and values of the wrong type fail here, in the operator's
    tests, not at the API server. None values stay: merge-patch removes the key."""
    # extra="forbid": the status models ignore unknown keys when they read a
    # stored status; a patch the operator writes must not carry any.
    typed = BenchmarkRunStatus.model_validate(without_none(patch), extra="forbid")
    return _deletions(typed.model_dump(by_alias=True, mode="json", exclude_unset=True), patch)
