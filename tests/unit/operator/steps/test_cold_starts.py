"""Which steps start with a restart and a page-cache drop: the operator's decision
(`steps/cold_cache.needed`, from `specs/plan.cold_starts`), asked for every step
of a plan as `steps/advancing` asks it before starting each step.

coldOnce restarts each target exactly once, before its first measured step, and
never before a repeat or a later phase; cold before every measured step; warm
never. A coldOnce that restarted per repeat, or never, fails here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_contract.api import BenchmarkRunSpec, parse_spec
from dbbench_operator.specs.plan import plan
from dbbench_operator.steps.cold_cache import needed, not_allowed

FIELD = Path(__file__).resolve().parents[4] / "examples" / "field"
INSERT = {"name": "insert", "type": "insert"}
GET = {"name": "get", "type": "pointReads", "operations": 1000}
UPDATE = {"name": "update", "type": "mix", "mix": {"update": 1}, "operations": 1000}


def run_spec(cache: str, phases: list[dict[str, Any]], repeats: int = 3) -> BenchmarkRunSpec:
    return parse_spec({
        "targets": [{"name": "maria", "engine": "mariadb"}, {"name": "pg", "engine": "postgresql"}],
        "phases": phases, "repeats": repeats, "cache": cache,
    })  # fmt: skip


def restarted(spec: BenchmarkRunSpec) -> list[tuple[str, str, int]]:
    """(target, phase, repeat) of every step the operator restarts the databases for."""
    steps = plan(spec)
    return [(s.target, s.phase, s.repeat) for s in steps if needed(spec, steps, s)]


def test_cold_once_restarts_each_target_once_before_its_first_measured_step() -> None:
    spec = run_spec("coldOnce", [INSERT, GET, UPDATE])
    # Per target: insert, get r1-r3, update r1-r3; the restart after the load only.
    assert restarted(spec) == [("maria", "get", 1), ("pg", "get", 1)]


def test_cold_once_never_restarts_before_a_repeat_or_a_later_phase() -> None:
    spec = run_spec("coldOnce", [INSERT, GET, UPDATE], repeats=5)
    steps = plan(spec)
    for target in ("maria", "pg"):
        mine = [s for s in steps if s.target == target]
        cold = [s for s in mine if needed(spec, steps, s)]
        assert len(cold) == 1, cold
        assert not any(needed(spec, steps, s) for s in mine if s.repeat > 1)
        assert not any(needed(spec, steps, s) for s in mine if s.phase == "update")


def test_cold_restarts_before_every_measured_step_and_each_repeat() -> None:
    spec = run_spec("cold", [INSERT, GET, UPDATE], repeats=2)
    expected = [(t, p, r) for t in ("maria", "pg") for p in ("get", "update") for r in (1, 2)]
    assert restarted(spec) == expected


def test_warm_never_restarts() -> None:
    assert restarted(run_spec("warm", [INSERT, GET, UPDATE])) == []


def test_cold_once_counts_a_reading_phase_before_the_load_as_the_first_measured() -> None:
    spec = run_spec("coldOnce", [GET, INSERT, UPDATE], repeats=2)
    assert restarted(spec) == [("maria", "get", 1), ("pg", "get", 1)]


def test_a_target_that_only_loads_is_never_restarted() -> None:
    spec = run_spec("coldOnce", [INSERT, {"name": "more", "type": "insert"}])
    assert restarted(spec) == []


def test_the_decision_reads_the_plan_not_the_phase_name() -> None:
    """A step of the same phase and repeat later in a plan (another target's) is not
    its target's first measured step twice over: each target gets its own."""
    spec = run_spec("coldOnce", [INSERT, GET], repeats=1)
    steps = plan(spec)
    first = [s for s in steps if needed(spec, steps, s)]
    assert [(s.index, s.target) for s in first] == [(1, "maria"), (3, "pg")]


@pytest.mark.parametrize("name", ["5-news-crud-with-tags-index", "5-news-crud-without-tags-index"])
@pytest.mark.parametrize("variant", ["", "-small"])
def test_field_benchmark_5_restarts_once_then_runs_the_operations_three_times(
    name: str, variant: str
) -> None:
    """The original restarted the server once, then ran the updates three times
    without a restart in between."""
    body = yaml.safe_load((FIELD / f"{name}{variant}.yaml").read_text())
    spec = parse_spec(body["spec"])
    assert spec.cache == "coldOnce"
    targets = [t.name for t in spec.targets]
    assert restarted(spec) == [(t, "get-by-id", 1) for t in targets]
    steps = plan(spec)
    for target in targets:
        after = [s for s in steps if s.target == target and s.phase_type != "insert"]
        assert [(s.phase, s.repeat) for s in after if s.phase == "update-by-id"] == [
            ("update-by-id", 1), ("update-by-id", 2), ("update-by-id", 3)]  # fmt: skip


def test_a_cold_once_run_without_the_charts_permission_is_refused_naming_its_mode() -> None:
    reason, message = not_allowed(run_spec("coldOnce", [INSERT, GET]))
    assert reason == "ColdCacheNotAllowed"
    assert "spec.cache: coldOnce" in message
    assert "coldCache.allowPrivilegedPods=true" in message
