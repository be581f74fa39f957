"""Server flags per replication role, so runtime settings survive a restart.

The setup sets read-only and semi-sync at runtime (repairing drift), but a
runtime setting is lost when the pod restarts. MariaDB has no SET PERSIST, so
the chart starts each role with the same settings as flags: the primary is
ordinal 0, every other ordinal a replica. MySQL persists them with SET PERSIST
instead (its `super_read_only` flag would block the image's first-start
initialisation), so it gets no role flags here.
"""

from __future__ import annotations

from dbbench_operator.specs.databases.request import TopologyRequest

# How long a strict primary waits for a replica's acknowledgement before it
# falls back to asynchronous replication (the servers' default is 10 s). The
# setup fails the target when that happened (see semi_sync.py).
SEMI_SYNC_TIMEOUT_MS = 60_000


def role_flags(request: TopologyRequest) -> dict[str, list[str]]:
    """{"primary": [...], "replica": [...]}: flags added by pod role (chart values)."""
    if request.engine != "mariadb" or request.topology != "primaryReplica":
        return {"primary": [], "replica": []}
    primary: list[str] = []
    replica = ["--read-only=ON"]
    if request.durability == "strict":
        primary += [
            "--rpl-semi-sync-master-enabled=ON",
            f"--rpl-semi-sync-master-timeout={SEMI_SYNC_TIMEOUT_MS}",
            # With no replica connected, commit asynchronously at once (counted,
            # so the setup still notices) instead of stalling every commit.
            "--rpl-semi-sync-master-wait-no-slave=OFF",
        ]
        replica += ["--rpl-semi-sync-slave-enabled=ON"]
    return {"primary": primary, "replica": replica}
