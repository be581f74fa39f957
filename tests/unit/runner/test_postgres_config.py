"""Step files for engine postgresql: addresses, URIs from a Secret file, refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_runner.config import ConfigError, load_config, parse_config, password

PHASE = {"name": "load", "type": "insert"}
DATASET = {"shape": "flat45", "records": 10}


def raw(target: dict[str, Any], **phase: Any) -> dict[str, Any]:
    return {
        "target": {"name": "pg", "engine": "postgresql", **target},
        "dataset": DATASET,
        "phase": {**PHASE, **phase},
    }


def test_host_port_and_replicas() -> None:
    config = parse_config(raw({"host": "db-0", "port": 5432, "user": "dbbench",
                               "replicas": [{"host": "db-1", "port": 5432}]}))  # fmt: skip
    assert (config.target.engine, config.target.host, config.target.port) == (
        "postgresql", "db-0", 5432,
    )  # fmt: skip
    assert config.target.replicas[0].host == "db-1"


def test_uri_file_is_split_into_fields(tmp_path: Path) -> None:
    secret = tmp_path / "uri"
    secret.write_text("postgresql://bench:p%40ss@pg.example/app\n")
    step = tmp_path / "step.yaml"
    step.write_text(yaml.safe_dump(raw({"uriFile": str(secret)})))
    target = load_config(step).target
    assert (target.host, target.port, target.user, target.database) == (
        "pg.example", 5432, "bench", "app",
    )  # fmt: skip
    assert password(target) == "p@ss"
    secret.write_text("mysql://root@db/app")
    with pytest.raises(ConfigError, match="a postgresql URI looks like postgresql://"):
        load_config(step)


@pytest.mark.parametrize(
    ("target", "phase", "message"),
    [
        ({"uri": "postgresql://h/db"}, {}, "uri: only for mongodb"),
        ({"host": "h", "port": 5432}, {"writeConcern": "unacknowledged"}, "phase.writeConcern"),
        ({"host": "h", "port": 5432}, {"writeConcern": "majority"}, "durability is a server"),
    ],
)
def test_refusals_name_the_field(
    target: dict[str, Any], phase: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(raw(target, **phase))
