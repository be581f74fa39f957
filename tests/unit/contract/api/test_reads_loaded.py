"""A run reads what it loaded (issue 29): a reading phase whose table (per key
mode and data set) no earlier insert phase fills is refused at admission, with
the phase, the table and the way out; every example passes."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from dbbench_contract.api import check, parse_spec
from dbbench_contract.api.tables import keyed_table, used_tables
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.plan import build_plan_configmap, plan
from dbbench_runner.config import Dataset as RunnerDataset
from dbbench_runner.datasets import generator_for
from tests.support.manifests import REPO, load

ALL_EXAMPLES = sorted((REPO / "examples").glob("*.yaml")) + sorted(
    (REPO / "examples" / "field").glob("*.yaml")
)
FIELD2 = sorted((REPO / "examples" / "field").glob("2-single-vs-sharded*.yaml"))
QUERIES = {"name": "queries", "type": "query", "duration": "1m"}


def spec(*phases: dict[str, Any], shape: str = "indexed4", **extra: Any) -> Any:
    body = {
        "targets": [{"name": "db", "engine": "mongodb"}],
        "dataset": {"shape": shape, "records": 1000},
        "phases": list(phases),
        **extra,
    }
    return parse_spec(body)


def problems(*phases: dict[str, Any], **extra: Any) -> list[Any]:
    return [p for p in check(spec(*phases, **extra)) if "reads" in p.message]


def test_server_key_read_after_a_client_key_load_is_refused() -> None:
    found = problems({"name": "load", "type": "insert"}, {**QUERIES, "idMode": "server"})
    assert [p.field for p in found] == ["spec.phases[1]"]
    message = found[0].message
    assert "phase queries (query, idMode server) reads indexed4_serverkey" in message
    assert "the insert phases before it load indexed4 only" in message
    assert "on target(s) db" in message
    assert "set idMode: client on this phase to read indexed4" in message
    assert "add an insert phase with idMode server before it" in message


def test_client_key_read_after_server_key_loads_is_refused() -> None:
    found = problems(
        {"name": "load", "type": "insert", "idMode": "server"},
        {"name": "update", "type": "mix", "mix": {"update": 1}, "duration": "1m"},
    )
    assert [p.field for p in found] == ["spec.phases[1]"]
    assert "reads indexed4, which no earlier phase of the run loads" in found[0].message
    assert "set idMode: server on this phase to read indexed4_serverkey" in found[0].message


@pytest.mark.parametrize("path", FIELD2, ids=lambda p: p.name)
def test_the_old_field2_manifest_is_refused_and_the_fixed_one_passes(path: Path) -> None:
    body = load(path)
    assert check(parse_spec(body["spec"])) == []
    old = copy.deepcopy(body["spec"])
    queries = next(p for p in old["phases"] if p["type"] == "query")
    del queries["idMode"]  # as it was: the queries read the client-keyed collection
    found = check(parse_spec(old))
    index = old["phases"].index(queries)
    assert [p.field for p in found] == [f"spec.phases[{index}]"]
    assert "reads indexed4," in found[0].message
    assert "set idMode: server on this phase" in found[0].message


@pytest.mark.parametrize("path", ALL_EXAMPLES, ids=lambda p: p.name)
def test_every_example_reads_what_it_loaded(path: Path) -> None:
    assert check(parse_spec(load(path)["spec"])) == []


def test_a_read_before_its_load_names_the_load_to_move() -> None:
    found = problems(
        {"name": "reads", "type": "pointReads", "duration": "1m"},
        {"name": "load", "type": "insert"},
    )
    assert [p.field for p in found] == ["spec.phases[0]"]
    assert "no insert phase comes before it" in found[0].message
    assert "move insert phase load before it" in found[0].message


def test_flat45_never_suggests_its_unindexed_server_keyed_table() -> None:
    found = problems(
        {"name": "load", "type": "insert", "idMode": "server"},
        {"name": "reads", "type": "pointReads", "duration": "1m"},
        shape="flat45",
    )
    assert len(found) == 1
    assert "set idMode" not in found[0].message
    assert "add an insert phase with idMode client before it" in found[0].message


def test_only_phases_that_need_records_are_reading_phases() -> None:
    inserts_only = {"name": "grow", "type": "mix", "mix": {"insert": 1}, "duration": "1m"}
    assert problems(inserts_only) == []
    for share in ("read", "update", "scan", "readModifyWrite"):
        mix = {"name": "m", "type": "mix", "mix": {"insert": 1, share: 1}, "duration": "1m"}
        assert [p.field for p in problems(mix)] == ["spec.phases[0]"], share
    # A mix's own inserts are numbered past the data set: they fill nothing a later read reads.
    assert [p.field for p in problems(inserts_only, QUERIES)] == ["spec.phases[1]"]


EXTERNAL = {
    "name": "ext", "engine": "mongodb",
    "external": {"uriSecretRef": {"name": "uri", "key": "uri"}},
}  # fmt: skip


def test_an_external_target_read_only_run_reads_what_is_there() -> None:
    # Nothing loads in this run: the external database's data set is from before.
    assert problems(QUERIES, targets=[EXTERNAL]) == []
    # A deployed target beside it starts empty: refused, naming that target only.
    found = problems(QUERIES, targets=[EXTERNAL, {"name": "db", "engine": "mongodb"}])
    assert [p.field for p in found] == ["spec.phases[0]"]
    assert "on target(s) db it would read an empty table" in found[0].message
    # A run that loads builds its own data: it must read what it loaded, external or not.
    found = problems(
        {"name": "load", "type": "insert", "idMode": "server"}, QUERIES, targets=[EXTERNAL]
    )
    assert [p.field for p in found] == ["spec.phases[1]"]
    assert "on target(s) ext" in found[0].message


def test_tables_are_the_runners_and_the_plan_names_them() -> None:
    for shape in ("flat45", "indexed4", "news", "vehicle", "ycsb"):
        parsed = spec({"name": "load", "type": "insert"}, shape=shape)
        for mode in ("client", "server"):
            runner = generator_for(RunnerDataset(shape=shape, records=10), mode)  # type: ignore[arg-type]
            assert keyed_table(parsed.dataset, mode) == runner.table, (shape, mode)
    both = spec(
        {"name": "load-server", "type": "insert", "idMode": "server"},
        {"name": "load", "type": "insert"},
        QUERIES,
    )
    assert used_tables(both) == ("indexed4_serverkey", "indexed4")
    steps = plan(both)
    assert [(s.phase, s.table) for s in steps] == [
        ("load-server", "indexed4_serverkey"), ("load", "indexed4"), ("queries", "indexed4"),
    ]  # fmt: skip
    document = build_plan_configmap(RunRef("r", "ns", "uid"), steps)["data"]["plan.json"]
    assert '"table": "indexed4_serverkey"' in document
