"""What provisioning saw on one pass, per target and for the whole run."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from dbbench_operator.k8s.pod_stalls import Stall


@dataclass(frozen=True)
class TargetSeen:
    name: str
    ready: bool
    reason: str
    message: str
    endpoint: str = ""
    server_version: str = ""
    failure: tuple[str, str] | None = None
    shard_key: str = ""
    # Pods that have not started, in their own words (empty once all have).
    stalls: tuple[Stall, ...] = ()
    # The pods are ready (or the target is external) but the database is not
    # usable yet (a refused login, replicas not streaming): a wait bounded by
    # spec.startupGrace from `since` (set by the orchestrator).
    settling: bool = False
    since: datetime | None = None

    def status(self) -> dict[str, Any]:
        ready = {
            "type": "Ready",
            "status": "True" if self.ready else "False",
            "reason": self.reason,
            "message": self.message,
        }
        if self.since is not None:  # kept from pass to pass: when the wait began
            ready["lastTransitionTime"] = self.since.strftime("%Y-%m-%dT%H:%M:%SZ")
        entry: dict[str, Any] = {"name": self.name, "ready": self.ready, "conditions": [ready]}
        if self.endpoint:
            entry["endpoint"] = self.endpoint
        if self.server_version:
            entry["serverVersion"] = self.server_version
        if self.shard_key:
            entry["shardKey"] = self.shard_key
        return entry
