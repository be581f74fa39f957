"""Steps after the first continue the target's record numbers and know its count.

Pure checks of what the operator writes into step files; the whole chain against
a real MariaDB: tests/integration/operator/specs/test_table_state_at_the_server.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dbbench_contract.api import parse_spec
from dbbench_contract.summary import StepSummary
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.addresses import target_access
from dbbench_operator.specs.plan import Step, plan
from dbbench_operator.specs.runner_job import build_step_config
from dbbench_operator.specs.table_state import table_state
from dbbench_operator.status.summaries import phase_result

REPO = Path(__file__).resolve().parents[4]
RUN = RunRef(name="quick", namespace="team-a", uid="1234-uid")
LOADED = 3000


def spec_with(phases: list[dict[str, Any]], **overrides: Any) -> Any:
    raw = yaml.safe_load((REPO / "examples" / "quickstart.yaml").read_text())["spec"]
    raw.update(dataset={"shape": "ycsb", "records": LOADED, "recordSize": 256}, phases=phases)
    raw.update(overrides)
    return parse_spec(raw)


LOAD = {"name": "load", "type": "insert", "batchSize": 100, "reportEvery": 1000}
MIX = {
    "name": "oltp", "type": "mix", "mix": {"read": 50, "insert": 50},
    "operations": 400, "reportEvery": 100,
}  # fmt: skip


def summary(records: int, last: int) -> StepSummary:
    return StepSummary(
        target="mariadb",
        engine="mariadb",
        phase="p",
        type="insert",
        records=records,
        records_written=records,
        last_record_number=last,
    )


def test_a_first_step_is_given_what_the_runner_would_assume() -> None:
    spec = spec_with([LOAD, MIX], repeats=2)
    steps = plan(spec)
    assert table_state(steps, steps[0], {}, LOADED) is None
    config = build_step_config(spec, steps[0], target_access(RUN, spec, 0), None)
    # an empty table, loaded from record 1: the runner's own defaults for a load
    assert (config.dataset.records, config.dataset.first_record) == (LOADED, 1)
    assert config.dataset.records_before == 0


def test_repeated_mixes_continue_after_the_highest_number_written() -> None:
    spec = spec_with([LOAD, MIX], repeats=3)
    steps = plan(spec)
    assert [(s.phase, s.repeat) for s in steps] == [("load", 1), ("oltp", 1), ("oltp", 2),
                                                    ("oltp", 3)]  # fmt: skip
    merged = {0: summary(LOADED, LOADED), 1: summary(190, LOADED + 380)}
    state = table_state(steps, steps[2], merged, LOADED)
    assert state is not None
    fields = state.step_fields(steps[2])
    assert fields == {"records": LOADED, "recordsBefore": LOADED + 190,
                      "firstRecord": LOADED + 381}  # fmt: skip
    # the first mix after the load starts past the loaded set
    state = table_state(steps, steps[1], merged, LOADED)
    assert state is not None
    assert state.step_fields(steps[1]) == {
        "records": LOADED, "recordsBefore": LOADED, "firstRecord": LOADED + 1}  # fmt: skip


def test_a_mix_reads_what_was_loaded_and_numbers_past_it() -> None:
    # the load wrote fewer records than dataset.records: the mix reads those it wrote
    # (not dataset.records, most of which are not there) and inserts after them
    spec = spec_with([{**LOAD, "operations": 1000}, MIX])
    steps = plan(spec)
    state = table_state(steps, steps[1], {0: summary(1000, 1000)}, LOADED)
    assert state is not None
    assert state.step_fields(steps[1]) == {
        "records": 1000, "recordsBefore": 1000, "firstRecord": 1001}  # fmt: skip


def test_a_mix_before_a_later_load_inserts_past_it() -> None:
    # load 3000, mix, load 500 more: the second load continues at 3001 (what reads
    # draw from stays contiguous), so the mix numbers its inserts past 3500
    spec = spec_with([LOAD, MIX, {**LOAD, "name": "more", "operations": 500}, MIX | {
        "name": "after"}])  # fmt: skip
    steps = plan(spec)
    merged = {0: summary(LOADED, LOADED)}
    state = table_state(steps, steps[1], merged, LOADED)
    assert state is not None
    assert state.step_fields(steps[1]) == {
        "records": LOADED, "recordsBefore": LOADED, "firstRecord": LOADED + 501}  # fmt: skip
    merged[1] = summary(190, LOADED + 500 + 380)
    state = table_state(steps, steps[2], merged, LOADED)
    assert state is not None
    assert state.step_fields(steps[2]) == {
        "records": 500, "recordsBefore": LOADED + 190, "firstRecord": LOADED + 1}  # fmt: skip
    merged[2] = summary(500, LOADED + 500)
    state = table_state(steps, steps[3], merged, LOADED)
    assert state is not None
    assert state.step_fields(steps[3]) == {
        "records": LOADED + 500, "recordsBefore": LOADED + 690,
        "firstRecord": LOADED + 500 + 381}  # fmt: skip


def test_after_an_unacknowledged_step_the_table_holds_what_the_server_stored() -> None:
    # A w:0 load sent 3000 records, the server kept 2900: the next step's table
    # starts at 2900 (its own check must not charge it the 100 again).
    spec = spec_with([LOAD, {**LOAD, "name": "more"}, MIX])
    steps = plan(spec)
    dropped = summary(LOADED, LOADED).model_copy(update={"stored_records": LOADED - 100})
    more = summary(LOADED, 2 * LOADED)
    state = table_state(steps, steps[1], {0: dropped}, LOADED)
    assert state is not None
    assert (state.records_before, state.last_record) == (LOADED - 100, LOADED)
    state = table_state(steps, steps[2], {0: dropped, 1: more}, LOADED)
    assert state is not None
    assert (state.records_before, state.last_record) == (2 * LOADED - 100, 2 * LOADED)


def test_without_a_load_in_the_run_the_data_set_is_assumed_present() -> None:
    spec = spec_with([MIX], repeats=2)
    steps = plan(spec)
    state = table_state(steps, steps[1], {0: summary(200, LOADED + 399)}, LOADED)
    assert state is not None
    assert state.step_fields(steps[1]) == {
        "records": LOADED, "recordsBefore": LOADED + 200, "firstRecord": LOADED + 400}  # fmt: skip


def test_other_targets_steps_do_not_count() -> None:
    targets = [{"name": "a", "engine": "mariadb"}, {"name": "b", "engine": "mariadb"}]
    spec = spec_with([LOAD, MIX], targets=targets)
    steps = plan(spec)
    b_steps = [s for s in steps if s.target == "b"]
    merged = {s.index: summary(LOADED, LOADED) for s in steps}
    assert table_state(steps, b_steps[0], merged, LOADED) is None


def test_status_shows_exact_storage_records_and_bytes_per_record() -> None:
    merged = {
        "target": "db", "engine": "mariadb", "phase": "p", "type": "mix",
        "records": 0, "durationSeconds": 2.0, "throughput": 10.0,
        "storage": {"dataBytes": 1000, "indexBytes": 10, "storageBytes": 4096,
                    "records": 2000, "bytesPerRecord": 2.048, "engineEstimatedRecords": 1870},
    }  # fmt: skip
    result = phase_result(Step(0, "db", "p", 1, "mix"), StepSummary.from_wire(merged))
    assert result.storage is not None
    assert result.storage.model_dump(by_alias=True) == {
        "dataBytes": 1000, "indexBytes": 10, "storageBytes": 4096, "records": 2000,
        "bytesPerRecord": 2.0}  # fmt: skip
