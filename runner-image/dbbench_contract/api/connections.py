"""How many connections a deployed MySQL or MariaDB server must accept at once.

One number serves the operator twice: the server's `max_connections` is sized
from it (unless the target's `settings` give one) and the InnoDB buffer pool
keeps per-connection memory for that many (`specs/databases/sizing.py`); admission
refuses a `settings.max_connections` below it (`semantics.py`). A server at
its limit refuses the next login ("Too many connections"): a runner worker
that cannot connect fails its step at run time, after provisioning and
loading, instead of at `kubectl apply`.
"""

from __future__ import annotations

from .spec import BenchmarkRunSpec
from .targets import Target

# Each runner pod holds one connection besides its workers': prepare, server
# information and the storage samples (dbbench_runner.running).
RUNNER_CONTROL_CONNECTIONS = 1
# The operator's setup pass holds one session per server while it checks and
# repairs replication (targets/setup.set_up_mysql), before every step.
OPERATOR_CONNECTIONS = 1
# Half-open connections of the kubelet's TCP probes, a person's `mysql` client
# through `kubectl exec`, a runner pod's reconnect after a lost control
# connection: never the reason a benchmark connection is refused.
HEADROOM_CONNECTIONS = 10


def phase_threads(spec: BenchmarkRunSpec) -> int:
    """The most connections one runner pod opens in any phase (a phase's
    `threads` overrides `runner.threads`)."""
    return max(phase.threads or spec.runner.threads for phase in spec.phases)


def runner_connections(spec: BenchmarkRunSpec) -> int:
    """Connections the runner holds at once: runner.pods x (threads + control)."""
    return spec.runner.pods * (phase_threads(spec) + RUNNER_CONTROL_CONNECTIONS)


def replication_connections(target: Target) -> int:
    """Each replica's IO thread holds one connection to the primary."""
    return target.effective_members - 1 if target.topology == "primaryReplica" else 0


def mysql_connections_needed(spec: BenchmarkRunSpec, target: Target) -> int:
    """What each server of a MySQL-family target must accept: every runner
    connection (a worker reading from a replica holds one there besides its
    primary's: no server sees more than the runner's total), the operator's,
    the replicas' and the headroom."""
    return (
        runner_connections(spec)
        + OPERATOR_CONNECTIONS
        + replication_connections(target)
        + HEADROOM_CONNECTIONS
    )
