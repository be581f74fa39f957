"""Unit tests of the BenchmarkRun API models, the generated CRD and the semantic checks."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from dbbench_contract.api import (
    ALLOWED_SETTINGS,
    BenchmarkRunSpec,
    Dataset,
    Distribution,
    Mix,
    Phase,
    Runner,
    SpecError,
    Target,
    parse_spec,
)
from dbbench_contract.api.crd import PRINTER_COLUMNS, build_crd
from dbbench_contract.api.expectations import Expectation
from dbbench_contract.api.semantics import check, planned_seconds
from dbbench_contract.api.sharding import Routers
from dbbench_contract.api.sources import DataSource
from dbbench_contract.api.spec import broken_rules
from dbbench_contract.api.status import BenchmarkRunStatus
from tests.support.manifests import (
    CRD_FILE,
    EXAMPLES,
    INVALID,
    expected_message,
    gen_crd_module,
    load,
)

MINIMAL: dict[str, Any] = {
    "targets": [{"name": "db", "engine": "mariadb"}],
    "phases": [{"name": "load", "type": "insert"}],
}


def spec_with(**changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(MINIMAL)
    body.update(copy.deepcopy(changes))
    return body


def problems_of(body: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        parse_spec(body)
    return [p.field for p in caught.value.problems]


# -- examples and invalid manifests -------------------------------------------


def test_there_are_enough_manifests() -> None:
    names = {p.name for p in EXAMPLES}
    assert "quickstart.yaml" in names
    assert len(EXAMPLES) >= 5
    assert len(INVALID) >= 25


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_parses_and_is_semantically_sound(path: Path) -> None:
    body = load(path)
    assert body["apiVersion"] == "dbbench.io/v1alpha1"
    assert body["kind"] == "BenchmarkRun"
    spec = parse_spec(body["spec"])
    assert check(spec) == []


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_manifest_is_also_rejected_by_the_operator(path: Path) -> None:
    # The operator must refuse what the API server refuses (old CRD, or a spec
    # that reached it some other way): one rule table, two enforcers.
    expected_message(path)
    with pytest.raises(SpecError) as caught:
        parse_spec(load(path)["spec"])
    assert all(p.field.startswith("spec") for p in caught.value.problems)


def test_every_cross_field_rule_has_an_invalid_manifest() -> None:
    # Each CEL rule is proven against the real API server only if some invalid
    # manifest trips it; its Python twin then reports the very same message.
    tripped: set[str] = set()
    for path in INVALID:
        try:
            spec = BenchmarkRunSpec.model_validate(load(path)["spec"])
        except ValidationError:
            continue  # refused by the schema, before any cross-field rule
        tripped |= {rule.cel for rule, _, _ in broken_rules(spec)}
    models = (
        Target,
        Routers,
        Phase,
        Mix,
        Distribution,
        Runner,
        Dataset,
        DataSource,
        Expectation,
        BenchmarkRunSpec,
    )
    untested = [r.message for m in models for r in m.RULES if r.cel not in tripped]
    assert untested == []


# -- defaults -----------------------------------------------------------------


def test_defaults_are_filled_in() -> None:
    spec = parse_spec(MINIMAL)
    target, phase = spec.targets[0], spec.phases[0]
    assert (target.topology, target.durability, target.effective_members) == (
        "standalone",
        "safe",
        1,
    )
    assert target.effective_image == "mariadb:11.8"
    assert (spec.runner.pods, spec.runner.threads, spec.runner.processes) == (1, 1, None)
    assert (spec.dataset.shape, spec.dataset.records, spec.dataset.record_size) == (
        "flat45",
        1_000_000,
        1024,
    )
    assert spec.dataset.seed == 42
    assert (spec.cache, spec.repeats, spec.cleanup) == ("warm", 1, "Delete")
    assert (spec.timeout.text, spec.timeout.seconds) == ("2h", 7200)
    assert spec.results.claim_name == "dbbench-results"
    assert spec.hardware.storage.size == "10Gi"
    assert spec.hardware.exclusive is True
    assert (phase.id_mode, phase.batch_size, phase.report_every) == ("client", 1, 10000)
    assert (phase.read_preference, phase.target_rate, phase.max_error_rate) == ("primary", 0, 0.01)
    assert phase.write_concern is None


def test_topology_dependent_defaults() -> None:
    spec = parse_spec(
        spec_with(
            targets=[
                {"name": "rs", "engine": "mongodb", "topology": "replicaSet"},
                {"name": "pr", "engine": "mysql", "topology": "primaryReplica", "version": "8.0"},
                {"name": "own", "engine": "mongodb", "image": "registry.local/mongo:7"},
            ]
        )
    )
    assert [t.effective_members for t in spec.targets] == [3, 2, 1]
    assert [t.effective_image for t in spec.targets] == [
        "mongo:8.0",
        "mysql:8.0",
        "registry.local/mongo:7",
    ]


def test_query_phase_defaults_to_all_queries() -> None:
    spec = parse_spec(
        spec_with(
            dataset={"shape": "indexed4"}, phases=[{"name": "q", "type": "query", "duration": "1m"}]
        )
    )
    assert spec.phases[0].effective_queries == (
        "indexedEquality",
        "twoFieldProjection",
        "sortSkip",
        "scan100",
    )


def test_models_are_frozen_and_snake_case_inside() -> None:
    spec = parse_spec(spec_with(runner={"threads": 4, "processes": 2}))
    assert spec.runner.threads == 4
    with pytest.raises(ValueError, match="frozen"):
        spec.runner.threads = 8  # type: ignore[misc]
    wire = spec.model_dump(by_alias=True, exclude_none=True)
    assert wire["phases"][0]["idMode"] == "client"
    assert wire["dataset"]["recordSize"] == 1024


def test_crd_defaults_match_model_defaults() -> None:
    schema = build_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    defaulted = BenchmarkRunSpec.model_validate(MINIMAL).model_dump(
        by_alias=True, exclude_none=True, mode="json"
    )
    for key in ("runner", "dataset", "hardware", "results"):
        assert schema["properties"][key]["default"] == defaulted[key]
    assert schema["properties"]["timeout"]["default"] == "2h"


# -- parse errors name the fields ----------------------------------------------


def target(engine: str, **fields: Any) -> dict[str, Any]:
    return {"name": "db", "engine": engine, **fields}


def reads(**fields: Any) -> dict[str, Any]:
    return {"name": "r", "type": "pointReads", **fields}


LOAD = {"name": "load", "type": "insert"}  # what a reading phase reads (issue 29)


PARSE_ERRORS = [
    (spec_with(targets=[target("mysql", shards=2)]), "spec.targets[0].shards"),
    (spec_with(targets=[target("oracle")]), "spec.targets[0].engine"),
    (spec_with(phases=[{"name": "x", "type": "mix", "duration": "1m"}]), "spec.phases[0].mix"),
    (spec_with(runner={"threads": 3, "processes": 2}), "spec.runner.threads"),
    (spec_with(timeout="two hours"), "spec.timeout"),
    (
        spec_with(hardware={"resources": {"limits": {"memory": "8GB"}}}),
        "spec.hardware.resources.limits.memory",
    ),
    (spec_with(dataset={"recordz": 5}), "spec.dataset.recordz"),
    (
        spec_with(targets=[target("mariadb", settings={"oplogSizeMB": "9"})]),
        "spec.targets[0].settings",
    ),
]


@pytest.mark.parametrize(("body", "field"), PARSE_ERRORS)
def test_parse_error_names_the_field(body: dict[str, Any], field: str) -> None:
    assert field in problems_of(body)


def test_parse_error_lists_every_problem() -> None:
    body = spec_with(
        targets=[{"name": "db", "engine": "mysql", "shards": 2, "topology": "replicaSet"}],
        phases=[{"name": "r", "type": "pointReads", "duration": "1m", "operations": 5, "keys": 0}],
    )
    fields = problems_of(body)
    assert "spec.phases[0].keys" in fields  # schema error: reported before cross-field rules
    fields = problems_of({**body, "phases": [{"name": "r", "type": "pointReads"}]})
    assert {"spec.targets[0].shards", "spec.targets[0].topology", "spec.phases[0]"} <= set(fields)


def test_spec_must_be_a_mapping() -> None:
    with pytest.raises(SpecError, match="spec: must be an object"):
        parse_spec(["not", "a", "spec"])  # type: ignore[arg-type]


def test_settings_allow_list_per_engine() -> None:
    # "1" is a valid value of every allowed key but synchronous_commit's (an enum).
    for engine, keys in ALLOWED_SETTINGS.items():
        settings = {**dict.fromkeys(keys, "1"), **({"synchronous_commit": "off"} if
                    "synchronous_commit" in keys else {})}  # fmt: skip
        body = spec_with(targets=[{"name": "db", "engine": engine, "settings": settings}])
        parse_spec(body)
    assert set(ALLOWED_SETTINGS["mongodb"]).isdisjoint(ALLOWED_SETTINGS["mysql"])


# -- semantics ------------------------------------------------------------------

MEMORY = {"resources": {"limits": {"memory": "4Gi"}}}


SEMANTIC_PROBLEMS = [
    (
        spec_with(
            phases=[
                LOAD,
                {"name": "m", "type": "mix", "mix": {"read": 1}, "duration": "90m", "warmup": "5m"},
            ],
            timeout="1h",
        ),
        "spec.timeout",
    ),
    (
        spec_with(phases=[LOAD, reads(duration="1m", readPreference="nearest")]),
        "spec.phases[1].readPreference",
    ),
    (
        spec_with(phases=[{"name": "l", "type": "insert", "writeConcern": "majority"}]),
        "spec.phases[0].writeConcern",
    ),
    (
        spec_with(
            hardware=MEMORY, targets=[target("mongodb", settings={"wiredTigerCacheSizeGB": "6"})]
        ),
        "spec.targets[0].settings.wiredTigerCacheSizeGB",
    ),
    (
        spec_with(
            hardware=MEMORY, targets=[target("mysql", settings={"innodb_buffer_pool_size": "5G"})]
        ),
        "spec.targets[0].settings.innodb_buffer_pool_size",
    ),
    (
        spec_with(targets=[target("mysql", settings={"innodb_buffer_pool_size": "lots"})]),
        "spec.targets[0].settings.innodb_buffer_pool_size",
    ),
    (
        spec_with(
            runner={"pods": 2, "threads": 8}, phases=[LOAD, reads(duration="1m", targetRate=10)]
        ),
        "spec.phases[1].targetRate",
    ),
    (
        spec_with(runner={"threads": 8}, phases=[LOAD, reads(operations=4)]),
        "spec.phases[1].operations",
    ),
    (
        spec_with(dataset={"records": 1000}, phases=[LOAD, reads(keys=5000, duration="1m")]),
        "spec.phases[1].keys",
    ),
    (
        spec_with(dataset={"records": 100_000_000}, hardware={"storage": {"size": "20Gi"}}),
        "spec.hardware.storage.size",
    ),
    (spec_with(cache="cold", hardware={"exclusive": False}), "spec.hardware.exclusive"),
    (spec_with(cache="coldOnce", hardware={"exclusive": False}), "spec.hardware.exclusive"),
]


@pytest.mark.parametrize(("body", "field"), SEMANTIC_PROBLEMS)
def test_semantic_problem_names_the_field(body: dict[str, Any], field: str) -> None:
    problems = check(parse_spec(body))
    assert [p.field for p in problems] == [field]
    assert len(problems[0].message) > 20


def test_semantics_accept_what_fits() -> None:
    body = spec_with(
        hardware={"resources": {"limits": {"memory": "8Gi"}}, "storage": {"size": "2Gi"}},
        targets=[
            target("mongodb", topology="replicaSet", settings={"wiredTigerCacheSizeGB": "3.5"}),
            {
                **target("mysql", topology="primaryReplica"),
                "name": "s",
                "settings": {"innodb_buffer_pool_size": "6G"},
            },
        ],
        runner={"pods": 2, "threads": 4},
        phases=[
            {"name": "load", "type": "insert"},
            reads(duration="10m", warmup="1m", targetRate=8, readPreference="nearest", keys=1000),
        ],
        repeats=3,
        timeout="67m",
    )
    spec = parse_spec(body)
    assert planned_seconds(spec) == 2 * 3 * 11 * 60
    assert check(spec) == []


def test_sharding_spreads_the_dataset_over_volumes() -> None:
    sharded = {"name": "s", "engine": "mongodb", "topology": "sharded", "shards": 4}
    body = spec_with(
        dataset={"records": 30_000_000}, hardware={"storage": {"size": "10Gi"}}, targets=[sharded]
    )
    assert check(parse_spec(body)) == []
    single = {"name": "m", "engine": "mongodb"}
    assert [p.field for p in check(parse_spec({**body, "targets": [sharded, single]}))] == [
        "spec.hardware.storage.size"
    ]


# -- the generated CRD ------------------------------------------------------------


def test_crd_file_is_generated_from_the_models() -> None:
    gen = gen_crd_module()
    assert CRD_FILE.read_text() == gen.render(), "crds/ is stale: run `make crd`"
    assert gen.main(["--check"]) == 0


def test_gen_crd_check_fails_on_a_stale_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gen = gen_crd_module()
    stale = tmp_path / "crds" / "benchmarkruns.dbbench.io.yaml"
    stale.parent.mkdir()
    stale.write_text(gen.render().replace("shortNames:\n    - br", "shortNames:\n    - bench"))
    monkeypatch.setattr(gen, "REPO", tmp_path)
    monkeypatch.setattr(gen, "CRD_PATH", stale)
    schedules = tmp_path / "crds" / "benchmarkschedules.dbbench.io.yaml"
    schedules.write_text(gen.render(gen.build_schedule_crd))
    monkeypatch.setattr(gen, "SCHEDULE_CRD_PATH", schedules)
    assert gen.main(["--check"]) == 1
    assert "run `make crd`" in capsys.readouterr().err
    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0


def test_crd_identity() -> None:
    crd = build_crd()
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "benchmarkruns.dbbench.io"
    assert spec["group"] == "dbbench.io"
    assert spec["names"]["shortNames"] == ["br"]
    assert spec["names"]["categories"] == ["dbbench"]
    version = spec["versions"][0]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Phase", "Target", "Progress", "Throughput", "p99", "Age",
    ]  # fmt: skip


FORBIDDEN = {
    "$ref",
    "$defs",
    "definitions",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "const",
    "title",
    "nullable",
}


def walk(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, node
    for name, sub in node.get("properties", {}).items():
        yield from walk(sub, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        yield from walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from walk(node["additionalProperties"], f"{path}{{}}")


def root_schema() -> dict[str, Any]:
    schema: dict[str, Any] = build_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def test_crd_schema_is_structural() -> None:
    nodes = list(walk(root_schema()))
    assert any(path.startswith(".spec.") for path, _ in nodes), "no spec field walked"
    for path, node in nodes:
        assert not FORBIDDEN & node.keys(), f"{path}: {FORBIDDEN & node.keys()}"
        assert node.get("additionalProperties") is not False, path
        assert "properties" not in node or "additionalProperties" not in node, path
        typed = "type" in node or node.get("x-kubernetes-int-or-string")
        assert typed, f"{path} has no type"
        if (
            node.get("type") == "object"
            and "properties" not in node
            and "additionalProperties" not in node
        ):
            assert node.get("x-kubernetes-preserve-unknown-fields") or path == ".metadata", path


def test_every_spec_and_status_field_is_described() -> None:
    fields = [
        (path, node)
        for path, node in walk(root_schema())
        if path.startswith((".spec", ".status")) and not path.endswith(("[]", "{}"))
    ]
    assert {p.split(".")[1] for p, _ in fields} == {"spec", "status"}
    for path, node in fields:
        assert len(node.get("description", "")) >= 8, f"{path} lacks a description"


def test_preserve_unknown_fields_only_for_pass_through_objects() -> None:
    loose = {
        path
        for path, node in walk(root_schema())
        if node.get("x-kubernetes-preserve-unknown-fields")
    }
    assert loose == {".spec.hardware.affinity", ".spec.targets[].hardware.affinity"}


def test_cel_field_paths_exist_and_lists_are_bounded() -> None:
    rules = 0
    for path, node in walk(root_schema()):
        for rule in node.get("x-kubernetes-validations", []):
            rules += 1
            assert rule["message"], path
            if "fieldPath" in rule:
                assert rule["fieldPath"].lstrip(".") in node["properties"], f"{path}: {rule}"
        if node.get("type") == "array" and path.startswith(".spec"):
            assert "maxItems" in node, f"{path}: CEL cost needs maxItems"
        if node.get("type") == "string" and path.startswith(".spec") and "format" not in node:
            assert "maxLength" in node, f"{path}: CEL cost needs maxLength"
    assert rules >= 25


def test_printer_columns_read_status_fields() -> None:
    status = root_schema()["properties"]["status"]
    read = [c for c in PRINTER_COLUMNS if not c["jsonPath"].startswith(".metadata")]
    assert read, "no printer column reads the status"
    for column in read:
        node: dict[str, Any] = {"properties": {"status": status}}
        for part in column["jsonPath"].lstrip(".").split("."):
            node = node["properties"][part]
        assert node["type"] == column["type"], column


def test_status_model_matches_the_status_schema() -> None:
    status = BenchmarkRunStatus.model_validate(
        {
            "phase": "Running",
            "conditions": [
                {"type": "Ready", "status": "False", "reason": "Running", "observedGeneration": 1}
            ],
            "progress": {"target": "db", "phase": "load", "percent": 40, "step": 2, "steps": 5},
            "lastResult": {"target": "db", "phase": "load", "throughput": 1234.5, "p99Ms": 2.5},
            "targets": [
                {
                    "name": "db",
                    "ready": True,
                    "phases": [
                        {
                            "name": "load",
                            "operations": 10,
                            "latencyMs": {"p99": 2.5},
                            "storage": {"dataBytes": 1},
                        }
                    ],
                }
            ],
        }
    )
    wire = status.model_dump(by_alias=True, exclude_none=True, mode="json")
    schema = root_schema()["properties"]["status"]

    def assert_known(value: Any, node: dict[str, Any], path: str) -> None:
        if isinstance(value, dict):
            for key, sub in value.items():
                assert key in node["properties"], f"{path}.{key} not in the status schema"
                assert_known(sub, node["properties"][key], f"{path}.{key}")
        elif isinstance(value, list):
            for item in value:
                assert_known(item, node["items"], f"{path}[]")

    assert_known(wire, schema, "status")
    assert wire["targets"][0]["phases"][0]["latencyMs"]["p99"] == 2.5
