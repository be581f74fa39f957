"""One duration syntax, parsed once: whatever the CRD admits, every program gets
as seconds from the model it reads (the spec, the step file)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from dbbench_contract.api import BenchmarkRunSpec
from dbbench_contract.api.phases import Phase
from dbbench_contract.durations import DURATION_PATTERN, Duration, format_duration
from dbbench_runner.config import parse_config

UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
REPO = Path(__file__).resolve().parents[3]


def _random_duration(rng: random.Random) -> tuple[str, float]:
    parts = [(rng.randint(0, 999), rng.choice(list(UNITS))) for _ in range(rng.randint(1, 4))]
    return "".join(f"{n}{u}" for n, u in parts), sum(n * UNITS[u] for n, u in parts)


@pytest.mark.parametrize("seed", range(5))
def test_every_duration_the_pattern_admits_is_seconds_in_the_model(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(200):
        text, seconds = _random_duration(rng)
        assert re.fullmatch(DURATION_PATTERN, text)
        phase = Phase.model_validate({"name": "p", "type": "mix", "mix": {"read": 1},
                                      "duration": text, "warmup": text})  # fmt: skip
        assert phase.duration is not None
        assert phase.duration.seconds == pytest.approx(seconds)
        assert phase.warmup_seconds == pytest.approx(seconds)
        # Written back as given, so a spec or a summary shows what the user wrote.
        assert phase.model_dump(mode="json")["duration"] == text


def test_the_issue_example_one_and_a_half_hours_reaches_the_runner_as_seconds() -> None:
    # The CRD's help text offers 1h30m; the runner used to exit 2 on it.
    config = parse_config({
        "target": {"name": "t", "engine": "mariadb", "host": "h"},
        "dataset": {"shape": "flat45", "records": 10},
        "phase": {"name": "p", "type": "mix", "mix": {"read": 1}, "duration": "1h30m",
                  "warmup": "1m30s"},
    })  # fmt: skip
    assert (config.duration, config.warmup) == (5400, 90)


def test_the_spec_holds_its_durations_in_seconds() -> None:
    spec = BenchmarkRunSpec.model_validate({
        "targets": [{"name": "t", "engine": "mariadb"}],
        "dataset": {"shape": "flat45", "records": 10},
        "phases": [{"name": "p", "type": "mix", "mix": {"read": 1}, "duration": "1h30m",
                    "warmup": "2m5s"}],
        "timeout": "3h15m",
    })  # fmt: skip
    phase = spec.phases[0]
    assert phase.duration == Duration.parse("1h30m")
    assert phase.measured_seconds == 5400 + 125
    assert (spec.timeout.seconds, spec.startup_grace.seconds) == (3 * 3600 + 15 * 60, 300)


@pytest.mark.parametrize("text", ["5 minutes", "1.5s", "12", "", "1d", "-5s", "5S"])
def test_what_the_crd_refuses_the_model_refuses_too(text: str) -> None:
    assert not re.fullmatch(DURATION_PATTERN, text)
    with pytest.raises(ValueError, match="not a duration"):
        Duration.parse(text)
    with pytest.raises(ValueError, match="String should match pattern"):
        Phase.model_validate({"name": "p", "type": "mix", "mix": {"read": 1}, "duration": text})


def test_format_round_trips() -> None:
    assert format_duration(3725) == "1h2m5s"
    assert Duration.parse(format_duration(3725)).seconds == 3725
    assert Duration.of_seconds(0.3) == Duration.parse("300ms")


def test_no_program_parses_a_duration_string_but_the_models_type() -> None:
    # Parsed once, when a spec or a step file is read into its model.
    callers = sorted(
        str(path.relative_to(REPO))
        for root in ("operator", "runner-image", "client")
        for path in (REPO / root).rglob("*.py")
        if "parse_duration(" in path.read_text()
    )
    assert callers == ["runner-image/dbbench_contract/durations.py"]
