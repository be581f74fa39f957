from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dbbench_runner.config import ConfigError, load_config, parse_config, password
from tests.support.runner_files import cli

TARGET = {"name": "maria", "engine": "mariadb", "host": "127.0.0.1", "port": 3306}


def raw(phase: dict[str, object], **top: object) -> dict[str, object]:
    return {
        "target": TARGET,
        "dataset": {"shape": "flat45", "records": 100},
        "phase": {"name": "p", **phase},
        **top,
    }


def test_camel_case_fields_and_durations_are_read() -> None:
    config = parse_config(
        raw(
            {
                "type": "mix",
                "mix": {"read": 85, "insert": 15, "update": 5},
                "distribution": {"type": "hotspot", "dataFraction": 0.1},
                "duration": "5m",
                "warmup": "30s",
                "targetRate": 100,
                "readPreference": "secondaryPreferred",
            },
            threads=8,
            pod={"index": 1, "count": 3},
        )
    )
    assert config.duration == 300.0
    assert config.warmup == 30.0
    assert config.key_choice.data_fraction == 0.1
    assert config.workers_total == 24
    # Round trip by alias: the worker processes re-read this JSON.
    assert type(config).model_validate_json(config.model_dump_json()) == config
    assert '"targetRate"' in config.model_dump_json()


@pytest.mark.parametrize(
    ("phase", "extra", "field"),
    [
        ({"type": "insert", "writeConcern": "unacknowledged"}, {}, "phase.writeConcern"),
        ({"type": "insert", "batchsize": 3}, {}, "phase.batchsize"),
        ({"type": "insert", "batchSize": 0}, {}, "phase.batchSize"),
        ({"type": "mix", "duration": "1m"}, {}, "phase.mix"),
        ({"type": "mix", "mix": {"read": 0}, "duration": "1m"}, {}, "phase.mix"),
        ({"type": "mix", "mix": {"read": 1}}, {}, "phase: phase p (type mix)"),
        ({"type": "mix", "mix": {"read": 1}, "duration": "ten"}, {}, "phase.duration"),
        ({"type": "query", "queries": ["sortSkip"], "operations": 5}, {}, "phase.queries"),
        ({"type": "pointReads", "keys": 500, "operations": 500}, {}, "phase.keys"),
        ({"type": "insert"}, {"pod": {"index": 2, "count": 2}}, "pod.index"),
        ({"type": "insert", "warmup": "5s"}, {}, "phase.warmup"),
    ],
)
def test_invalid_config_names_the_field(
    phase: dict[str, object], extra: dict[str, object], field: str
) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config(raw(phase, **extra))
    assert f"{field}:" in str(error.value)


def test_uri_is_for_mongodb_only() -> None:
    bad = raw({"type": "insert"})
    bad["target"] = {**TARGET, "uri": "mysql://x"}
    with pytest.raises(ConfigError, match=r"target\.uri:"):
        parse_config(bad)


@pytest.mark.parametrize(("text", "seconds"), [("1h", 3600), ("250ms", 0.25), ("1h30m", 5400)])
def test_durations_are_read_once_into_seconds(text: str, seconds: float) -> None:
    phase = {"type": "mix", "mix": {"read": 1}, "duration": text, "warmup": text}
    config = parse_config(raw(phase))
    assert (config.duration, config.warmup) == (seconds, seconds)
    assert config.phase.duration is not None
    assert config.phase.duration.text == text  # written back as given


@pytest.mark.parametrize("text", ["5 minutes", "12", "1.5s", ""])
def test_what_is_not_a_duration_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match=r"phase\.duration: String should match pattern"):
        parse_config(raw({"type": "mix", "mix": {"read": 1}, "duration": text}))


def test_password_file_is_read(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("s3cret\n")
    config = parse_config(
        {**raw({"type": "insert"}), "target": {**TARGET, "passwordFile": str(secret)}}
    )
    assert password(config.target) == "s3cret"


def test_cli_exits_2_and_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "step.yaml"
    path.write_text(yaml.safe_dump(raw({"type": "insert", "writeConcern": "majority"})))
    result = cli("run", "--config", str(path), "--out", str(tmp_path / "o"), timeout=60)
    assert result.returncode == 2
    assert "phase.writeConcern" in result.stderr
    assert not (tmp_path / "o").exists()


def test_unreadable_yaml_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "step.yaml"
    path.write_text("target: [unclosed\n")
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(path)


def test_presets_are_valid_phases() -> None:
    presets = sorted((Path(__file__).parents[3] / "runner-image" / "presets").glob("*.yaml"))
    assert presets, "no workload presets"
    for preset in presets:
        document = yaml.safe_load(preset.read_text())
        mongo = {"name": "m", "engine": "mongodb", "uri": "mongodb://127.0.0.1"}
        tuning = document.get("tuning", {})
        parse_config(
            {
                "target": mongo,
                "dataset": document["dataset"],
                "phase": document["phase"],
                "tuning": tuning,
            }
        )


def test_statements_default_per_engine_and_refusals_name_the_field() -> None:
    """Unset keeps each engine's client as before the field: prepared on PostgreSQL,
    simple on MySQL/MariaDB, nothing on MongoDB; what a step cannot honour is refused."""
    reads = {"type": "pointReads", "operations": 10}
    postgres = {**TARGET, "engine": "postgresql"}
    mongo = {"name": "m", "engine": "mongodb", "uri": "mongodb://127.0.0.1:1"}
    assert parse_config(raw(reads)).statement_mode == "simple"
    assert parse_config({**raw(reads), "target": postgres}).statement_mode == "prepared"
    assert parse_config({**raw(reads), "target": mongo}).statement_mode is None
    simple_pg = parse_config({**raw(reads, statements="simple"), "target": postgres})
    assert simple_pg.statement_mode == "simple"
    connector = raw(reads, statements="prepared", mysqlDriver="mysql-connector-python")
    assert parse_config(connector).statement_mode == "prepared"
    with pytest.raises(ConfigError, match=r"statements: prepared on mariadb needs mysqlDriver"):
        parse_config(raw(reads, statements="prepared"))
    with pytest.raises(ConfigError, match=r"statements: prepared does not apply to mongodb"):
        parse_config({**raw(reads, statements="prepared"), "target": mongo})
