"""`make setup` (hack/setup.sh): lanes at once, the first failure stops the rest.

The lanes' real work (Go builds, debootstrap) takes most of half an hour, so
the test sources the real script and replaces the lane functions and `make`
with short bash functions; the scheduling, the logs and the stopping are the
script's own.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def run_setup(tmp_path: Path, lanes: str) -> tuple[subprocess.CompletedProcess[str], float]:
    script = f"""
source {REPO / "hack" / "setup.sh"}
{lanes}
make() {{ echo "make $*" >>{tmp_path / "calls"}; }}
main
"""
    env = {"PATH": "/usr/bin:/bin", "SETUP_LOGS": str(tmp_path / "logs"),
           "TOOLS_DIR": str(tmp_path / "tools")}  # fmt: skip
    # Files, not pipes: a test may leave a process holding the output open,
    # and setup's own end is what is timed.
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    started = time.monotonic()
    with out.open("w") as stdout, err.open("w") as stderr:
        code = subprocess.run(
            ["bash", "-c", script], env=env, stdout=stdout, stderr=stderr, timeout=120, check=False
        ).returncode
    took = time.monotonic() - started
    return subprocess.CompletedProcess([], code, out.read_text(), err.read_text()), took


def test_all_lanes_run_at_once_then_the_images(tmp_path: Path) -> None:
    lanes = """
lane_kube() { echo built; sleep 2; }
lane_go() { echo built; sleep 2; }
lane_fetch() { echo fetched; sleep 2; }
"""
    result, took = run_setup(tmp_path, lanes)
    assert result.returncode == 0, result.stdout + result.stderr
    assert took < 5, f"the lanes ran one after another ({took:.1f} s)"
    assert "[kube] built" in result.stdout
    assert "[fetch] fetched" in result.stdout
    assert (tmp_path / "logs" / "go.log").read_text() == "[go] built\n"
    calls = (tmp_path / "calls").read_text().split("\n")
    assert calls[0].endswith("tools cluster-tools images venv"), calls
    assert f"TOOLS_DIR={tmp_path / 'tools'}" in calls[0]


def test_the_first_failing_lane_fails_setup_and_stops_the_others(tmp_path: Path) -> None:
    """The other lanes and the failed lane's own background steps are stopped."""
    pids = tmp_path / "pids"
    lanes = f"""
lane_kube() {{ sleep 60 & echo $! >>{pids}; sleep 1; echo "go: build failed" >&2; exit 3; }}
lane_go() {{ sleep 60 & echo $! >>{pids}; wait; echo finished >>{tmp_path / "finished"}; }}
lane_fetch() {{ sleep 60 & echo $! >>{pids}; wait; echo finished >>{tmp_path / "finished"}; }}
"""
    result, took = run_setup(tmp_path, lanes)
    assert result.returncode == 3
    assert "lane kube FAILED (exit 3)" in result.stdout
    assert "[kube] go: build failed" in result.stdout
    assert took < 30, f"the other lanes were waited for ({took:.0f} s)"
    assert not (tmp_path / "finished").exists()
    assert not (tmp_path / "calls").exists(), "the images were built after a failure"
    for pid in pids.read_text().split():
        assert not Path(f"/proc/{pid}").exists() or _zombie(int(pid)), f"lane process {pid} left"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True


def test_lanes_start_in_the_repository(tmp_path: Path) -> None:
    lanes = f"""
lane_kube() {{ pwd >{tmp_path / "cwd"}; }}
lane_go() {{ :; }}
lane_fetch() {{ :; }}
"""
    result, _ = run_setup(tmp_path, lanes)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "cwd").read_text().strip() == str(REPO)
    assert os.access(REPO / "hack" / "setup.sh", os.X_OK)


def test_a_lane_that_cannot_write_its_status_still_ends_setup(tmp_path: Path) -> None:
    """A full disk: the lane's status file takes no bytes (here /dev/full).

    CI once ran out of disk in the go lane and setup then waited for that
    lane's status until CI's 90 minutes were up.
    """
    status = tmp_path / "logs" / "go.status"
    lanes = f"""
lane_kube() {{ sleep 60; }}
lane_go() {{ sleep 1; ln -sf /dev/full {status}; echo "no space left on device" >&2; exit 4; }}
lane_fetch() {{ sleep 60; }}
"""
    result, took = run_setup(tmp_path, lanes)
    assert result.returncode == 4, result.stdout + result.stderr
    assert "lane go ended without writing" in result.stderr
    assert "lane go FAILED (exit 4)" in result.stdout
    assert took < 30, f"setup waited for the other lanes ({took:.0f} s)"


def test_output_held_open_after_a_failure_is_not_waited_for(tmp_path: Path) -> None:
    """A process that left the lane's session keeps its output pipe open."""
    lanes = f"""
lane_kube() {{ setsid sleep 300 & echo $! >{tmp_path / "escaped"}; sleep 1; exit 5; }}
lane_go() {{ sleep 60; }}
lane_fetch() {{ sleep 60; }}
"""
    try:
        result, took = run_setup(tmp_path, lanes)
    finally:
        escaped = (tmp_path / "escaped").read_text().strip()
        subprocess.run(["kill", escaped], check=False)
    assert result.returncode == 5, result.stdout + result.stderr
    assert took < 60, f"setup waited for the escaped process ({took:.0f} s)"


def lane_steps(tmp_path: Path, build: str) -> list[str]:
    """The steps the real go and fetch lanes run, with `step` only recording them."""
    calls = tmp_path / f"steps-{build}"
    script = f"""
source {REPO / "hack" / "setup.sh"}
step() {{ echo "$*" >>{calls}; }}
lane_go
lane_fetch
"""
    env = {"PATH": "/usr/bin:/bin", "DBBENCH_BUILD": build, "SETUP_LOGS": str(tmp_path / "logs")}
    subprocess.run(["bash", "-c", script], env=env, check=True, timeout=60)
    return calls.read_text().splitlines()


def test_the_demo_builds_only_what_the_quickstart_runs(tmp_path: Path) -> None:
    everything = lane_steps(tmp_path, "all")
    demo = lane_steps(tmp_path, "demo")
    assert "bash hack/tools.sh helm ferretdb dashboard-check podmonitor-crd" in everything
    assert "bash hack/tools.sh mysql" in everything
    assert "bash hack/tools.sh helm" in demo
    assert not [s for s in demo if "ferretdb" in s or "mysql" in s or "dashboard" in s], demo
    # The images that need no Go-built tool are built in the fetch lane.
    images = "bash hack/cluster/images.sh pause busybox python-base runner mariadb"
    assert images in demo
    assert f"{images} mysql postgresql" in everything
    # Both build the node's own tools, the images' roots and wheels, and the venv.
    shared = [
        "bash hack/cluster-tools.sh go",
        "bash hack/cluster-tools.sh debian",
        "bash hack/cluster/images.sh roots",
        "bash hack/cluster/images.sh wheels",
    ]
    assert set(shared) <= set(demo)
    assert set(shared) <= set(everything)
