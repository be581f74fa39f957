"""Step files for a PostgreSQL target as the operator builds them (pure, no cluster)."""

from __future__ import annotations

from typing import Any

from dbbench_contract.api import parse_spec
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.addresses import target_access
from dbbench_operator.specs.plan import plan
from dbbench_operator.specs.runner_job import build_step_config
from dbbench_runner.config import parse_config

RUN = RunRef(name="quick", namespace="team-a", uid="1234-uid")


def spec(**target: Any) -> Any:
    return parse_spec({
        "targets": [{"name": "pg", "engine": "postgresql", **target}],
        "dataset": {"shape": "vehicle", "records": 1000},
        "phases": [
            {"name": "load", "type": "insert", "batchSize": 50},
            {"name": "oltp", "type": "mix", "mix": {"read": 85, "insert": 15, "update": 5},
             "duration": "1m", "readPreference": "secondaryPreferred"},
        ],
    })  # fmt: skip


def test_primary_replica_step_reads_from_the_standbys() -> None:
    run_spec = spec(topology="primaryReplica", members=3, durability="strict")
    step = build_step_config(run_spec, plan(run_spec)[1], target_access(RUN, run_spec, 0))
    config = step.to_wire()
    target = config["target"]
    assert target["engine"] == "postgresql"
    assert target["user"] == "dbbench"  # the image's POSTGRES_USER, from the run's Secret
    assert target["passwordFile"] == "/var/run/dbbench/credentials/root-password"
    assert target["port"] == 5432
    assert target["host"].startswith("quick-pg-")
    assert target["host"].split(".")[0].endswith("-0")
    assert [r["host"].split(".")[0][-2:] for r in target["replicas"]] == ["-1", "-2"]
    assert {r["port"] for r in target["replicas"]} == {5432}
    # Durability is the server's (synchronous standby), never a per-statement concern.
    assert config["phase"].get("writeConcern") is None  # the runner resolves it:
    assert step.write_concern == "acknowledged"
    parsed = parse_config({**config, "pod": {**config["pod"], "index": 0}})
    assert parsed.target.engine == "postgresql"
    assert parsed.phase.read_preference == "secondaryPreferred"


def test_external_postgresql_is_read_from_the_users_secret() -> None:
    run_spec = spec(external={"uriSecretRef": {"name": "pg-uri", "key": "uri"}})
    config = build_step_config(run_spec, plan(run_spec)[0], target_access(RUN, run_spec, 0))
    assert config.target.engine == "postgresql"
    assert str(config.target.uri_file) == "/var/run/dbbench/target/uri"
    assert (config.target.host, config.target.password_file) == (None, None)
