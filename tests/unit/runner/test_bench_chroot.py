"""`make bench`'s Debian trixie chroot gets every package the runner imports.

The bench runs `python -m dbbench_runner` inside a chroot whose Python path is
only what it bind-mounts (hack/bench/trixie_chroot.py). With the
dbbench_runner folder alone, the runner exited with 1 importing its config
(no dbbench_contract) and the connector C-extension rows were missing. Here
the chroot's folder is laid out on the host from the same bind list, and a
Python without site (so without the project's editable install) imports
every runner module from it.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[3]
RUNNER_IMAGE = REPO / "runner-image"

IMPORT_ALL = """
import importlib, pkgutil, dbbench_runner
names = [m.name for m in pkgutil.walk_packages(dbbench_runner.__path__, "dbbench_runner.")
         if m.name != "dbbench_runner.__main__"]  # which would run the command line
for name in names:
    importlib.import_module(name)
print(len(names), dbbench_runner.__file__)
"""


def trixie_chroot() -> ModuleType:
    """The bench's module, loaded from its file (hack/bench is no package)."""
    name = "dbbench_bench_trixie_chroot"
    if name in sys.modules:
        return sys.modules[name]
    path = REPO / "hack" / "bench" / "trixie_chroot.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_chroot_gets_every_package_the_runner_imports(tmp_path: Path) -> None:
    chroot = trixie_chroot()
    rootfs = tmp_path / "rootfs"
    binds = chroot.runner_binds(RUNNER_IMAGE)
    assert binds, "no bind for the runner's packages"
    for bind in binds:
        guest = chroot.guest_path(rootfs, bind.guest)
        guest.parent.mkdir(parents=True, exist_ok=True)
        guest.symlink_to(bind.host, target_is_directory=True)
    python_path = chroot.guest_path(rootfs, chroot.PurePosixPath(chroot.GUEST_ENV["PYTHONPATH"]))
    # -S: no site, so neither the editable install nor the repository is on the
    # path; the libraries come from the venv as the chroot's venv provides them.
    env = {**os.environ, "PYTHONPATH": f"{python_path}:{sysconfig.get_paths()['purelib']}"}
    env.pop("PYTHONSAFEPATH", None)
    result = subprocess.run(
        [sys.executable, "-S", "-c", IMPORT_ALL],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    count, location = result.stdout.split()
    assert int(count) > 20, result.stdout  # every module of the runner was imported
    assert Path(location).is_relative_to(python_path), location


def test_the_bench_scripts_find_their_modules_where_they_live() -> None:
    """`make bench` runs hack/bench/bench_runner.py as a script; its imports (the
    sibling modules as `bench`, hack's dbbench_local, the runner) resolve from the
    file's own place, not from the caller's path (moved from runner-image/bench,
    it once failed at its first import: No module named 'bench')."""
    script = REPO / "hack" / "bench" / "bench_runner.py"
    code = f"import runpy; runpy.run_path({str(script)!r}, run_name='bench_imports_only')"
    done = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
