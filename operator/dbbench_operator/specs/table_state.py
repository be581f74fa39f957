"""What a target's table holds before a step, from its earlier steps' summaries (pure).

Which record numbers a step reads and loads is planned (the plan's
`Step.loaded` and `Step.reserved`, from ``dbbench_contract.api.phase_order``):
reads draw keys from every record the run has loaded into the table so far,
loads continue after them, and a mix numbers its inserts past every planned
load and past the highest number any earlier step wrote (a repeated mix, or
another mix with inserts), so client-made keys never collide. What the table
holds is counted: storage samples count records exactly only when the runner
knows how many were there before: what earlier steps wrote, or, after an
unacknowledged (w:0) step, what the server held once its writes were drained
(`storedRecords`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dbbench_contract.summary import StepSummary
from dbbench_operator.specs.plan import Step


@dataclass(frozen=True)
class TableState:
    records_before: int  # records in the target's table when the step starts
    last_record: int  # highest record number written so far (0: none)

    @classmethod
    def first(cls, step: Step) -> TableState:
        """The table of a target's first step of it: empty for a load, else the
        records the run assumes are there (the data set)."""
        return cls(0 if step.phase_type == "insert" else step.loaded, 0)

    def step_fields(self, step: Step) -> dict[str, int]:
        """The step file's `dataset.records`, `recordsBefore` and `firstRecord`.

        An insert step loads its planned records after those loaded before it;
        any other step draws keys from 1..`step.loaded` and numbers its inserts
        past every planned load and every number written before, so its first
        record is never inside what reads draw from.
        """
        if step.phase_type == "insert":
            records, first = step.records, step.loaded + 1
        else:
            records = step.loaded
            first = max(self.last_record, step.reserved, step.loaded) + 1
        return {"records": records, "recordsBefore": self.records_before, "firstRecord": first}


def table_state(
    steps: Sequence[Step],
    step: Step,
    merged: Mapping[int, StepSummary],
    loaded_set: int,
) -> TableState | None:
    """None when no earlier step of the target wrote anything the runner must know of.

    Until the run has loaded the target itself (an insert step), a reading
    phase assumes the data set is there already (records 1..`loaded_set`),
    as the runner does by default.
    """
    # Only steps of the same table count: idMode client and server records live apart.
    earlier = [
        s
        for s in steps
        if s.target == step.target and s.index < step.index and s.id_mode == step.id_mode
    ]
    if not earlier:
        return None
    loaded_by_run = any(s.phase_type == "insert" for s in earlier)
    before = 0 if loaded_by_run or step.phase_type == "insert" else loaded_set
    last = 0 if loaded_by_run else before
    for s in earlier:
        summary = merged.get(s.index)
        if summary is None:
            continue
        if summary.stored_records is not None:
            # An unacknowledged (w:0) step counted what the server holds after it:
            # writes it dropped are not in the table, and counting them here would
            # charge them to every later step's check again.
            before = summary.stored_records
        else:
            before += summary.records_written
        last = max(last, summary.last_record_number)
    return TableState(before, last)
