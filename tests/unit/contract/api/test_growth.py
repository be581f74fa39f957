"""Issue 30, item 1: "load to N in K steps and measure these phases after each
step", expanded into the run's steps (pure: dbbench_contract.api.phase_order).

The same expansion gives the operator's plan and each step's records
(tests/unit/operator/specs/test_growth_plan.py) and the admission checks
below; the reads it plans are observed at real servers in
tests/integration/operator/specs/test_growth_at_the_server.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from dbbench_contract.api import check, parse_spec, planned_seconds
from dbbench_contract.api.phase_order import part, phase_runs

TARGETS = [{"name": "db", "engine": "mariadb"}]


def spec_of(phases: list[dict[str, Any]], **extra: Any) -> Any:
    raw = {"targets": TARGETS, "dataset": {"shape": "indexed4", "records": 1000},
           "phases": phases, **extra}  # fmt: skip
    return parse_spec(raw)


GROWN = {"name": "load", "type": "insert", "operations": 1200,
         "growth": {"steps": 3, "measure": ["reads", "queries"]}}  # fmt: skip
READS = {"name": "reads", "type": "pointReads", "duration": "10s"}
QUERIES = {"name": "queries", "type": "query", "operations": 100}


def runs_of(spec: Any) -> list[tuple[str, int, int, int, int]]:
    """(phase, repeat, records loaded, growth step, records 1..loaded present)."""
    return [(r.phase.name, r.repeat, r.records, r.growth_step, r.loaded)
            for r in phase_runs(spec)]  # fmt: skip


def test_each_part_is_followed_by_the_measured_phases_in_list_order() -> None:
    spec = spec_of([GROWN, READS, QUERIES], repeats=2)
    assert runs_of(spec) == [
        ("load", 1, 400, 1, 0),
        ("reads", 1, 0, 1, 400), ("reads", 2, 0, 1, 400),
        ("queries", 1, 0, 1, 400), ("queries", 2, 0, 1, 400),
        ("load", 2, 400, 2, 400),
        ("reads", 3, 0, 2, 800), ("reads", 4, 0, 2, 800),
        ("queries", 3, 0, 2, 800), ("queries", 4, 0, 2, 800),
        ("load", 3, 400, 3, 800),
        ("reads", 5, 0, 3, 1200), ("reads", 6, 0, 3, 1200),
        ("queries", 5, 0, 3, 1200), ("queries", 6, 0, 3, 1200),
    ]  # fmt: skip


def test_phases_it_does_not_measure_keep_their_place_and_run_once() -> None:
    before = {"name": "first", "type": "insert", "idMode": "server", "operations": 50}
    after = {"name": "final", "type": "pointReads", "operations": 10}
    spec = spec_of([before, GROWN, after, READS, QUERIES])
    names = [(name, repeat) for name, repeat, *_ in runs_of(spec)]
    assert names[0] == ("first", 1)
    assert names[-1] == ("final", 1)  # after the last part, at its own place
    assert [n for n in names if n[0] == "load"] == [("load", 1), ("load", 2), ("load", 3)]
    # the server-keyed load lives in its own table: the growth's table starts empty
    assert [r.loaded for r in phase_runs(spec) if r.phase.name == "load"] == [0, 400, 800]
    assert next(r for r in phase_runs(spec) if r.phase.name == "final").loaded == 1200


def test_parts_add_up_to_the_phases_records_when_they_do_not_divide() -> None:
    assert [part(10, 3, i) for i in range(3)] == [3, 3, 4]
    spec = spec_of([{**GROWN, "operations": 1001}, READS, QUERIES])
    loads = [r for r in phase_runs(spec) if r.phase.name == "load"]
    assert sum(r.records for r in loads) == 1001
    # without operations the growth loads dataset.records
    spec = spec_of([{k: v for k, v in GROWN.items() if k != "operations"}, READS, QUERIES])
    assert [r.records for r in phase_runs(spec) if r.phase.name == "load"] == [333, 333, 334]


def test_a_mix_inserts_past_every_planned_load_of_its_table() -> None:
    mix = {"name": "oltp", "type": "mix", "mix": {"read": 1, "insert": 1}, "operations": 50}
    spec = spec_of([{**GROWN, "growth": {"steps": 3, "measure": ["oltp"]}}, mix])
    for run in phase_runs(spec):
        assert run.reserved == 1200  # the whole growth: later parts never meet its inserts
    assert [r.loaded for r in phase_runs(spec) if r.phase.name == "oltp"] == [400, 800, 1200]


def test_without_a_growth_the_order_is_phases_then_repeats() -> None:
    spec = spec_of([{"name": "load", "type": "insert"}, READS], repeats=3)
    assert runs_of(spec) == [("load", 1, 1000, 0, 0), ("reads", 1, 0, 0, 1000),
                             ("reads", 2, 0, 0, 1000), ("reads", 3, 0, 0, 1000)]  # fmt: skip


def test_planned_time_counts_every_measured_run() -> None:
    spec = spec_of([GROWN, READS, QUERIES], repeats=2, timeout="2h")
    assert planned_seconds(spec) == 10 * 2 * 3  # reads: 10s x 2 repeats x 3 parts
    short = spec_of([GROWN, READS, QUERIES], repeats=2, timeout="50s")
    (problem,) = [p for p in check(short) if p.field == "spec.timeout"]
    assert "1m" in problem.message
    assert "x 3 growth steps for reads, queries" in problem.message


@pytest.mark.parametrize(
    ("phases", "field", "words"),
    [
        ([READS, GROWN, QUERIES], "spec.phases[1].growth.measure",
         "reads listed before load: a measured phase reads what the growth loaded"),
        ([{**GROWN, "operations": 2, "growth": {"steps": 3, "measure": ["reads"]}}, READS],
         "spec.phases[0].growth.steps", "3 steps of 2 records"),
        ([GROWN, {"name": "reads", "type": "pointReads", "keys": 500, "operations": 500},
          QUERIES],
         "spec.phases[1].keys", "keys 500 exceeds the 400 records its table holds"),
    ],
)  # fmt: skip
def test_what_a_growth_cannot_honour_is_refused_naming_the_field(
    phases: list[dict[str, Any]], field: str, words: str
) -> None:
    problems = [p for p in check(spec_of(phases)) if p.field == field]
    assert problems, check(spec_of(phases))
    assert words in problems[0].message
