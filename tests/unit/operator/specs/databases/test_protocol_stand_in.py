"""`protocolStandIn`: a MongoDB-protocol server (the local node's FerretDB) in
place of mongod. Refused at admission except as a standalone with an image and
no settings (tests/data/invalid/stand-in-*.yaml, against the real API server);
here, what the operator and the chart do with an accepted one."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import yaml

from dbbench_contract.api import parse_spec
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import BUILT_IN_ENGINE_IMAGES
from dbbench_operator.specs.addresses import topology_request
from dbbench_operator.specs.databases.rendering import build_values, charts_dir, render
from dbbench_operator.specs.databases.sizing import engine_settings
from tests.fixtures.topology import make_request

STAND_IN = "localhost/dbbench/ferretdb-mongodb-standin:1.24.0"
RUN = RunRef(name="standin", namespace="team-a", uid="42-uid", generation=1)


def request_for(**target: Any) -> Any:
    spec = parse_spec({
        "targets": [{"name": "ferret", "engine": "mongodb", **target}],
        "hardware": {"resources": {"limits": {"memory": "2Gi"}}},
        "dataset": {"records": 1000},
        "phases": [{"name": "load", "type": "insert"}],
    })  # fmt: skip
    return topology_request(RUN, spec, spec.targets[0], "cluster.local", BUILT_IN_ENGINE_IMAGES)


def test_the_operator_deploys_the_image_without_mongod_settings(helm_on_path: str) -> None:
    request = request_for(image=STAND_IN, protocolStandIn=True)
    assert request.protocol_stand_in
    # mongod would get wiredTigerCacheSizeGB from the 2Gi limit; the stand-in has none.
    assert engine_settings(request) == {}
    assert request_for(image="mongo:8.0").protocol_stand_in is False
    assert "wiredTigerCacheSizeGB" in engine_settings(request_for(image="mongo:8.0"))
    (sts,) = [d for d in render(request) if d["kind"] == "StatefulSet"]
    pod = sts["spec"]["template"]
    container = pod["spec"]["containers"][0]
    assert container["image"] == STAND_IN
    assert pod["metadata"]["labels"]["dbbench.io/protocol-stand-in"] == "mongodb"
    # The mongod command line the stand-in's entrypoint translates, nothing more.
    assert container["args"] == ["mongod", "--bind_ip_all", "--port=27017", "--dbpath=/data/db"]
    # The root user comes from the same variables as with mongo.
    names = [e["name"] for e in container["env"]]
    assert names == ["MONGO_INITDB_ROOT_USERNAME", "MONGO_INITDB_ROOT_PASSWORD"]


def test_a_real_mongo_image_gets_no_stand_in_label(helm_on_path: str) -> None:
    (sts,) = [d for d in render(request_for()) if d["kind"] == "StatefulSet"]
    assert "dbbench.io/protocol-stand-in" not in sts["spec"]["template"]["metadata"]["labels"]


def test_the_request_refuses_a_replicated_stand_in() -> None:
    with pytest.raises(ValueError, match="standalone mongodb target only"):
        make_request("mongodb", "replicaSet", 3, protocol_stand_in=True)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"topology": "replicaSet"}, "runs as topology standalone only"),
        ({"topology": "sharded"}, "runs as topology standalone only"),
        ({"topology": "standalone", "settings": {"wiredTigerCacheSizeGB": "1"}},
         "settings are mongod flags"),
    ],
)  # fmt: skip
def test_the_chart_alone_refuses_what_a_stand_in_cannot_be(
    helm_on_path: str, values: dict[str, Any], message: str
) -> None:
    request = make_request("mongodb", "standalone", image=STAND_IN, protocol_stand_in=True)
    merged = {**build_values(request), **values}
    result = subprocess.run(
        [helm_on_path, "template", "x", str(charts_dir() / "mongodb"), "--values", "-"],
        input=yaml.safe_dump(merged), capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0
    assert "protocolStandIn: " in result.stderr
    assert message in result.stderr
