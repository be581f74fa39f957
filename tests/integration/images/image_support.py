"""Running a local-node image's entrypoint without a cluster or a container engine.

hack/cluster/images.sh builds the database images from cached roots (Debian
roots under .cluster/roots, or a directory it assembles). These helpers run
the entrypoint from the working tree chrooted in such a root as the chart's
uid, with the pod's volume bind-mounted, in a private mount namespace: nothing
lands in the root. Every server is stopped by its PID.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
ROOTS = Path(os.environ.get("DBBENCH_ROOTS_DIR", REPO / ".cluster/roots"))
PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# root, volume, its mount point, the entrypoint directory (mounted on /mnt),
# tmpfs directories, the user, a memory cgroup to join and where the container
# sees it (both empty: none); then the command. /tmp is always a fresh tmpfs,
# /dev the host's.
_LAUNCH = r"""
root=$1 data=$2 mount_point=$3 entrypoint_dir=$4 tmpfs_dirs=$5 user=$6 cgroup=$7 seen_at=$8
shift 8
if [ -n "$cgroup" ]; then
  echo $$ > "$cgroup/cgroup.procs"
  mount -t tmpfs -o mode=0755 tmpfs "$root/sys"
  mkdir -p "$root$seen_at"
  mount --bind "$cgroup" "$root$seen_at"
fi
mount --bind "$data" "$root$mount_point"
mount --bind "$entrypoint_dir" "$root/mnt"
mount -t proc proc "$root/proc"
# A container has a /dev (/dev/null for a shell's background jobs, above all).
mount --rbind /dev "$root/dev"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
for dir in $tmpfs_dirs; do mount -t tmpfs -o mode=1777 tmpfs "$root$dir"; done
exec chroot --userspec="$user" "$root" "$@"
"""


def root_skip_reason(stamp: Path, build: str) -> str | None:
    """Why an image test cannot run here (None when it can)."""
    if os.geteuid() != 0:
        return "needs root (chroot and mount namespaces)"
    if not stamp.is_file():
        return f"no built image root ({stamp} is missing): run hack/cluster/images.sh {build}"
    if shutil.which("unshare") is None:
        return "needs unshare (util-linux)"
    return None


@dataclass(frozen=True)
class MemoryCgroup:
    """A memory cgroup made for one test, and where a container would see its files."""

    path: Path
    seen_at: str


@contextmanager
def memory_cgroup(limit: int) -> Iterator[MemoryCgroup]:
    """A cgroup limited to `limit` bytes (v1 memory hierarchy, else v2), removed
    afterwards; the test is skipped where neither can be made."""
    name = f"dbbench-test-{os.getpid()}-{secrets.token_hex(3)}"
    v1, v2 = Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup")
    if (v1 / "memory.limit_in_bytes").is_file():
        cgroup = MemoryCgroup(v1 / name, "/sys/fs/cgroup/memory")
        limit_file = "memory.limit_in_bytes"
    elif "memory" in _read(v2 / "cgroup.subtree_control").split():
        cgroup, limit_file = MemoryCgroup(v2 / name, "/sys/fs/cgroup"), "memory.max"
    else:
        pytest.skip("no memory cgroup controller to limit a server with")
    cgroup.path.mkdir()
    try:
        (cgroup.path / limit_file).write_text(str(limit))
        yield cgroup
    finally:
        _empty(cgroup.path)
        cgroup.path.rmdir()


def _empty(path: Path, timeout: float = 60) -> None:
    """Kills by PID whatever is still in the test's cgroup: stop() ends the
    launcher, and a server stalled at the limit may outlive it."""
    deadline = time.monotonic() + timeout
    while pids := [int(p) for p in _read(path / "cgroup.procs").split()]:
        if time.monotonic() > deadline:
            raise TimeoutError(f"processes {pids} stay in {path}")
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)


def _read(path: Path) -> str:
    return path.read_text() if path.is_file() else ""


@dataclass
class Server:
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@dataclass(frozen=True)
class ImageRoot:
    """One image's root and how the chart mounts its volume."""

    root: Path
    entrypoint_dir: Path
    mount_point: str
    tmpfs_dirs: tuple[str, ...] = ()
    user: str = "999:999"

    def start(
        self,
        volume: Path,
        port: int,
        env: Mapping[str, str],
        command: Sequence[str],
        log: Path,
        cgroup: MemoryCgroup | None = None,
    ) -> Server:
        """`command` (the chart's container command) with a clean environment,
        inside `cgroup` when given (seen where a container sees its own)."""
        argv = ["env", "-i", PATH, "HOSTNAME=db-0", *(f"{k}={v}" for k, v in env.items()),
                *command]  # fmt: skip
        mounts = [str(self.root), str(volume), self.mount_point, str(self.entrypoint_dir),
                  " ".join(self.tmpfs_dirs), self.user,
                  str(cgroup.path) if cgroup else "", cgroup.seen_at if cgroup else ""]  # fmt: skip
        launch = ["unshare", "--mount", "--propagation", "private", "--", "bash", "-ec",
                  _LAUNCH, "launch", *mounts, *argv]  # fmt: skip
        with log.open("ab") as sink:
            # A session of its own: kill_all() ends the entrypoint and every
            # server it started at once, as a container's end would.
            process = subprocess.Popen(launch, stdout=sink, stderr=subprocess.STDOUT,
                                       start_new_session=True)  # fmt: skip
        return Server(port=port, process=process, log=log)


def stop(server: Server, timeout: float = 90) -> None:
    """SIGTERM by PID, SIGKILL after the timeout; idempotent."""
    if server.process.poll() is None:
        server.process.terminate()
        try:
            server.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()


def kill_all(server: Server) -> None:
    """SIGKILL to the entrypoint and everything it started (its process group),
    as a killed container (OOM kill, node lost, `crictl stop -t 0`) ends."""
    with suppress(ProcessLookupError):
        os.killpg(server.process.pid, signal.SIGKILL)
    server.process.wait(timeout=30)
    # The group's last members (a server shutting down) may outlive the leader.
    deadline = time.monotonic() + 30
    while _group_alive(server.process.pid):
        if time.monotonic() > deadline:
            raise TimeoutError(f"process group {server.process.pid} outlived SIGKILL")
        time.sleep(0.1)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_for_output(server: Server, text: str, timeout: float = 180) -> None:
    """Until the server's log says `text`; fails if it exits first."""
    deadline = time.monotonic() + timeout
    while text not in server.output():
        if server.process.poll() is not None:
            pytest.fail(f"exited with {server.process.returncode} before {text!r}:\n"
                        f"{server.output()}")  # fmt: skip
        if time.monotonic() > deadline:
            pytest.fail(f"no {text!r} within {timeout} s:\n{server.output()}")
        time.sleep(0.05)


def wait_for_path(server: Server, path: Path, timeout: float = 180) -> None:
    """Until `path` exists (a file the initialisation writes); fails if it exits first."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if server.process.poll() is not None:
            pytest.fail(f"exited with {server.process.returncode} before {path} existed:\n"
                        f"{server.output()}")  # fmt: skip
        if time.monotonic() > deadline:
            pytest.fail(f"no {path} within {timeout} s:\n{server.output()}")
        time.sleep(0.02)


def empty_volume(path: Path) -> Path:
    """An empty volume as the local-path provisioner makes it (mode 0777)."""
    path.mkdir()
    path.chmod(0o777)
    return path
