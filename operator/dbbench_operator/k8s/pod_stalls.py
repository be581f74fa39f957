"""Why a pod has not started, in its own words, and whether it waited too long (pure).

A database pod has started once it is Ready; a runner pod once it runs. Until
then the pod's status says why it waits: the scheduler's PodScheduled=False
condition (Unschedulable, with its message), a container's waiting reason
(ErrImagePull, ImagePullBackOff, ErrImageNeverPull, CrashLoopBackOff with the
last termination), or, when the status is vague (ContainersNotReady,
ContainerCreating), the pod's latest Warning event (Unhealthy: a failing
readiness probe; FailedMount; FailedCreatePodSandBox).

`since` is when the pod last stopped being ready (the Ready condition's
transition), or when the scheduler last refused it, or its creation: a pod
that ran for an hour and then crash-loops is judged from the crash, not from
its creation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

# Container waiting reasons that say the pod cannot start as it is.
CONTAINER_PROBLEMS = frozenset({
    "CrashLoopBackOff", "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull",
    "InvalidImageName", "CreateContainerConfigError", "CreateContainerError",
    "RunContainerError", "PreCreateHookError", "PostStartHookError",
})  # fmt: skip
# Pod states that explain nothing by themselves: the events may say more.
VAGUE = frozenset({"ContainersNotReady", "ContainerCreating", "PodInitializing", "Pending"})
# A probe failure event's message starts with the probe's kind.
_PROBES = {"Readiness": "ReadinessProbeFailed", "Liveness": "LivenessProbeFailed",
           "Startup": "StartupProbeFailed"}  # fmt: skip
MESSAGE_LIMIT = 600
# A crash loop's own words before the last exit code; the rest is the last words'.
HEAD_LIMIT = 240
_MIN_SAID = 20  # below this many characters a shortened text says nothing


@dataclass(frozen=True)
class Stall:
    """One pod that has not started: the pod's own reason and message."""

    subject: str  # "pod <name>", or "<Kind> <name>" when a controller made no pod
    reason: str  # CamelCase, as Kubernetes words it: Unschedulable, ErrImageNeverPull, ...
    message: str
    since: datetime | None  # when this wait began (None: unknown, judged as just now)

    def describe(self) -> str:
        detail = f": {self.message}" if self.message else ""
        return f"{self.subject} {self.reason}{detail}"


def parse_time(text: object) -> datetime | None:
    """A Kubernetes timestamp (RFC 3339, `Z` or offset, optional fractions)."""
    if not text:
        return None
    if isinstance(text, datetime):
        return text if text.tzinfo else text.replace(tzinfo=UTC)
    try:
        parsed = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _short(text: object, limit: int = MESSAGE_LIMIT) -> str:
    """One line, at most `limit` characters, keeping the end (where errors are)."""
    flat = " ".join(str(text or "").split())
    if len(flat) <= limit:
        return flat
    return "..." + flat[-(limit - 3) :] if limit > _MIN_SAID else ""


def _with_endings(head: str, containers: Iterable[Mapping[str, Any]]) -> str:
    """`head; last exit code ...: <last words>` within MESSAGE_LIMIT: the head and
    each exit code whole, the containers' last words shortened to the room left
    (keeping their ends). Shortening the whole would cut the exit code off first
    once a server's last words are long (an entrypoint that logs its steps)."""
    head = _short(head, HEAD_LIMIT)
    bare = [(c, ending) for c in containers if (ending := _last_termination(c, 0))]
    room = MESSAGE_LIMIT - len(head) - sum(len(ending) + 2 for _, ending in bare)
    share = room // max(len(bare), 1)
    worded = [_last_termination(c, len(ending) + share) for c, ending in bare]
    return _short("; ".join(p for p in (head, *worded) if p))


def _condition(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), None)


def _since(pod: Mapping[str, Any]) -> datetime | None:
    ready = _condition(pod, "Ready")
    if ready is not None and ready.get("status") != "True":
        moment = parse_time(ready.get("lastTransitionTime"))
        if moment is not None:
            return moment
    return parse_time((pod.get("metadata") or {}).get("creationTimestamp"))


def _last_termination(status: Mapping[str, Any], limit: int = MESSAGE_LIMIT) -> str:
    """How the container last ended: exit code, reason, its termination message
    (shortened so that the whole is at most `limit`; 0: without it)."""
    terminated = (status.get("state") or {}).get("terminated") or (
        status.get("lastState") or {}).get("terminated") or {}  # fmt: skip
    if not terminated:
        return ""
    code = terminated.get("exitCode")
    why = terminated.get("reason") or ""
    said = terminated.get("message")
    text = f"last exit code {code}" + (f" ({why})" if why else "")
    restarts = status.get("restartCount")
    if restarts:
        text += f" after {restarts} restart(s)"
    said = _short(said, limit - len(text) - 2) if limit else ""
    return text + (f": {said}" if said else "")


def _container_problem(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """(reason, message) of the first init or app container that cannot start."""
    status = pod.get("status") or {}
    for statuses in (status.get("initContainerStatuses"), status.get("containerStatuses")):
        for container in statuses or []:
            waiting = (container.get("state") or {}).get("waiting") or {}
            reason = str(waiting.get("reason") or "")
            if reason not in CONTAINER_PROBLEMS:
                continue
            head = "; ".join(p for p in (f"container {container.get('name')}",
                                          _short(waiting.get("message"))) if p)  # fmt: skip
            if reason == "CrashLoopBackOff":
                return reason, _with_endings(head, [container])
            return reason, _short(head)
    return None


def _vague_state(pod: Mapping[str, Any]) -> tuple[str, str]:
    """What the status says when nothing is clearly wrong: still creating, or not ready."""
    status = pod.get("status") or {}
    for statuses in (status.get("initContainerStatuses"), status.get("containerStatuses")):
        for container in statuses or []:
            waiting = (container.get("state") or {}).get("waiting") or {}
            if waiting.get("reason"):
                return str(waiting["reason"]), _short(waiting.get("message"))
    ready = _condition(pod, "Ready")
    if ready is not None and ready.get("status") != "True":
        return str(ready.get("reason") or "ContainersNotReady"), _short(ready.get("message"))
    return "Pending", ""


def _event_moment(event: Mapping[str, Any]) -> datetime:
    series = event.get("series") or {}
    for key in ("lastTimestamp", "eventTime", "firstTimestamp"):
        moment = parse_time(series.get("lastObservedTime") or event.get(key))
        if moment is not None:
            return moment
    return datetime.min.replace(tzinfo=UTC)


def latest_warning(events: Iterable[Mapping[str, Any]]) -> tuple[str, str] | None:
    """(reason, message) of the most recent Warning event; probe failures renamed."""
    warnings = [e for e in events if e.get("type") == "Warning" and e.get("reason")]
    if not warnings:
        return None
    event = max(warnings, key=_event_moment)
    reason, message = str(event["reason"]), _short(event.get("message"))
    if reason == "Unhealthy":
        kind = message.split(" ", 1)[0]
        reason = _PROBES.get(kind, reason)
    elif reason == "BackOff" and "restarting failed container" in message:
        # The kubelet's own words between two crashes of a crash-looping container.
        reason = "CrashLoopBackOff"
    return reason, message


def _crashed_before(status: Mapping[str, Any]) -> bool:
    """A container was restarted after it failed (its last run ended non-zero)."""
    for container in status.get("containerStatuses") or []:
        ended = (container.get("lastState") or {}).get("terminated") or {}
        if container.get("restartCount") and ended.get("exitCode") not in (None, 0):
            return True
    return False


def pod_stall(
    pod: Mapping[str, Any], events: Sequence[Mapping[str, Any]] = (), *, need_ready: bool = True
) -> Stall | None:
    """Why the pod has not started, or None once it has (or while it is going away).

    `need_ready`: database pods must be Ready; runner pods only need to run
    (a finished runner pod is the Job's business, not a start-up problem).
    """
    meta = pod.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return None
    name = f"pod {meta.get('name') or '?'}"
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    if phase in ("Failed", "Succeeded"):
        # A database pod is never meant to end (evicted, or its node went away);
        # a finished runner pod is the Job's business.
        reason = str(status.get("reason") or f"Pod{phase}")
        ended = Stall(name, reason, _short(status.get("message")), _since(pod))
        return ended if need_ready else None
    scheduled = _condition(pod, "PodScheduled")
    if scheduled is not None and scheduled.get("status") == "False":
        since = parse_time(scheduled.get("lastTransitionTime")) or _since(pod)
        reason = str(scheduled.get("reason") or "Unschedulable")
        return Stall(name, reason, _short(scheduled.get("message")), since)
    problem = _container_problem(pod)
    if problem is not None:
        return Stall(name, *problem, _since(pod))
    ready = _condition(pod, "Ready")
    started = ready is not None and ready.get("status") == "True" if need_ready else (
        phase == "Running")  # fmt: skip
    if started:
        return None
    reason, message = _vague_state(pod)
    warning = latest_warning(events)
    if warning is not None:
        reason, message = warning
    if reason in _PROBES.values() and _crashed_before(status):
        # Just restarted after a crash, the server fails its probes until it
        # crashes again: the crash is the reason, the probe failure its echo. (With
        # passes started by the pod's own changes, a pass often lands right there.)
        reason = "CrashLoopBackOff"
    if reason == "CrashLoopBackOff":  # between two crashes: say how the last one ended
        message = _with_endings(message, status.get("containerStatuses") or [])
    return Stall(name, reason, message, _since(pod))


def _first_moment(event: Mapping[str, Any]) -> datetime | None:
    return parse_time(event.get("firstTimestamp") or event.get("eventTime"))


def controller_stall(kind: str, name: str, events: Sequence[Mapping[str, Any]]) -> Stall | None:
    """A StatefulSet or Job that made fewer pods than it wants: its latest
    Warning event says why (FailedCreate: quota, Pod Security, admission)."""
    warnings = [e for e in events if e.get("type") == "Warning" and e.get("reason")]
    if not warnings:
        return None
    event = max(warnings, key=_event_moment)
    # A Job names a new pod in each attempt (one event each); a StatefulSet counts
    # repeats of one event: the wait began with the first of either.
    same = [_first_moment(e) for e in warnings if e["reason"] == event["reason"]]
    since = min((m for m in same if m is not None), default=None)
    return Stall(f"{kind} {name}", str(event["reason"]), _short(event.get("message")), since)


def needs_events(stall: Stall | None) -> bool:
    """The pod's status alone was vague: its events are worth one more read."""
    return stall is not None and stall.reason in VAGUE


@dataclass(frozen=True)
class Verdict:
    """The stall to report (the longest waiting) and whether it used up its grace."""

    stall: Stall | None
    overdue: bool = False
    deadline: datetime | None = None  # when the reported stall uses up the grace


def longest(stalls: Sequence[Stall]) -> Stall:
    """The stall that has waited longest (an unknown start counts as the latest)."""
    latest = datetime.max.replace(tzinfo=UTC)
    return min(stalls, key=lambda s: s.since or latest)


def judge(stalls: Sequence[Stall], grace_seconds: float, now: datetime) -> Verdict:
    """The longest-waiting stall; overdue once it has waited longer than the grace."""
    if not stalls:
        return Verdict(None)
    stall = longest(stalls)
    since = stall.since or now
    waited = (now - since).total_seconds()
    deadline = datetime.fromtimestamp(since.timestamp() + grace_seconds, UTC)
    return Verdict(stall, overdue=waited > grace_seconds, deadline=deadline)
