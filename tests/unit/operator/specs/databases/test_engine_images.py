"""Engine images: the dbbench chart's `engines` values reach the operator pod,
and the operator picks each deployed target's server image from them unless the
target names its own `image`. The chain is checked link by link through the
real helm: chart values -> operator env -> OperatorSettings -> TopologyRequest
-> the database chart's StatefulSet."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dbbench_contract.api import parse_spec
from dbbench_local.install import engine_image_values
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import (
    BUILT_IN_ENGINE_IMAGES,
    ENGINE_IMAGES_ENV,
    EngineImage,
    OperatorSettings,
    engine_images,
)
from dbbench_operator.specs.addresses import server_image, topology_request
from dbbench_operator.specs.databases.rendering import render
from tests.support.helm import env_of, operator_container
from tests.support.helm import render as render_dbbench_chart

RUN = RunRef(name="images", namespace="team-a", uid="5678-uid", generation=1)
NODE_VALUES = {
    "engines": {
        "mysql": {"repository": "localhost/dbbench/mysql", "version": "9.7"},
        "mariadb": {"repository": "localhost/dbbench/mariadb", "version": "11.8"},
    }
}


def spec(*targets: dict[str, Any]) -> Any:
    return parse_spec({
        "targets": list(targets),
        "dataset": {"records": 1000},
        "phases": [{"name": "load", "type": "insert"}],
    })  # fmt: skip


def operator_settings(values: dict[str, Any] | None) -> OperatorSettings:
    """What the operator pod reads, from the chart rendered with these values."""
    env = env_of(operator_container(render_dbbench_chart(values)))
    literal = {k: v for k, v in env.items() if isinstance(v, str)}
    return OperatorSettings.from_env(literal)


def server_images(settings: OperatorSettings, *targets: dict[str, Any]) -> list[str]:
    """The image of the first container of every database workload, per target."""
    run_spec = spec(*targets)
    images = []
    for target in run_spec.targets:
        request = topology_request(RUN, run_spec, target, "cluster.local", settings.engine_images)
        workloads = [d for d in render(request) if d["kind"] in ("StatefulSet", "Deployment")]
        found = {w["spec"]["template"]["spec"]["containers"][0]["image"] for w in workloads}
        assert len(found) == 1, found
        images.append(found.pop())
    return images


TARGETS = (
    {"name": "my", "engine": "mysql"},
    {"name": "maria", "engine": "mariadb", "topology": "primaryReplica"},
    {"name": "mongo", "engine": "mongodb", "topology": "replicaSet"},
)


def test_the_charts_defaults_are_the_official_images(helm_on_path: str) -> None:
    settings = operator_settings(None)
    assert dict(settings.engine_images) == dict(BUILT_IN_ENGINE_IMAGES)
    assert server_images(settings, *TARGETS) == ["mysql:8.4", "mariadb:11.8", "mongo:8.0"]


def test_engine_values_choose_the_image_of_targets_without_one(helm_on_path: str) -> None:
    settings = operator_settings(NODE_VALUES)
    assert server_images(settings, *TARGETS) == [
        "localhost/dbbench/mysql:9.7",
        "localhost/dbbench/mariadb:11.8",
        "mongo:8.0",  # not in the values: the official image stays
    ]


def test_a_targets_version_and_image_still_win(helm_on_path: str) -> None:
    settings = operator_settings(NODE_VALUES)
    assert server_images(
        settings,
        {"name": "pinned", "engine": "mysql", "version": "9.6"},
        {"name": "own", "engine": "mysql", "version": "9.6", "image": "registry.test/my:1"},
    ) == ["localhost/dbbench/mysql:9.6", "registry.test/my:1"]


def test_the_local_installs_values_come_from_the_image_manifest(
    tmp_path: Any, helm_on_path: str
) -> None:
    manifest = tmp_path / "manifest.txt"
    manifest.write_text(
        "busybox.tar docker.io/library/busybox:1.36\n"
        "ferretdb.tar localhost/dbbench/ferretdb-mongodb-standin:1.24.0\n"
        "mariadb.tar localhost/dbbench/mariadb:11.8\n"
        "mysql.tar localhost/dbbench/mysql:9.7\n"
        "postgresql.tar localhost/dbbench/postgres:17\n"
    )
    values = engine_image_values(manifest)
    assert values == [
        "engines.mariadb.repository=localhost/dbbench/mariadb",
        "engines.mariadb.version=11.8",
        "engines.mysql.repository=localhost/dbbench/mysql",
        "engines.mysql.version=9.7",
        "engines.postgresql.repository=localhost/dbbench/postgres",
        "engines.postgresql.version=17",
    ]
    # As `helm --set-string` passes them: 9.7 stays a string tag, not a number.
    extra = [f"--set-string={v}" for v in values]
    env = env_of(operator_container(render_dbbench_chart(extra=extra)))
    assert json.loads(env[ENGINE_IMAGES_ENV])["mysql"] == {
        "repository": "localhost/dbbench/mysql",
        "version": "9.7",
    }
    assert json.loads(env[ENGINE_IMAGES_ENV])["postgresql"] == {
        "repository": "localhost/dbbench/postgres",
        "version": "17",
    }
    assert engine_image_values(tmp_path / "missing.txt") == []


def test_the_settings_parser_keeps_what_the_chart_leaves_out() -> None:
    images = engine_images(json.dumps({"mysql": {"version": "9.7"}}))
    assert images["mysql"] == EngineImage("mysql", "9.7")
    assert images["mongodb"] == EngineImage("mongo", "8.0")
    assert engine_images("")["mariadb"] == EngineImage("mariadb", "11.8")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "is not JSON"),
        ('["mysql"]', "must be a JSON object"),
        ('{"mysql": "mysql:9"}', "mysql must be an object"),
        ('{"cassandra": {"repository": "cassandra"}}', "needs a repository and a version"),
    ],
)
def test_bad_engine_images_are_refused_naming_the_setting(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as refused:
        engine_images(text)
    assert ENGINE_IMAGES_ENV in str(refused.value)


def test_server_image_is_pure() -> None:
    target = spec({"name": "m", "engine": "mariadb"}).targets[0]
    images = {**BUILT_IN_ENGINE_IMAGES, "mariadb": EngineImage("registry.test/mariadb", "11.4")}
    assert server_image(target, images) == ("registry.test/mariadb:11.4", "11.4")
