"""`dbbench check` (issue 29): every admission check offline, with the API
server's and the operator's own messages. That they are the API server's and
the operator's own: tests/integration/cli/test_check_cli_at_the_api_server.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dbbench_contract.api.apiserver import go_float
from tests.support.manifests import (
    INVALID,
    INVALID_SCHEDULES,
    REFUSED_SCHEDULES,
    REPO,
    SCHEDULE_EXAMPLES,
    expected_message,
)

EXAMPLES = sorted((REPO / "examples").glob("*.yaml")) + sorted(
    (REPO / "examples" / "field").glob("*.yaml")
)
REFUSED = sorted((REPO / "tests" / "data" / "refused").glob("*.yaml"))
# More ways the API server words a refusal (types, counts, nulls, metadata, several at once).
WORDING = sorted((REPO / "tests" / "data" / "apiserver").glob("*.yaml"))


def dbbench_check(*paths: Path, claim: str | None = None) -> subprocess.CompletedProcess[str]:
    """The installed command's code path: `python -m dbbench_cli check ...`."""
    extra = ["--results-claim", claim] if claim else []
    return subprocess.run(
        [sys.executable, "-m", "dbbench_cli", "check", *map(str, paths), *extra],
        capture_output=True, text=True, check=False, cwd=REPO, timeout=300,
    )  # fmt: skip


def cli_refusals(output: str, path: Path) -> list[tuple[str, str]]:
    """(field, message) of each line `dbbench check` printed for `path`."""
    prefix = f"{path}: "
    found = []
    for line in output.splitlines():
        if line.startswith(prefix) and line != f"{path}: OK":
            field, _, message = line.removeprefix(prefix).partition(": ")
            found.append((field, message))
    return found


def test_every_example_passes_and_the_command_exits_zero() -> None:
    assert len(EXAMPLES) >= 20
    result = dbbench_check(*EXAMPLES)
    assert result.returncode == 0, result.stdout + result.stderr
    for path in EXAMPLES:
        assert f"{path}: OK" in result.stdout.splitlines(), path
    assert f"checked {len(EXAMPLES)} file(s): {len(EXAMPLES)} OK, 0 refused" in result.stdout


@pytest.mark.parametrize(("corpus", "least"), [("invalid", 80), ("refused", 8), ("apiserver", 12)])
def test_every_refused_manifest_is_refused_with_its_message(corpus: str, least: int) -> None:
    paths = {"invalid": INVALID, "refused": REFUSED, "apiserver": WORDING}[corpus]
    assert len(paths) >= least
    relative = [p.relative_to(REPO) for p in paths]
    result = dbbench_check(*relative)
    assert result.returncode == 1
    for path in relative:
        lines = [f"{f}: {m}" for f, m in cli_refusals(result.stdout, path)]
        assert lines, f"{path} was not refused"
        assert any(expected_message(REPO / path) in line for line in lines), (path, lines)
    assert f"0 OK, {len(paths)} refused" in result.stdout


def test_schedules_are_checked_as_the_api_server_and_the_operator_would() -> None:
    """A BenchmarkSchedule: its CRD's refusals, then the operator's (cron values, time
    zone, the template as a run); the example passes."""
    paths = [p.relative_to(REPO) for p in (*INVALID_SCHEDULES, *REFUSED_SCHEDULES)]
    assert len(INVALID_SCHEDULES) >= 10
    assert len(REFUSED_SCHEDULES) >= 5
    result = dbbench_check(*paths)
    assert result.returncode == 1
    for path in paths:
        lines = [f"{f}: {m}" for f, m in cli_refusals(result.stdout, path)]
        assert any(expected_message(REPO / path) in line for line in lines), (path, lines)
    examples = [p.relative_to(REPO) for p in SCHEDULE_EXAMPLES]
    passed = dbbench_check(*examples)
    assert passed.returncode == 0, passed.stdout
    assert all(f"{p}: OK" in passed.stdout.splitlines() for p in examples), passed.stdout


def test_the_results_claim_is_the_installations(tmp_path: Path) -> None:
    path = REPO / "tests" / "data" / "refused" / "results-claim-other.yaml"
    assert dbbench_check(path).returncode == 1
    assert dbbench_check(path, claim="my-own-claim").returncode == 0


def test_unreadable_files_and_other_kinds_are_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("spec: [unclosed\n")
    secret = tmp_path / "secret.yaml"
    secret.write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n")
    both = tmp_path / "both.yaml"
    both.write_text(secret.read_text() + "---\n" + (REPO / "examples/quickstart.yaml").read_text())
    result = dbbench_check(broken, secret, tmp_path / "missing.yaml", both)
    assert result.returncode == 1
    out = result.stdout
    assert f"{broken}: error: " in out
    assert f"{secret}: error: no BenchmarkRun in the file" in out  # nor a BenchmarkSchedule
    assert f"{tmp_path / 'missing.yaml'}: error: " in out
    assert f"{both}#2: OK" in out


def test_go_number_formatting() -> None:
    shown = [go_float(v) for v in (0, 1, 0.05, 1e8, 123456, 1234567, 1e-05, 0.0001, -1.5)]
    assert shown == ["0", "1", "0.05", "1e+08", "123456", "1.234567e+06", "1e-05", "0.0001",
                     "-1.5"]  # fmt: skip
