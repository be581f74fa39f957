"""`dbbench wait RUN`: block until a BenchmarkRun ends, say how, and exit with a
code a CI job can gate on (what it runs after `kubectl apply`).

The run is watched (one watch request at a time on that one object, resumed
from the last resourceVersion seen; a fresh get when the API server says the
version is gone), not polled. The verdict is read from the status the operator
writes: the phase, status.expectations (each bound's outcome, structured) and
the ChangePoint condition when present; no message is parsed.

Exit codes (also in docs/cli.md):
  0  the run Succeeded and no expectation was missed
  1  the run Failed (for any reason other than missed expectations)
  2  an expectation was missed (onMiss: Fail ended it Failed, reason
     ExpectationsMissed; or onMiss: Record, the run Succeeded)
  3  --timeout passed before the run ended
  4  the run could not be read (no such run, no access, API server unreachable)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from dbbench_cli.kube import (
    FINISHED,
    GROUP,
    PLURAL,
    VERSION,
    Api,
    CliError,
    Run,
    api_error,
    run_of,
)
from dbbench_contract.api.expectations import describe
from dbbench_contract.api.status import Condition

SUCCEEDED, FAILED, MISSED, TIMED_OUT, UNREADABLE = 0, 1, 2, 3, 4
EXPECTATIONS_MISSED = "ExpectationsMissed"
# Longest single watch request; the API server may end one sooner (it is resumed).
WATCH_SECONDS = 300


@dataclass(frozen=True)
class Verdict:
    code: int
    text: str


def _condition(run: Run, kind: str) -> Condition | None:
    return next((c for c in run.status.conditions if c.type == kind), None)


def verdict(run: Run) -> Verdict:
    """What an ended run's status says, in words, and the exit code (pure)."""
    lines = [f"run {run.namespace}/{run.name}: {run.phase}"]
    failed = _condition(run, "Failed")
    if run.phase == "Failed" and failed is not None:
        lines.append(f"  failed: {failed.reason}: {failed.message or ''}".rstrip())
    outcomes = run.status.expectations or []
    for outcome in outcomes:
        lines.append(f"  {outcome.verdict.lower():<9} {describe(outcome)}")
    judged = _condition(run, "Expectations")
    if judged is not None and not outcomes:
        lines.append(f"  expectations: {judged.reason}: {judged.message or ''}".rstrip())
    elif judged is None and run.spec is not None and run.spec.expectations:
        lines.append("  expectations: not judged (the run ended before its last step)")
    change = _condition(run, "ChangePoint")
    if change is not None:
        lines.append(f"  change point: {change.reason}: {change.message or ''}".rstrip())
    missed = any(o.verdict == "Missed" for o in outcomes) or (
        failed is not None and failed.reason == EXPECTATIONS_MISSED
    )
    if missed:
        code = MISSED
    elif run.phase == "Succeeded":
        code = SUCCEEDED
    else:
        code = FAILED
    return Verdict(code, "\n".join(lines) + "\n")


def _get(api: Api, name: str) -> dict[str, Any]:
    try:
        found: dict[str, Any] = api.objects.get_namespaced_custom_object(
            GROUP, VERSION, api.namespace, PLURAL, name
        )
    except api_error() as exc:
        if exc.status == 404:
            raise CliError(f"no BenchmarkRun {name!r} in namespace {api.namespace!r}") from exc
        raise CliError(f"cannot read BenchmarkRun {name}: {exc.status} {exc.reason}") from exc
    return found


def _changes(api: Api, name: str, version: str, seconds: int) -> Iterator[dict[str, Any]]:
    """The run's objects as the watch delivers them, for up to `seconds`."""
    from kubernetes import watch  # noqa: PLC0415 - see kube.api_error

    stream = watch.Watch().stream(
        api.objects.list_namespaced_custom_object, GROUP, VERSION, api.namespace, PLURAL,
        field_selector=f"metadata.name={name}", resource_version=version,
        timeout_seconds=seconds, allow_watch_bookmarks=False,
    )  # fmt: skip
    for event in stream:
        if event.get("type") == "ERROR":
            raise _GoneError
        if event.get("type") == "DELETED":
            raise CliError(f"BenchmarkRun {name} was deleted before it ended")
        raw = event.get("raw_object") or event.get("object")
        if isinstance(raw, dict):
            yield raw


class _GoneError(Exception):
    """The watch's resourceVersion is too old (410): start again from a get."""


def wait_for_end(
    api: Api, name: str, timeout: float, clock: Callable[[], float] = time.monotonic
) -> Run | None:
    """The run once its phase is Succeeded or Failed; None when `timeout` passes first."""
    deadline = clock() + timeout
    raw = _get(api, name)
    while True:
        run = run_of(raw)
        if run.phase in FINISHED:
            return run
        left = deadline - clock()
        if left <= 0:
            return None
        version = str((raw.get("metadata") or {}).get("resourceVersion") or "")
        try:
            for raw in _changes(api, name, version, max(1, min(int(left), WATCH_SECONDS))):
                if run_of(raw).phase in FINISHED:
                    break
            else:
                raw = _get(api, name)  # the watch ended: read it afresh, then resume
        except _GoneError:
            raw = _get(api, name)
        except api_error() as exc:
            if exc.status != 410:
                raise CliError(
                    f"cannot watch BenchmarkRun {name}: {exc.status} {exc.reason}"
                ) from exc
            raw = _get(api, name)


def wait(api: Api, name: str, timeout: float) -> Verdict:
    run = wait_for_end(api, name, timeout)
    if run is None:
        now = run_of(_get(api, name))
        return Verdict(
            TIMED_OUT, f"run {api.namespace}/{name}: still {now.phase} after {timeout:g}s\n"
        )
    return verdict(run)
