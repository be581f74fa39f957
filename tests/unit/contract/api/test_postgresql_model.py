"""engine: postgresql in the API model: defaults, images, the settings allow-list,
the memory and connection checks (pure; admission on the real API server is
tests/integration/contract/api/test_admission.py with the invalid manifests *-postgresql.yaml)."""

from __future__ import annotations

from typing import Any

import pytest

from dbbench_contract.api import ALLOWED_SETTINGS, SpecError, parse_postgres_size, parse_spec
from dbbench_contract.api.semantics import check


def spec(target: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {
        "targets": [{"name": "pg", "engine": "postgresql", **target}],
        "phases": [{"name": "load", "type": "insert"}],
        **changes,
    }


def test_defaults_image_and_members() -> None:
    standalone = parse_spec(spec({})).targets[0]
    assert standalone.effective_image == "postgres:17"
    assert standalone.effective_members == 1
    replicated = parse_spec(spec({"topology": "primaryReplica", "version": "16"})).targets[0]
    assert (replicated.effective_image, replicated.effective_members) == ("postgres:16", 2)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ({"topology": "sharded", "shards": 2}, "MongoDB-only"),
        ({"topology": "replicaSet"}, "for mysql, mariadb and postgresql"),
        ({"settings": {"fsync": "off"}}, "only these keys are allowed for postgresql"),
        ({"settings": {"innodb_buffer_pool_size": "1G"}}, "allowed for postgresql"),
        ({"settings": {"synchronous_commit": "yes"}}, "synchronous_commit must be one of"),
        ({"durability": "strict"}, "durability strict waits for a replica"),
    ],
)
def test_refused_combinations_name_the_field(target: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message) as caught:
        parse_spec(spec(target))
    assert all(p.field.startswith("spec.targets[0].") for p in caught.value.problems)


def test_w0_is_refused_naming_the_phases() -> None:
    body = spec({})
    body["phases"] = [{"name": "load", "type": "insert", "writeConcern": "unacknowledged"}]
    with pytest.raises(SpecError, match="unacknowledged is MongoDB-only") as caught:
        parse_spec(body)
    assert [p.field for p in caught.value.problems] == ["spec.phases"]


def test_allow_list_excludes_what_the_profile_and_setup_own() -> None:
    owned = {"fsync", "full_page_writes", "wal_level", "synchronous_standby_names",
             "primary_conninfo", "max_wal_senders"}  # fmt: skip
    assert owned.isdisjoint(ALLOWED_SETTINGS["postgresql"])
    assert {"shared_buffers", "effective_cache_size", "synchronous_commit", "wal_buffers",
            "work_mem", "max_connections"} <= set(ALLOWED_SETTINGS["postgresql"])  # fmt: skip


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [("128MB", 8192, 128 * 1024**2), ("16384", 8192, 128 * 1024**2), ("4GB", 8192, 4 * 1024**3),
     ("64kB", 1024, 65536), ("512", 1024, 512 * 1024), ("1TB", 8192, 1024**4)],
)  # fmt: skip
def test_parse_postgres_size(value: str, unit: int, expected: int) -> None:
    assert parse_postgres_size(value, unit) == expected


@pytest.mark.parametrize("value", ["1gb", "1G", "lots", "1.5GB", "-1"])
def test_parse_postgres_size_refuses(value: str) -> None:
    with pytest.raises(ValueError, match="not a size"):
        parse_postgres_size(value, 8192)


MEMORY = {"hardware": {"resources": {"limits": {"memory": "4Gi"}}}}


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"shared_buffers": "4GB"}, "spec.targets[0].settings.shared_buffers"),
        ({"shared_buffers": "524288"}, "spec.targets[0].settings.shared_buffers"),  # 4 GiB pages
        ({"wal_buffers": "5GB"}, "spec.targets[0].settings.wal_buffers"),
        ({"shared_buffers": "4G"}, "spec.targets[0].settings.shared_buffers"),  # not a size
    ],
)
def test_buffers_must_fit_the_memory_limit(settings: dict[str, str], field: str) -> None:
    problems = check(parse_spec(spec({"settings": settings}, **MEMORY)))
    assert [p.field for p in problems] == [field]


def test_buffers_that_fit_and_hints_are_accepted() -> None:
    settings = {"shared_buffers": "3GB", "effective_cache_size": "64GB", "work_mem": "64MB"}
    assert check(parse_spec(spec({"settings": settings}, **MEMORY))) == []


def test_runner_connections_must_fit_max_connections() -> None:
    body = spec({}, runner={"pods": 4, "threads": 32})
    problems = check(parse_spec(body))
    assert [p.field for p in problems] == ["spec.targets[0].settings.max_connections"]
    assert "132 connections" in problems[0].message
    assert "142" in problems[0].message
    assert check(parse_spec(spec({"settings": {"max_connections": "200"}},
                                 runner={"pods": 4, "threads": 32}))) == []  # fmt: skip
    assert check(parse_spec(spec({}, runner={"pods": 4, "threads": 8}))) == []
