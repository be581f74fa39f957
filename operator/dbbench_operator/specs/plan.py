"""The ordered steps of a run: targets x phases x repeats, as a pure function.

Targets run one after another on the same hardware, never at the same time
(comparability). Within a target, phases run in spec order; a phase with
repeats runs back to back without restarting the database, each repeat
reported separately (the news benchmark's warming effect). Insert phases run
once per target: repeating a load would collide with the keys it wrote. An
insert phase with `growth` runs once per part, each part followed by the
phases it measures (``dbbench_contract.api.phase_order``, which also says
which records each step finds).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from dbbench_contract.api import BenchmarkRunSpec
from dbbench_contract.api.phase_order import phase_runs
from dbbench_operator.naming import RunRef, adopt, plan_configmap_name, run_labels


@dataclass(frozen=True)
class Step:
    index: int
    target: str
    phase: str
    repeat: int  # 1-based
    phase_type: str
    # Which of the target's two tables the step writes and reads: records keyed
    # by the client (`<table>`) or by the server (`<table>_serverkey`), and its name.
    id_mode: str = "client"
    table: str = ""
    # Records an insert step loads; 0 for the others.
    records: int = 0
    # The part of a growth the step belongs to (1..), 0 outside a growth.
    growth_step: int = 0
    # Records 1..loaded are in the table when the step starts (reads draw keys
    # from them; an insert step numbers its records after them), and the
    # highest number any load of the table takes (a mix inserts past it).
    loaded: int = 0
    reserved: int = 0

    @property
    def key(self) -> str:
        """A stable, DNS-safe identifier of the step (used for Job and file names)."""
        return f"{self.index:03d}-{self.target}-{self.phase}-r{self.repeat}".lower()


def plan(spec: BenchmarkRunSpec) -> list[Step]:
    runs = phase_runs(spec)  # the same for every target
    steps: list[Step] = []
    for target in spec.targets:
        for run in runs:
            steps.append(Step(
                len(steps), target.name, run.phase.name, run.repeat, run.phase.type,
                run.phase.id_mode, run.table, run.records, run.growth_step, run.loaded,
                run.reserved,
            ))  # fmt: skip
    return steps


def cold_starts(spec: BenchmarkRunSpec, steps: list[Step]) -> frozenset[int]:
    """Indices of the steps before which the step's target is restarted and its nodes'
    page cache dropped. Only measured steps start cold: an insert writes the data set
    and starts from what is there. cache: cold restarts before every measured step,
    each repeat included; coldOnce before each target's first measured step only, so
    its later phases and repeats run on the database that restart left (field
    benchmark 5: restart once, then the operations three times); warm never."""
    measured = [s for s in steps if s.phase_type != "insert"]
    if spec.cache == "cold":
        return frozenset(s.index for s in measured)
    if spec.cache == "coldOnce":
        firsts: dict[str, int] = {}
        for s in measured:
            firsts.setdefault(s.target, s.index)
        return frozenset(firsts.values())
    return frozenset()


def plan_document(steps: list[Step]) -> list[dict[str, object]]:
    """The plan as stored in the run's plan ConfigMap (and shown by tooling)."""
    return [
        {"step": s.index, "key": s.key, "target": s.target, "phase": s.phase,
         "repeat": s.repeat, "type": s.phase_type, "idMode": s.id_mode, "table": s.table,
         **({"growthStep": s.growth_step} if s.growth_step else {})}
        for s in steps
    ]  # fmt: skip


def build_plan_configmap(run: RunRef, steps: list[Step]) -> dict[str, Any]:
    """The plan as a ConfigMap owned by the run: what will run, in which order."""
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": plan_configmap_name(run), "labels": run_labels(run, "plan")},
        "data": {"plan.json": json.dumps(plan_document(steps), indent=1)},
    }
    return adopt(manifest, run)
