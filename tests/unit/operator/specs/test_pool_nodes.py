"""A run naming a pool no node has is refused at once with the field and the
selector (pure: node objects as the API server returns them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dbbench_contract.api import parse_spec
from dbbench_operator.specs.pool_nodes import NO_NODE_IN_POOL, absent_pool, missing_pool

REPO = Path(__file__).resolve().parents[4]
POOL = "dbbench.io/pool"


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}}}


# As `DBBENCH_NODES=4` makes them (hack/dbbench_local/kind_pools.py).
KIND = [node("cp"), node("w1", **{POOL: "runners"}), node("w2", **{POOL: "db-small"}),
        node("w3", **{POOL: "db-large"})]  # fmt: skip


def spec_with(**overrides: Any) -> Any:
    raw = dict(yaml.safe_load((REPO / "examples" / "quickstart.yaml").read_text())["spec"])
    raw.update(overrides)
    return parse_spec(raw)


def test_a_pool_value_no_node_has_is_refused_with_the_field_selector_and_the_pools_there() -> None:
    spec = spec_with(hardware={"nodeSelector": {POOL: "db-huge"}})
    reason, message = missing_pool(spec, KIND) or ("", "")
    assert reason == NO_NODE_IN_POOL
    assert message.startswith(
        "spec.hardware.nodeSelector={dbbench.io/pool=db-huge}: no node has these labels "
        "(4 node(s) seen; the nodes' values of dbbench.io/pool: db-large, db-small, runners)"
    ), message


def test_a_target_and_the_runners_are_named_by_their_own_fields() -> None:
    raw = yaml.safe_load((REPO / "examples" / "quickstart.yaml").read_text())["spec"]
    target = {**raw["targets"][0], "hardware": {"nodeSelector": {POOL: "db-small"}}}
    placed = spec_with(targets=[target], runner={**raw.get("runner", {}),
                                                 "nodeSelector": {POOL: "runner"}})  # fmt: skip
    reason, message = missing_pool(placed, KIND) or ("", "")
    assert reason == NO_NODE_IN_POOL
    assert message.startswith("spec.runner.nodeSelector={dbbench.io/pool=runner}: "), message
    wrong_target = {**target, "hardware": {"nodeSelector": {POOL: "db-smal"}}}
    reason, message = missing_pool(spec_with(targets=[wrong_target]), KIND) or ("", "")
    assert message.startswith("spec.targets[0].hardware.nodeSelector={dbbench.io/pool=db-smal}")


def test_pools_that_exist_and_pools_that_are_not_judged_pass() -> None:
    assert missing_pool(spec_with(hardware={"nodeSelector": {POOL: "db-large"}}), KIND) is None
    # Every label of the selector on one node, not spread over two.
    both = {POOL: "db-large", "kubernetes.io/hostname": "w3"}
    assert absent_pool(both, "f", KIND) is None
    crossed = {POOL: "db-large", "kubernetes.io/hostname": "w2"}
    assert absent_pool(crossed, "f", KIND) is not None
    # A key no node carries: a pool an autoscaler may add under its own label.
    assert absent_pool({"cloud.example/pool": "big"}, "f", KIND) is None
    # No node reported yet; no selector at all.
    assert absent_pool({POOL: "db-huge"}, "f", []) is None
    assert missing_pool(spec_with(), KIND) is None
