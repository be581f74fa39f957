"""The no-op loop's length: 0.3 s in a pod, shorter where DBBENCH_NOOP_LOOP_SECONDS
says (the test suite sets it: tests/conftest.py), and a bad value refused."""

from __future__ import annotations

import pytest

from dbbench_runner.calibration import (
    CALIBRATION_S,
    SECONDS_VARIABLE,
    calibration_seconds,
    noop_loop,
)
from dbbench_runner.config import StepConfig, parse_config
from dbbench_runner.datasets import generator_for


def _config() -> StepConfig:
    return parse_config({
        "target": {"name": "m", "engine": "mariadb", "host": "127.0.0.1", "port": 1},
        "dataset": {"shape": "flat45", "records": 1000},
        "phase": {"name": "p", "type": "pointReads", "duration": "30s", "targetRate": 5},
        "threads": 1,
    })  # fmt: skip


def test_unset_the_loop_runs_its_full_length(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SECONDS_VARIABLE, raising=False)
    assert calibration_seconds() == CALIBRATION_S == 0.3
    config = _config()
    loop = noop_loop(config, generator_for(config.dataset))
    assert loop.seconds >= CALIBRATION_S
    assert loop.operations > 0
    assert loop.cpu_per_op_us
    assert loop.wall_per_op_us


def test_the_variable_shortens_it_and_the_record_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECONDS_VARIABLE, "0.02")
    config = _config()
    loop = noop_loop(config, generator_for(config.dataset))
    # Unpaced whatever the phase's rate: thousands of operations in 20 ms.
    assert 0.02 <= loop.seconds < CALIBRATION_S
    assert loop.operations > 100


@pytest.mark.parametrize("raw", ["0", "-1", "abc", "61"])
def test_a_bad_value_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv(SECONDS_VARIABLE, raw)
    with pytest.raises(ValueError, match=f"{SECONDS_VARIABLE}='{raw}': give seconds"):
        calibration_seconds()
