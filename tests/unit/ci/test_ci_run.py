"""`.ci/run` passes only when every stage ran and passed, the demo and the
end-to-end suite included, and ends itself, naming the stage, at its deadline.

The real stages take most of an hour, so `make` is replaced by a script first
on PATH that records each call and plays the outcome a test asks for (fail,
or take some seconds); everything else is the real script, `timeout` included.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

STUB = r"""#!/bin/bash
printf '%s\n' "$*" >>"$CI_TEST_CALLS"
for target in "$@"; do
  case " ${CI_TEST_SLOW:-} " in *" $target "*) sleep "${CI_TEST_SLOW_SECONDS:-2}" ;; esac
  case " ${CI_TEST_FAIL:-} " in
    *" $target "*) echo "make: *** [$target] Error 2" >&2; exit 2 ;;
  esac
done
exit 0
"""


@dataclass(frozen=True)
class Outcome:
    status: int
    stdout: str
    stderr: str
    calls: list[str]  # the make command lines, in order


def run_ci(
    tmp_path: Path, *, fail: str = "", slow: str = "", env: dict[str, str] | None = None
) -> Outcome:
    """`bash .ci/run`, `make` stubbed: ``fail`` targets fail, ``slow`` ones sleep."""
    work = Path(tempfile.mkdtemp(dir=tmp_path))
    (work / "bin").mkdir()
    stub = work / "bin" / "make"
    stub.write_text(STUB)
    stub.chmod(0o755)
    calls = work / "calls.txt"
    calls.touch()
    env = {
        "PATH": f"{work / 'bin'}:/usr/bin:/bin",
        "CI_TEST_CALLS": str(calls),
        "CI_TEST_FAIL": fail,
        "CI_TEST_SLOW": slow,
        **(env or {}),
    }
    result = subprocess.run(
        ["bash", str(REPO / ".ci" / "run")],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    return Outcome(result.returncode, result.stdout, result.stderr, calls.read_text().splitlines())


def targets(outcome: Outcome) -> list[str]:
    return [line.split()[0] for line in outcome.calls]


ALL_STAGES = ["setup", "free-build-caches", "test", "demo", "e2e", "cluster-down"]


def test_every_stage_passing_passes_and_the_demo_and_e2e_ran(tmp_path: Path) -> None:
    outcome = run_ci(tmp_path)
    assert outcome.status == 0, outcome.stderr
    assert targets(outcome) == ALL_STAGES
    for stage in ("setup", "test", "demo", "e2e"):
        assert re.search(rf"^=== make {stage}: passed in \d+ s$", outcome.stdout, re.M), stage


def test_a_failing_demo_fails_ci_naming_it_and_the_cluster_is_taken_down(tmp_path: Path) -> None:
    outcome = run_ci(tmp_path, fail="demo")
    assert outcome.status != 0
    assert "CI FAILED: make demo exited 2" in outcome.stderr
    assert targets(outcome) == ["setup", "free-build-caches", "test", "demo", "cluster-down"]


def test_a_failing_e2e_fails_ci_naming_it_and_the_cluster_is_taken_down(tmp_path: Path) -> None:
    outcome = run_ci(tmp_path, fail="e2e")
    assert outcome.status != 0
    assert "CI FAILED: make e2e exited 2" in outcome.stderr
    # The demo's cluster serves the suite (no cluster-down between), then goes.
    assert targets(outcome) == ALL_STAGES


def test_the_e2e_stage_gets_its_own_pytest_args_not_make_tests(tmp_path: Path) -> None:
    outcome = run_ci(tmp_path, env={"PYTEST_ARGS": "-k unit", "E2E_PYTEST_ARGS": "-x"})
    assert outcome.status == 0, outcome.stderr
    calls = dict(line.split(" ", 1) for line in outcome.calls if " " in line)
    assert calls["test"] == "PYTEST_ARGS=-k unit"
    assert calls["e2e"] == "PYTEST_ARGS=-x"


def test_a_demo_whose_cluster_cannot_come_up_fails_ci(tmp_path: Path) -> None:
    # `make demo` depends on cluster-up; when the node cannot start, make stops there.
    outcome = run_ci(tmp_path, fail="demo cluster-up")
    assert outcome.status != 0
    assert "CI FAILED: make demo" in outcome.stderr


def test_slow_builds_never_skip_the_demo(tmp_path: Path) -> None:
    """A slow stage before it leaves the demo to run; it is never passed without it.

    (Before: past 45 minutes .ci/run printed "NOT RUN: make demo" and exited 0.)
    """
    slow = {"CI_DEADLINE_SECONDS": "20", "CI_TEST_SLOW_SECONDS": "3"}
    outcome = run_ci(tmp_path, slow="test", fail="demo", env=slow)
    assert outcome.status != 0, outcome.stdout + outcome.stderr
    assert "demo" in targets(outcome)
    assert "CI FAILED: make demo" in outcome.stderr
    passing = run_ci(tmp_path, slow="test", env=slow)
    assert passing.status == 0, passing.stderr
    assert "demo" in targets(passing)


def test_a_stage_still_running_at_the_deadline_is_stopped_and_named(tmp_path: Path) -> None:
    """CI's runner kills at 90 minutes saying nothing; .ci/run stops first, naming the stage."""
    started = time.monotonic()
    outcome = run_ci(
        tmp_path, slow="e2e", env={"CI_DEADLINE_SECONDS": "4", "CI_TEST_SLOW_SECONDS": "50"}
    )
    assert time.monotonic() - started < 30, "the hung stage was waited for"
    assert outcome.status == 124, outcome.stdout + outcome.stderr
    assert "CI FAILED: make e2e still running at CI's deadline (4 s)" in outcome.stderr
    # The cluster still goes.
    assert targets(outcome)[-1] == "cluster-down"


def test_a_short_disk_is_said_before_anything_is_built(tmp_path: Path) -> None:
    outcome = run_ci(tmp_path, env={"CI_DISK_NEEDED_GB": "100000000"})
    assert outcome.status == 0, outcome.stderr
    warning = r"^WARNING: \d+ GB free here; a CI run from nothing needs about"
    assert re.search(warning, outcome.stderr, re.M)
    assert "WARNING" not in run_ci(tmp_path, env={"CI_DISK_NEEDED_GB": "0"}).stderr


def test_a_failing_earlier_stage_fails_ci_without_the_demo(tmp_path: Path) -> None:
    outcome = run_ci(tmp_path, fail="test")
    assert outcome.status != 0
    assert "CI FAILED: make test exited 2" in outcome.stderr
    assert "demo" not in targets(outcome)
