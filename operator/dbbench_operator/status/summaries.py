"""Results and progress as the status shows them (pure).

The status keeps a compact summary per target, phase and repeat (well under
100 KB); everything else stays in the files on the results claim.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from dbbench_contract.api.status import LastResult, PhaseResult
from dbbench_contract.run_summary import step_result
from dbbench_contract.summary import StepSummary
from dbbench_operator.specs.plan import Step

# Per-repeat results kept in the status; beyond this, the earliest repeats of
# repeated phases give way (counted in status.resultsOmitted; all are in files).
MAX_STATUS_RESULTS = 160


def phase_result(step: Step, merged: StepSummary) -> PhaseResult:
    """One step's merged summary as a status `PhaseResult` (the run summary's
    step result too: one model)."""
    return step_result(step.phase, step.repeat, merged)


RUNNER_SATURATED = "RunnerSaturated"


def saturation(step: Step, merged: StepSummary) -> tuple[str, str] | None:
    """(reason, message) when the step's runner pods were CPU-bound, else None."""
    if not merged.client_bound:
        return None
    pods = [p for p in merged.client_by_pod if p.bound]
    names = ", ".join(str(p.pod) for p in pods)
    demand = max((p.demand for p in pods), default=0.0)
    return RUNNER_SATURATED, (
        f"runner saturated: add runner pods or threads (step {step.index + 1}, target "
        f"{step.target}, phase {step.phase}, repeat {step.repeat}: runner pod(s) {names} used "
        f"{demand:.0%} of their CPU budget, above {merged.client_bound_threshold:.0%}; the "
        "figures include the runner's own queueing)"
    )


def last_result(step: Step, merged: StepSummary) -> dict[str, Any]:
    """What the Throughput and p99 printer columns show."""
    result = LastResult(
        target=step.target,
        phase=step.phase,
        repeat=step.repeat,
        throughput=round(merged.throughput, 1),
        p99_ms=round(merged.latency_ms.p99, 3),
    )
    return result.model_dump(by_alias=True, exclude_none=True, mode="json")


def with_result(
    targets: Sequence[Mapping[str, Any]], step: Step, result: PhaseResult
) -> list[dict[str, Any]]:
    """The status targets with one more phase result (replacing an equal one)."""
    out = [dict(t) for t in targets]
    entry = next((t for t in out if t["name"] == step.target), None)
    if entry is None:
        entry = {"name": step.target}
        out.append(entry)
    # Entries of the patch being built (target_entries): every one has a name,
    # every phase result a name and a repeat.
    phases = [
        p
        for p in entry.setdefault("phases", [])
        if (p["name"], p["repeat"]) != (step.phase, step.repeat)
    ]
    entry["phases"] = [*phases, result.model_dump(by_alias=True, exclude_none=True, mode="json")]
    return out


def compacted(targets: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """At most MAX_STATUS_RESULTS phase results; drops the earliest repeats first."""
    out = [{**t, "phases": list(t["phases"]) if "phases" in t else []} for t in targets]
    total = sum(len(t["phases"]) for t in out)
    omitted = 0
    while total > MAX_STATUS_RESULTS:
        victim = _earliest_superseded_repeat(out)
        if victim is None:
            break
        target, index = victim
        del out[target]["phases"][index]
        total -= 1
        omitted += 1
    return out, omitted


def _earliest_superseded_repeat(targets: list[dict[str, Any]]) -> tuple[int, int] | None:
    for t_index, target in enumerate(targets):
        phases = target["phases"]
        latest: dict[str, int] = {}
        for result in phases:
            latest[result["name"]] = max(latest.get(result["name"], 0), int(result["repeat"]))
        for p_index, result in enumerate(phases):
            if int(result["repeat"]) < latest[result["name"]]:
                return t_index, p_index
    return None


@dataclass(frozen=True)
class RunProgress:
    percent: int
    eta: datetime | None


def run_progress(
    steps_done: int, steps_total: int, step_percent: float | None, started: datetime | None,
    now: datetime,
) -> RunProgress:  # fmt: skip
    """Whole-run percent from steps (the running one counted by its own percent);
    the ETA extrapolates the time taken so far, so it is rough early on."""
    if steps_total <= 0:
        return RunProgress(0, None)
    fraction = (steps_done + (step_percent or 0.0) / 100.0) / steps_total
    fraction = min(max(fraction, 0.0), 1.0)
    eta = None
    if started is not None and fraction >= 0.02:
        elapsed = (now - started).total_seconds()
        eta = now + timedelta(seconds=round(elapsed * (1 - fraction) / fraction))
    return RunProgress(int(fraction * 100), eta)
