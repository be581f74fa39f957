"""Collecting: a finished step's pods merged on the claim, and at the end the
run's own summary.json next to the steps' directories."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from dbbench_contract import run_summary as rs
from dbbench_contract.layout import SUMMARY
from dbbench_contract.summary import StepSummary
from dbbench_operator import results_client
from dbbench_operator.model import API_VERSION, BenchmarkRunSpec
from dbbench_operator.naming import RunRef
from dbbench_operator.planning import Step
from dbbench_operator.runner_jobs import step_dir
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.table_state import TableState, table_state


def collect_step(
    settings: OperatorSettings, run: RunRef, spec: BenchmarkRunSpec, step: Step
) -> StepSummary:
    """Merge the step's pods (idempotent); the merged summary."""
    return results_client.merge_step(settings, run, step_dir(step), spec.runner.pods)


def table_before(
    settings: OperatorSettings, run: RunRef, spec: BenchmarkRunSpec, steps: Sequence[Step],
    step: Step,
) -> TableState | None:  # fmt: skip
    """What the target's earlier steps wrote, from their merged summaries on the claim."""
    earlier = [
        s
        for s in steps
        if s.target == step.target and s.index < step.index and s.id_mode == step.id_mode
    ]
    merged = {s.index: results_client.step_summary(settings, run, step_dir(s)) for s in earlier}
    return table_state(steps, step, merged, spec.dataset.records)


def build_run_summary(
    run: RunRef,
    spec: BenchmarkRunSpec,
    steps: Sequence[Step],
    merged: Mapping[int, StepSummary],
    *,
    started_at: str | None,
    completed_at: str,
    status_targets: Sequence[Mapping[str, Any]],
) -> rs.RunSummary:
    """summary.json at the run's root: what ran, in which order, with what result (pure)."""
    return rs.RunSummary(
        api_version=API_VERSION,
        run=rs.RunMeta(
            namespace=run.namespace,
            name=run.name,
            uid=run.uid,
            started_at=started_at,
            completed_at=completed_at,
        ),
        # Every default explicit: readers need not know the API's defaults.
        spec=spec.model_dump(by_alias=True, exclude_none=True, mode="json"),
        steps=tuple(
            rs.StepEntry(
                step=s.index + 1,
                target=s.target,
                phase=s.phase,
                repeat=s.repeat,
                type=s.phase_type,
                path=step_dir(s),
                result=rs.step_result(s.phase, s.repeat, merged[s.index])
                if s.index in merged
                else None,
            )
            for s in steps
        ),
        targets=tuple(
            rs.TargetEntry(
                name=str(t.get("name")),
                endpoint=t.get("endpoint"),
                server_version=t.get("serverVersion"),
                shard_key=t.get("shardKey"),
            )
            for t in status_targets
        ),
    )


def write_run_summary(
    settings: OperatorSettings,
    run: RunRef,
    spec: BenchmarkRunSpec,
    steps: Sequence[Step],
    *,
    started_at: str | None,
    now: datetime,
    status_targets: Sequence[Mapping[str, Any]],
) -> None:
    merged = {s.index: results_client.step_summary(settings, run, step_dir(s)) for s in steps}
    document = build_run_summary(
        run, spec, steps, merged, started_at=started_at,
        completed_at=now.strftime("%Y-%m-%dT%H:%M:%SZ"), status_targets=status_targets,
    )  # fmt: skip
    results_client.put_file(
        settings, run, SUMMARY, json.dumps(document.to_wire(), indent=1).encode()
    )
