"""Why the pods a run waits for have not started: their status, and their events
when the status alone is vague (reads only; the judging is in `k8s/pod_stalls`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dbbench_operator.k8s import api
from dbbench_operator.k8s.pod_stalls import Stall, controller_stall, needs_events, pod_stall


def _events(namespace: str, obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Events of one object, by uid: a re-created pod of the same name has its own."""
    uid = (obj.get("metadata") or {}).get("uid")
    if not uid:
        return []
    return api.list_objects("v1", "Event", namespace, fields={"involvedObject.uid": uid})


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def pod_stalls(
    namespace: str, pods: Sequence[Mapping[str, Any]], *, need_ready: bool
) -> tuple[Stall, ...]:
    """One Stall per pod that has not started, in pod-name order."""
    found = []
    for pod in sorted(pods, key=_name):
        stall = pod_stall(pod, need_ready=need_ready)
        if needs_events(stall):
            stall = pod_stall(pod, _events(namespace, pod), need_ready=need_ready)
        if stall is not None:
            found.append(stall)
    return tuple(found)


def _owned_by(pod: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    uid = (owner.get("metadata") or {}).get("uid")
    refs = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(ref.get("uid") == uid for ref in refs)


def database_stalls(
    namespace: str,
    labels: Mapping[str, str],
    statefulsets: Sequence[tuple[int, Mapping[str, Any] | None]],
) -> tuple[Stall, ...]:
    """Stalls of a target's pods; else of a StatefulSet that made too few pods."""
    pods = api.list_objects("v1", "Pod", namespace, labels)
    stalls = pod_stalls(namespace, pods, need_ready=True)
    if stalls:
        return stalls
    for wanted, sts in statefulsets:
        if sts is None or sum(_owned_by(p, sts) for p in pods) >= wanted:
            continue
        stall = controller_stall("StatefulSet", _name(sts), _events(namespace, sts))
        if stall is not None:
            return (stall,)
    return ()


def runner_stalls(
    namespace: str, job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]
) -> tuple[Stall, ...]:
    """Stalls of a step's runner pods; else of a Job that made no pod at all."""
    stalls = pod_stalls(namespace, pods, need_ready=False)
    if stalls or pods:
        return stalls
    stall = controller_stall("Job", _name(job), _events(namespace, job))
    return () if stall is None else (stall,)
