"""Where a step's runner Job stands, from the Job and its pods (pure).

No silent retry of a measured step (docs/decisions.md): a runner pod is never
replaced (`backoffLimit: 0`), and any runner pod that failed, was killed, was
evicted or preempted (condition `DisruptionTarget`), or was deleted while the
step ran fails the step and the run, naming the pod and the cause. This is
read from the pods themselves, not only from the Job's conditions, so the
verdict does not wait for the Job controller, and a pod that a disruption
stopped but that still exited 0 is not taken for a success. A Job that
completed after a failed pod (made by an operator that still retried) fails
too: its merged window would span both attempts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dbbench_contract.summary import StepSummary
from dbbench_operator.redaction import scrub
from dbbench_operator.specs.plan import Step

# Runner exit codes (dbbench_runner.cli) -> condition reasons.
EXIT_REASONS = {
    2: "RunnerConfigInvalid",
    3: "ErrorRateExceeded",
    4: "DatabaseUnreachable",
    5: "RunnerCrashed",
    6: "ResultsUploadFailed",
    7: "DataSourceInvalid",  # dataset.source: a missing file, a row that does not load
}
SIGNALS = {137: "SIGKILL", 143: "SIGTERM"}
# A failed step whose runner measured its whole phase: its results are still merged.
MEASURED_TO_THE_END = frozenset({"ErrorRateExceeded"})
_STUCK = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName",
                    "CreateContainerConfigError", "CreateContainerError"})  # fmt: skip
_NEVER_RETRIED = "runner pods are never retried: a retry would re-insert or stretch the step"


@dataclass(frozen=True)
class JobState:
    finished: bool
    failed: bool = False
    reason: str = ""
    message: str = ""


def _true_conditions(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {
        str(c.get("type")): c for c in (obj.get("status") or {}).get("conditions") or []
        if c.get("status") == "True"
    }  # fmt: skip


def _terminated(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (status.get("state") or {}).get("terminated")
        if terminated and terminated.get("exitCode"):
            return dict(terminated)
    return None


def _waiting(pod: Mapping[str, Any]) -> str:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in _STUCK:
            return f"{waiting['reason']}: {waiting.get('message', '')}"[:300]
    return ""


def _exit(terminated: Mapping[str, Any]) -> tuple[str, str]:
    code = int(terminated["exitCode"])
    detail = scrub(str(terminated.get("message") or terminated.get("reason") or "").strip(), 800)
    if terminated.get("reason") == "OOMKilled":
        return "RunnerOOMKilled", f"was OOMKilled (exit {code}): raise spec.runner.resources"
    if code in SIGNALS and code not in EXIT_REASONS:
        return "RunnerKilled", f"was killed ({SIGNALS[code]}, exit {code}) {detail}".rstrip()
    return EXIT_REASONS.get(code, "RunnerFailed"), f"exited {code}: {detail}"


def pod_failure(pod: Mapping[str, Any]) -> tuple[int, str, str] | None:
    """(rank, reason, what happened) for a runner pod that ended the step; the lowest
    rank is the cause (a disruption, then an exit, then a failed phase, then a deletion:
    the Job controller deletes the other pods once one failed)."""
    status = pod.get("status") or {}
    disrupted = _true_conditions(pod).get("DisruptionTarget")
    if disrupted is not None:
        why = f"{disrupted.get('reason', '')}: {scrub(str(disrupted.get('message', '')), 300)}"
        return 0, "RunnerDisrupted", f"was disrupted ({why.strip(': ')})"
    terminated = _terminated(pod)
    if terminated is not None:
        return 1, *_exit(terminated)
    if status.get("phase") == "Failed":
        detail = scrub(f"{status.get('reason', '')} {status.get('message', '')}".strip(), 300)
        return 2, "RunnerFailed", f"failed ({detail or 'no reason given'})"
    if (pod.get("metadata") or {}).get("deletionTimestamp") and status.get("phase") != "Succeeded":
        return 3, "RunnerDeleted", "was deleted while the step ran"
    return None


def _name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name") or "?")


def _cause(pods: Sequence[Mapping[str, Any]], *, include_deleted: bool) -> tuple[str, str] | None:
    found = sorted((failure, _name(p)) for p in pods if (failure := pod_failure(p)) is not None)
    found = [f for f in found if include_deleted or f[0][0] < 3]
    if not found:
        return None
    (_, reason, what), name = found[0]
    return reason, f"runner pod {name} {what}"


def job_state(step: Step, job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> JobState:
    """Where a runner Job stands, and why the step failed (from its pods) if it did."""
    conditions = _true_conditions(job)
    where = f"step {step.index + 1} ({step.target}/{step.phase}/{step.repeat})"
    # Since Kubernetes 1.31 a failing Job gets FailureTarget (with the reason) at once
    # and Failed only once its pods have terminated; in between its pods are being
    # deleted, and the reason is the Job's, not a deletion.
    failed_condition = conditions.get("Failed") or conditions.get("FailureTarget")
    if failed_condition is not None and failed_condition.get("reason") == "DeadlineExceeded":
        return JobState(True, True, "Timeout", f"{where}: runner Job ran into spec.timeout")
    failed_pods = int((job.get("status") or {}).get("failed") or 0)
    cause = _cause(pods, include_deleted=failed_condition is None and "Complete" not in conditions)
    if cause is not None:
        return JobState(True, True, cause[0], f"{where}: {cause[1]}; {_NEVER_RETRIED}"[:1500])
    if failed_condition is not None:
        detail = scrub(str(failed_condition.get("message") or failed_condition.get("reason")))
        return JobState(True, True, "RunnerFailed", f"{where}: runner Job failed: {detail}"[:1500])
    if failed_pods:
        return JobState(True, True, "RunnerFailed", (
            f"{where}: {failed_pods} runner pod(s) of Job {_name(job)} failed; {_NEVER_RETRIED}"
        ))  # fmt: skip
    if "Complete" in conditions:
        return JobState(finished=True)
    stuck = next((w for w in map(_waiting, pods) if w), "")
    message = f"runner pods of step {step.index + 1} waiting ({stuck})" if stuck else ""
    return JobState(finished=False, message=message)


def stopped_early(step: Step, merged: StepSummary) -> tuple[str, str] | None:
    """(reason, message) when a runner pod stopped before its phase ended (SIGTERM from an
    eviction or a deletion that the pod survived long enough to upload): its figures
    cover part of the phase, so the step is not a result."""
    if merged.status != "stopped":
        return None
    return "RunnerStopped", (
        f"step {step.index + 1} ({step.target}/{step.phase}/{step.repeat}): a runner pod was "
        "stopped (SIGTERM: evicted or deleted) before its phase ended; its partial figures "
        f"are kept in the step's files but not recorded as a result; {_NEVER_RETRIED}"
    )


STEP_FAILED = "StepFailed"


def failed_step(step: Step, merged: StepSummary) -> tuple[str, str] | None:
    """(reason, message) when the step's merged summary failed although every runner
    pod exited 0: only the merge sees every pod (an error rate over all pods, writes
    the server dropped counted against the whole table, a pod's own verdict), and a
    failed step is never a result the run can succeed with."""
    if merged.status != "failed":
        return None
    return STEP_FAILED, (
        f"step {step.index + 1} (target {step.target}, phase {step.phase}, repeat "
        f"{step.repeat}) failed: {scrub(merged.reason or 'its merged summary says failed', 1200)}"
    )
