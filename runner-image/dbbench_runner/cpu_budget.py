"""How many CPUs this runner pod may use: its cgroup quota, else the CPUs it may run on.

A Kubernetes CPU limit is a CFS quota (cgroup v2 `cpu.max`, v1
`cpu.cfs_quota_us` / `cpu.cfs_period_us`), possibly set on an ancestor cgroup;
the smallest quota on the way to the root is the one in force. os.cpu_count()
is the node's cores and ignores both the quota and the CPU affinity (taskset,
cpusets), so it is only the last resort.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")
V1_CONTROLLER_DIRS = ("cpu,cpuacct", "cpu", "cpuacct,cpu")


def usable_cores() -> int:
    """CPUs this process may be scheduled on (affinity), else the node's count."""
    try:
        return len(os.sched_getaffinity(0)) or (os.cpu_count() or 1)
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _ancestors(directory: Path, root: Path) -> list[Path]:
    """directory, its parent, ... up to root (all inside root)."""
    found = [directory]
    while directory != root and root in directory.parents:
        directory = directory.parent
        found.append(directory)
    return found


def _cgroup_paths(proc_cgroup: Path) -> dict[str, str]:
    """controller list ("" for v2) -> this process's cgroup path."""
    paths: dict[str, str] = {}
    for line in (_read(proc_cgroup) or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            paths[parts[1]] = parts[2]
    return paths


def _relative(path: str) -> PurePosixPath:
    return PurePosixPath(path).relative_to("/") if path.startswith("/") else PurePosixPath(path)


def v2_quota(root: Path, cgroup_path: str) -> float | None:
    """The smallest `cpu.max` quota / period from this cgroup up to the root."""
    quotas: list[float] = []
    for directory in _ancestors(root / _relative(cgroup_path), root):
        text = _read(directory / "cpu.max")
        if text is None:
            continue
        quota, _, period = text.partition(" ")
        if quota != "max" and quota.isdigit() and period.isdigit() and int(period) > 0:
            quotas.append(int(quota) / int(period))
    return min(quotas, default=None)


def v1_quota(root: Path, cgroup_path: str) -> float | None:
    """The smallest cfs quota / period (quota -1: none), this cgroup up to the mount's root."""
    quotas: list[float] = []
    for name in V1_CONTROLLER_DIRS:
        mount = root / name
        if not mount.is_dir():
            continue
        # Inside a container the mount shows the container's own cgroup as its root.
        start = mount / _relative(cgroup_path)
        for directory in _ancestors(start if start.is_dir() else mount, mount):
            quota = _read(directory / "cpu.cfs_quota_us")
            period = _read(directory / "cpu.cfs_period_us")
            valid = quota and period and quota.lstrip("-").isdigit() and period.isdigit()
            if valid and int(str(quota)) > 0 and int(str(period)) > 0:
                quotas.append(int(str(quota)) / int(str(period)))
        break
    return min(quotas, default=None)


def cgroup_quota(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_CGROUP) -> float | None:
    """CPUs the cgroup quota allows (may be fractional), or None when unlimited."""
    paths = _cgroup_paths(proc_cgroup)
    if (root / "cgroup.controllers").exists():  # the unified (v2) hierarchy
        return v2_quota(root, paths.get("", "/"))
    cpu_path = next((p for names, p in paths.items() if "cpu" in names.split(",")), "/")
    return v1_quota(root, cpu_path)


def cpu_budget(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_CGROUP) -> float:
    """CPUs this pod may use: min(cgroup quota, usable cores)."""
    cores = float(usable_cores())
    quota = cgroup_quota(root, proc_cgroup)
    return cores if quota is None else min(cores, quota)
