"""What provisioning saw on one pass, per target and for the whole run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbbench_operator.startup import Stall


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

    def status(self) -> dict[str, Any]:
        ready = {
            "type": "Ready",
            "status": "True" if self.ready else "False",
            "reason": self.reason,
            "message": self.message,
        }
        entry: dict[str, Any] = {"name": self.name, "ready": self.ready, "conditions": [ready]}
        if self.endpoint:
            entry["endpoint"] = self.endpoint
        if self.server_version:
            entry["serverVersion"] = self.server_version
        if self.shard_key:
            entry["shardKey"] = self.shard_key
        return entry
