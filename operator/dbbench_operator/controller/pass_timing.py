"""When a run's next pass is due, as pure functions of its status and the settings.

With events on, a change of one of the run's Pods, Jobs or StatefulSets starts
the next pass at once (`controller/alarms`), so a wait that such a change ends is looked
at only as a safety net: a run waiting for nodes every `resync_interval`, a
running step (its progress in the status) every `progress_interval`. Every
other wait is on something no watch shows (a database's replication, the
results service, a pod's startupGrace clock) and is polled every
`reconcile_interval`, as is every run with events off. Each of these timed
waits is at least `active runs / max_passes_per_second` (`stretched`): a few
runs keep their intervals, a thousand runs together make a bounded number of
timed passes per second instead of one per run per interval (changes still
start a pass at once). No wait outlasts spec.timeout. A pass the API server
refused as busy (429, 5xx, no answer) is followed by a back-off instead: its
Retry-After, else doubling from `reconcile_interval` up to `resync_interval`,
and changes do not cut it short.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dbbench_contract.api import BenchmarkRunStatus
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.status.lifecycle import PROGRESSING, RunPhase, Stage
from dbbench_operator.status.recording import read_status

# Bursts of changes (a StatefulSet's pods becoming ready one by one) start one
# pass a second at most.
MIN_GAP_S = 1.0
# A wait cut by spec.timeout ends this long after it, so that the pass sees it passed.
PAST_TIMEOUT_S = 1.0
# Waits that a change of the run's own children (or of another run) ends.
WAITING_FOR_NODES = "WaitingForNodes"
RUNNING_STEP = "RunningStep"


@dataclass(frozen=True)
class Wait:
    """How long until the next pass, and whether a change may cut it short."""

    seconds: float
    wakeable: bool


def _progressing_reason(status: BenchmarkRunStatus) -> str:
    found = next((c for c in status.conditions if c.type == PROGRESSING), None)
    return (found.reason if found else None) or ""


def waits_for_nodes(status: Mapping[str, Any] | BenchmarkRunStatus) -> bool:
    """A Pending run that another run's nodes hold back: it looks again when a run
    releases its nodes or a node changes."""
    typed = read_status(status)
    phase = typed.phase or RunPhase.PENDING
    return phase == RunPhase.PENDING and _progressing_reason(typed) == WAITING_FOR_NODES


def quiet_interval(
    status: Mapping[str, Any] | BenchmarkRunStatus, settings: OperatorSettings
) -> float | None:
    """The safety-net interval of a wait that events end; None for a polled wait."""
    typed = read_status(status)
    if waits_for_nodes(typed):
        return settings.resync_interval
    phase, reason = RunPhase(typed.phase or RunPhase.PENDING), _progressing_reason(typed)
    stage = typed.progress.stage if typed.progress else None
    if phase == RunPhase.RUNNING and stage == Stage.RUNNING and reason == RUNNING_STEP:
        return settings.progress_interval
    return None


def stretched(
    interval: float, active_runs: int, settings: OperatorSettings, jitter: float = 1.0
) -> float:
    """`interval`, or longer when `active_runs` runs each waiting that long would make
    more than `max_passes_per_second` timed passes a second together.

    A stretched wait is multiplied by `jitter` (the loop draws it around 1, so the
    mean, and the budget, hold): runs applied together would otherwise keep their
    timed passes together, a burst of hundreds every few minutes and nothing between."""
    budget = settings.max_passes_per_second
    if budget <= 0 or active_runs / budget <= interval:
        return interval
    return max(interval, active_runs / budget * jitter)


def backoff(settings: OperatorSettings, busy_passes: int, retry_after: float | None) -> float:
    """The wait after `busy_passes` passes in a row found the API server busy."""
    doubling = settings.reconcile_interval * float(2 ** max(0, min(busy_passes - 1, 10)))
    return max(retry_after or 0.0, min(doubling, max(settings.resync_interval, 1.0)))


def next_wait(
    status: Mapping[str, Any],
    settings: OperatorSettings,
    *,
    busy_passes: int = 0,
    retry_after: float | None = None,
    seconds_left: float | None = None,
    active_runs: int = 1,
    moved: bool = False,
    jitter: float = 1.0,
) -> Wait:
    """The wait after a pass that left the run with `status` (the pass's patch applied).

    `busy_passes`: passes in a row that the API server refused as busy (0: the last
    one was not); `seconds_left`: until spec.timeout (None: no clock yet);
    `active_runs`: runs of this operator that have a loop (this one included);
    `moved`: the pass changed the run's phase, so the next one has work to do now
    (Pending to Provisioning deploys the first target at the next pass): it comes
    after MIN_GAP_S, never stretched. A thousand runs would otherwise each wait
    active runs / budget (minutes) between admission and deploying. `jitter`: see
    `stretched`."""
    if busy_passes:
        return Wait(backoff(settings, busy_passes, retry_after), wakeable=False)
    if moved:
        return Wait(MIN_GAP_S, wakeable=settings.events)
    quiet = quiet_interval(status, settings) if settings.events else None
    seconds = stretched(settings.reconcile_interval if quiet is None else quiet, active_runs,
                        settings, jitter)  # fmt: skip
    if seconds_left is not None:
        seconds = min(seconds, max(0.0, seconds_left) + PAST_TIMEOUT_S)
    return Wait(max(seconds, 0.0), wakeable=settings.events)
