"""One duration syntax: whatever the CRD admits, every program parses the same."""

from __future__ import annotations

import random
import re

import pytest

from dbbench_contract.api import BenchmarkRunSpec
from dbbench_contract.api.units import DURATION_PATTERN as OPERATOR_PATTERN
from dbbench_contract.durations import DURATION_PATTERN, format_duration, parse_duration
from dbbench_contract.step import Phase
from dbbench_runner.config import parse_duration as runner_parse

UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def _random_duration(rng: random.Random) -> tuple[str, float]:
    parts = [(rng.randint(0, 999), rng.choice(list(UNITS))) for _ in range(rng.randint(1, 4))]
    return "".join(f"{n}{u}" for n, u in parts), sum(n * UNITS[u] for n, u in parts)


def test_the_crd_and_the_runner_share_one_pattern_and_one_parser() -> None:
    assert OPERATOR_PATTERN == DURATION_PATTERN
    assert runner_parse is parse_duration


@pytest.mark.parametrize("seed", range(5))
def test_every_duration_the_pattern_admits_runs_in_the_runner(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(200):
        text, seconds = _random_duration(rng)
        assert re.fullmatch(DURATION_PATTERN, text)
        phase = Phase.model_validate({"name": "p", "type": "mix", "mix": {"read": 1},
                                      "duration": text, "warmup": text})  # fmt: skip
        assert phase.duration == pytest.approx(seconds)
        assert phase.warmup == pytest.approx(seconds)


def test_the_issue_example_one_and_a_half_hours() -> None:
    # The CRD's help text offers 1h30m; the runner used to exit 2 on it.
    assert parse_duration("1h30m") == 5400
    phase = Phase.model_validate({"name": "p", "type": "mix", "mix": {"read": 1},
                                  "duration": "1h30m", "warmup": "1m30s"})  # fmt: skip
    assert (phase.duration, phase.warmup) == (5400, 90)


def test_the_api_model_admits_what_the_runner_parses() -> None:
    spec = BenchmarkRunSpec.model_validate({
        "targets": [{"name": "t", "engine": "mariadb"}],
        "dataset": {"shape": "flat45", "records": 10},
        "phases": [{"name": "p", "type": "mix", "mix": {"read": 1}, "duration": "1h30m",
                    "warmup": "2m5s"}],
        "timeout": "3h15m",
    })  # fmt: skip
    phase = spec.phases[0]
    assert phase.duration is not None
    assert phase.warmup is not None
    assert parse_duration(phase.duration) == 5400
    assert parse_duration(phase.warmup) == 125


@pytest.mark.parametrize("text", ["5 minutes", "1.5s", "12", "", "1d", "-5s", "5S"])
def test_what_the_crd_refuses_the_runner_refuses_too(text: str) -> None:
    assert not re.fullmatch(DURATION_PATTERN, text)
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


def test_format_round_trips() -> None:
    assert format_duration(3725) == "1h2m5s"
    assert parse_duration(format_duration(3725)) == 3725
