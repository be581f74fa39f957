"""Where results live: the run's, a step's and a pod's directories, and the files a
step holds, as the runner really writes them (a pod's directory and the merged
step's hold the same names, every one the report needs among them)."""

from __future__ import annotations

from pathlib import Path

from dbbench_contract import layout
from dbbench_contract.environment import Environment, RunnerPod, TargetInfo
from dbbench_runner.drivers.base import StorageSample
from dbbench_runner.measurement import Measurements
from dbbench_runner.merge import merge
from dbbench_runner.operations import Status
from dbbench_runner.results import RunMeta, write_results
from dbbench_runner.storage import StorageRow


def test_a_steps_files_are_under_its_run_target_phase_and_repeat() -> None:
    run = layout.run_prefix("team-a", "nightly", "0b6f")
    step = layout.step_dir("mariadb", "load", 2)
    assert f"{run}/{step}/{layout.pod_dir(1)}" == "team-a/nightly/0b6f/mariadb/load/2/pod-1"
    assert layout.pod_dir(1).startswith(layout.POD_PREFIX)
    assert layout.histogram_file("read") == "histograms/read.hlog"


def write_pod(out: Path, pod: int) -> None:
    meta = RunMeta(target="mariadb", engine="mariadb", phase="load", type="insert",
                   pods=(pod,), pod_count=2, threads=1, started=1000.0, ended=1001.0,
                   report_every=10, max_error_rate=0.0, server_version="10.11",
                   series_unit="records")  # fmt: skip
    measured = Measurements(checkpoint_every=10, series_unit="records")
    for n in range(40):
        measured.record("insert", 300 + n, Status(ok=True, rows=1), 1000.0 + n / 40)
    measured.flush(1001.0)
    storage = [StorageRow(1001.0, StorageSample(0, 0, 0, 0), before=0, written=40)]
    environment = Environment(target=TargetInfo(name="mariadb", engine="mariadb"),
                              pod=RunnerPod(index=pod))  # fmt: skip
    write_results(out, meta, measured, storage, environment)


def names(directory: Path) -> set[str]:
    return {str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file()}


def test_a_pods_directory_and_its_merged_step_hold_the_same_files(tmp_path: Path) -> None:
    pods = [tmp_path / layout.pod_dir(i) for i in range(2)]
    for index, directory in enumerate(pods):
        write_pod(directory, index)
    merge(tmp_path / "step", pods)
    written = names(pods[0])
    assert set(layout.STEP_FILES) <= written
    assert layout.histogram_file("insert") in written
    assert names(tmp_path / "step") == written == names(pods[1])
