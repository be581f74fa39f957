"""Issue 30, item 1: a growth in the operator's plan and step files (pure).

The plan runs every part of the load and, after each, the measured phases, for
each target in turn; each step file tells the runner how many records its
table holds (reads draw keys from 1..that) and where a load continues. The
same chain against real servers: tests/integration/operator/specs/test_growth_at_the_server.py.
"""

from __future__ import annotations

from typing import Any

from dbbench_contract.summary import StepSummary
from dbbench_operator.specs.addresses import target_access
from dbbench_operator.specs.plan import plan, plan_document
from dbbench_operator.specs.runner_job import build_step_config, step_dir
from dbbench_operator.specs.table_state import table_state
from tests.unit.operator.specs.test_table_state import RUN, spec_with

LOAD = {"name": "load", "type": "insert", "operations": 900, "batchSize": 100,
        "growth": {"steps": 3, "measure": ["reads", "oltp"]}}  # fmt: skip
READS = {"name": "reads", "type": "pointReads", "operations": 200}
OLTP = {"name": "oltp", "type": "mix", "mix": {"read": 1, "update": 1, "insert": 1},
        "operations": 90}  # fmt: skip
TARGETS = [{"name": "a", "engine": "mariadb"}, {"name": "b", "engine": "mariadb"}]


def grown() -> Any:
    return spec_with([LOAD, READS, OLTP], targets=TARGETS, repeats=2)


def test_each_target_runs_every_part_then_the_measured_phases() -> None:
    steps = plan(grown())
    a = [(s.phase, s.repeat, s.growth_step) for s in steps if s.target == "a"]
    assert a == [
        ("load", 1, 1), ("reads", 1, 1), ("reads", 2, 1), ("oltp", 1, 1), ("oltp", 2, 1),
        ("load", 2, 2), ("reads", 3, 2), ("reads", 4, 2), ("oltp", 3, 2), ("oltp", 4, 2),
        ("load", 3, 3), ("reads", 5, 3), ("reads", 6, 3), ("oltp", 5, 3), ("oltp", 6, 3),
    ]  # fmt: skip
    assert [s.target for s in steps] == ["a"] * 15 + ["b"] * 15
    # every step has a results directory and a Job of its own
    assert len({step_dir(s) for s in steps}) == len({s.key for s in steps}) == 30
    document = plan_document(steps)
    assert [d.get("growthStep") for d in document[:6]] == [1, 1, 1, 1, 1, 2]


def summary(records: int, written: int, last: int) -> StepSummary:
    return StepSummary(target="a", engine="mariadb", phase="p", type="insert", records=records,
                       records_written=written, last_record_number=last)  # fmt: skip


def test_step_files_read_what_was_loaded_so_far_and_loads_continue() -> None:
    spec = grown()
    steps = [s for s in plan(spec) if s.target == "a"]
    merged: dict[int, StepSummary] = {}
    seen = []
    mix_last = 0
    for step in steps:
        state = table_state(steps, step, merged, spec.dataset.records)
        config = build_step_config(spec, step, target_access(RUN, spec, 0), state)
        data = config.dataset
        seen.append((step.phase, data.records, data.records_before, data.first_record))
        if step.phase == "load":
            merged[step.index] = summary(300, 300, data.first_record + 299)
        elif step.phase == "oltp":  # each oltp step inserts 30 records after its first
            mix_last = data.first_record + 29
            merged[step.index] = summary(30, 30, mix_last)
        else:
            merged[step.index] = summary(0, 0, 0)
    loads = [(r, b, f) for p, r, b, f in seen if p == "load"]
    # 300 records a part, numbered on: 1.., 301.., 601.. whatever the mixes inserted
    assert loads == [(300, 0, 1), (300, 360, 301), (300, 720, 601)]
    reads = [(r, b) for p, r, b, _ in seen if p == "reads"]
    # reads draw from everything loaded so far (dataset.records is 3000: never that)
    assert reads == [(300, 300), (300, 300), (600, 660), (600, 660), (900, 1020), (900, 1020)]
    firsts = [f for p, _, _, f in seen if p == "oltp"]
    # a mix inserts past the whole planned load (900), then after its own last
    assert firsts == [901, 931, 961, 991, 1021, 1051]
    assert mix_last == 1080
