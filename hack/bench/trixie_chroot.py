"""A cached Debian trixie chroot in which mysql-connector's C extension loads.

The connector's C extension needs OpenSSL >= 3.2: on a bookworm host it falls
back to pure Python, while the runner image (trixie, OpenSSL 3.5) uses the C
extension. The bench therefore also runs the runner inside a trixie root
filesystem. A chroot keeps the host's network namespace, so 127.0.0.1 reaches
the MariaDB the bench started.

Cached under .tools/bench-trixie (git-ignored): `rootfs/` (debootstrap, about
30 s the first time) with a venv in /opt/venv, and `wheels/` (downloaded on the
host by download-wheels.sh, since TLS to PyPI fails inside a fresh root
filesystem). Each step leaves a stamp, so a second run only mounts and runs.
Anything that cannot be prepared raises ChrootUnavailableError with the reason.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

SUITE = "trixie"
VENV = PurePosixPath("/opt/venv")
# runner-image/ is bind-mounted here, where the runner image copies its packages
# (runner-image/Dockerfile); PYTHONPATH points at it.
PACKAGES_DIR = PurePosixPath("/opt/dbbench")
WHEELS_STAMP = ".complete"
VENV_STAMP = ".dbbench-wheels"
# Where the wheels are copied inside the root filesystem for the offline install.
STAGED_WHEELS = PurePosixPath("/opt/dbbench-wheels")
SETUP_TIMEOUT_S = 600
GUEST_ENV = {
    "PATH": f"{VENV}/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "PYTHONPATH": str(PACKAGES_DIR),
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "HOME": "/root",
    "LANG": "C.UTF-8",
}


class ChrootUnavailableError(RuntimeError):
    """The chroot could not be prepared or mounted; the message says why."""


@dataclass(frozen=True)
class Bind:
    """A host directory bind-mounted at `guest` (a path inside the root filesystem)."""

    host: Path
    guest: PurePosixPath
    read_only: bool = False


def runner_binds(runner_image: Path) -> list[Bind]:
    """What the runner needs inside the chroot: the whole runner-image/ folder,
    read-only, at /opt/dbbench, so that every package it imports is there (with
    dbbench_runner alone, importing its config failed: no dbbench_contract)."""
    return [Bind(runner_image, PACKAGES_DIR, read_only=True)]


def _tail(text: str | bytes | None, lines: int = 5) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return " | ".join((text or "").strip().splitlines()[-lines:])


def _run(argv: Sequence[str], what: str, env: dict[str, str] | None = None) -> str:
    """Run a setup command; any failure becomes ChrootUnavailableError naming the step."""
    try:
        result = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            check=True,
            timeout=SETUP_TIMEOUT_S,
            env=env,
        )
    except FileNotFoundError as exc:
        raise ChrootUnavailableError(f"{what}: {exc}") from exc
    except subprocess.CalledProcessError as exc:
        raise ChrootUnavailableError(
            f"{what} failed (exit {exc.returncode}): {_tail(exc.stderr or exc.stdout)}"
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise ChrootUnavailableError(f"{what} timed out after {SETUP_TIMEOUT_S} s") from exc
    return result.stdout


def guest_path(rootfs: Path, guest: PurePosixPath) -> Path:
    return rootfs / guest.relative_to("/")


def mounts_under(path: Path) -> list[Path]:
    """Mount points at or below `path`, deepest last (from /proc/self/mountinfo)."""
    prefix = str(path.resolve())
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        # Field 5 is the mount point, with spaces etc. octal-escaped.
        point = line.split()[4].encode().decode("unicode_escape")
        if point == prefix or point.startswith(prefix + "/"):
            found.append(Path(point))
    return found


def _unmount(point: Path) -> str | None:
    """Unmount; fall back to a lazy unmount. Returns an error message or None."""
    result = subprocess.run(["umount", str(point)], capture_output=True, text=True, check=False)
    if result.returncode == 0:
        return None
    lazy = subprocess.run(["umount", "-l", str(point)], capture_output=True, text=True, check=False)
    if lazy.returncode == 0:
        return None
    return f"umount {point}: {_tail(lazy.stderr)}"


def _remove_tree(path: Path) -> None:
    """Delete a (partial) root filesystem, never following a leftover mount into the host."""
    for point in reversed(mounts_under(path)):
        _unmount(point)
    if mounts_under(path):
        raise ChrootUnavailableError(f"{path} still has mounts; not deleting it")
    shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def mounted(rootfs: Path, binds: Sequence[Bind] = ()) -> Iterator[None]:
    """/proc, /dev, /dev/shm (multiprocessing's semaphores) and `binds`; always unmounted."""
    done: list[Path] = []
    try:
        proc = rootfs / "proc"
        _run(["mount", "-t", "proc", "proc", str(proc)], f"mount proc at {proc}")
        done.append(proc)
        # The host's own /dev and its /dev/shm tmpfs, not temporary files.
        for source in ("/dev", "/dev/shm"):
            target = rootfs / source.lstrip("/")
            target.mkdir(parents=True, exist_ok=True)
            _run(["mount", "--bind", source, str(target)], f"bind-mount {source}")
            done.append(target)
        for bind in binds:
            target = guest_path(rootfs, bind.guest)
            target.mkdir(parents=True, exist_ok=True)
            _run(["mount", "--bind", str(bind.host), str(target)], f"bind-mount {bind.host}")
            done.append(target)
            if bind.read_only:
                # A bind mount takes "ro" only on a remount.
                _run(
                    ["mount", "-o", "remount,bind,ro", str(target)],
                    f"remount {target} read-only",
                )
        yield
    finally:
        errors = [error for point in reversed(done) if (error := _unmount(point))]
        if errors:
            raise ChrootUnavailableError("; ".join(errors))


def chroot_argv(rootfs: Path, argv: Sequence[str]) -> list[str]:
    return ["chroot", str(rootfs), *argv]


def _ensure_debootstrap() -> None:
    if shutil.which("debootstrap"):
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    _run(["apt-get", "install", "-y", "-qq", "debootstrap"], "apt-get install debootstrap", env)
    if not shutil.which("debootstrap"):
        raise ChrootUnavailableError("debootstrap is still missing after apt-get install")


def debian_mirror(script: Path) -> str:
    """The Debian mirror this machine's apt uses (hack/debian-mirror.sh, as the
    images' roots are bootstrapped): no host is written into the bench."""
    return _run(
        ["bash", "-c", 'source "$0" && debian_mirror', str(script)], "finding the Debian mirror"
    ).strip()


def _ensure_rootfs(cache: Path, mirror: str) -> Path:
    rootfs = cache / "rootfs"
    if (rootfs / "usr/bin/python3").exists():
        return rootfs
    _ensure_debootstrap()
    partial = cache / "rootfs.partial"
    if partial.exists():
        _remove_tree(partial)
    cache.mkdir(parents=True, exist_ok=True)
    print(f"preparing a Debian {SUITE} chroot in {rootfs} (debootstrap, first run only)...")
    _run(
        [
            "debootstrap",
            "--variant=minbase",
            "--include=python3,python3-venv",
            SUITE,
            str(partial),
            mirror,
        ],
        f"debootstrap {SUITE}",
    )
    # Renamed only when complete, so an interrupted run starts over.
    partial.rename(rootfs)
    return rootfs


def _ensure_wheels(cache: Path, script: Path) -> Path:
    """Wheels for the chroot's Python, re-downloaded whenever the script's pins change."""
    wheels = cache / "wheels"
    digest = hashlib.sha256(script.read_bytes()).hexdigest()
    stamp = wheels / WHEELS_STAMP
    if stamp.exists() and stamp.read_text() == digest:
        return wheels
    if wheels.exists():
        shutil.rmtree(wheels)
    env = {**os.environ, "WHEELS_DIR": str(wheels), "PYTHON_VERSION": "3.13"}
    _run(["bash", str(script)], f"{script.name} (host pip download)", env)
    stamp.write_text(digest)
    return wheels


def _ensure_venv(rootfs: Path, wheels: Path) -> None:
    """/opt/venv with exactly the downloaded wheels, installed offline."""
    names = sorted(path.name for path in wheels.glob("*.whl"))
    if not names:
        raise ChrootUnavailableError(f"no wheels in {wheels}")
    venv = guest_path(rootfs, VENV)
    stamp = venv / VENV_STAMP
    if stamp.exists() and stamp.read_text() == "\n".join(names):
        return
    if venv.exists():
        shutil.rmtree(venv)
    staged = guest_path(rootfs, STAGED_WHEELS)
    shutil.rmtree(staged, ignore_errors=True)
    shutil.copytree(wheels, staged)
    with mounted(rootfs):
        env = {**GUEST_ENV, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        _run(chroot_argv(rootfs, ["python3", "-m", "venv", str(VENV)]), "python3 -m venv", env)
        _run(
            chroot_argv(
                rootfs,
                [
                    f"{VENV}/bin/pip",
                    "install",
                    "--no-index",
                    "--find-links",
                    str(STAGED_WHEELS),
                    *(str(STAGED_WHEELS / name) for name in names),
                ],
            ),
            "pip install (offline) in the chroot",
            env,
        )
    shutil.rmtree(staged, ignore_errors=True)
    stamp.write_text("\n".join(names))


def prepare(cache: Path, wheels_script: Path, mirror_script: Path) -> Path:
    """The ready root filesystem (cached); raises ChrootUnavailableError with the reason."""
    if os.geteuid() != 0:
        raise ChrootUnavailableError("chroot and mount need root")
    rootfs = _ensure_rootfs(cache, debian_mirror(mirror_script))
    wheels = _ensure_wheels(cache, wheels_script)
    _ensure_venv(rootfs, wheels)
    return rootfs
