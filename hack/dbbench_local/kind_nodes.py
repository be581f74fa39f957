"""One node of a multi-node kind cluster, as a container: paused and resumed, or a
command run in it (the placement suite, tests/e2e/test_node_pools.py).

`kind.node_exec` and `kind.node_process_pid` address the control plane, the one
node of `make e2e`'s kind cluster; these take the node's name. A paused node
(`podman pause`: its cgroup frozen) keeps its container, address and routes:
its kubelet stops posting status, and the node lifecycle controller marks it
Ready=Unknown after its grace, as for a machine that stopped answering. A
stopped and restarted node would come back with its routes missing for up to
10 s (the CNI DaemonSet's period, docs/local-cluster.md), hence pause.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from dbbench_local.kind import kind_engine, podman_env


def _engine(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    engine = kind_engine()
    return subprocess.run(
        [engine, *argv], capture_output=True, text=True, check=False, timeout=timeout,
        env=podman_env() if engine == "podman" else None,
    )  # fmt: skip


def exec_on(node: str, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """A command in the named kind node's container."""
    return _engine("exec", node, *argv, timeout=timeout)


def container_state(node: str) -> str:
    """running, paused, exited, ... as the engine reports the node's container."""
    done = _engine("inspect", "--format", "{{.State.Status}}", node)
    if done.returncode != 0:
        raise RuntimeError(f"inspect of kind node {node} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def _set(action: str, node: str) -> None:
    done = _engine(action, node)
    if done.returncode != 0:
        raise RuntimeError(f"{action} of kind node {node} failed: {done.stderr.strip()}")


@contextmanager
def paused(node: str) -> Iterator[None]:
    """The node's container paused inside the block, resumed on leaving it
    (whatever happened inside: the cluster must come down whole)."""
    _set("pause", node)
    try:
        yield
    finally:
        if container_state(node) == "paused":
            _set("unpause", node)
