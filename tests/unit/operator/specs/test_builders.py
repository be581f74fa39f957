"""Pure builders of the run's own objects: names, ownership, credentials, plan."""

from __future__ import annotations

import base64
import json
import re
from itertools import count
from pathlib import Path

import pytest
import yaml

from dbbench_contract.api import parse_spec
from dbbench_contract.api.placement import Runner
from dbbench_operator.naming import (
    RunRef,
    adopt,
    child_name,
    credentials_secret_name,
    plan_configmap_name,
    run_labels,
)
from dbbench_operator.specs.addresses import topology_request
from dbbench_operator.specs.credentials import build_credentials_secret
from dbbench_operator.specs.databases.request import SECRET_KEYFILE_KEY, SECRET_PASSWORD_KEY
from dbbench_operator.specs.plan import build_plan_configmap, plan
from dbbench_operator.specs.runner_job import job_name

REPO = Path(__file__).resolve().parents[4]
RUN = RunRef(name="quick", namespace="team-a", uid="1234-uid", generation=3)
DNS_1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def example(name: str) -> dict[str, object]:
    return dict(yaml.safe_load((REPO / "examples" / name).read_text())["spec"])


def test_child_names_stay_valid_and_unique_for_long_run_names() -> None:
    long_a = RunRef("a" * 60 + "x", "ns", "u")
    long_b = RunRef("a" * 60 + "y", "ns", "u")
    for run in (RUN, long_a, long_b):
        name = child_name(run, "credentials")
        assert len(name) <= 63
        assert DNS_1123.match(name)
        assert name.endswith("-credentials")
    assert child_name(long_a, "plan") != child_name(long_b, "plan")


# The longest BenchmarkRun names the API server accepts (DNS subdomains, 253).
MAXIMAL = [("9x-" + "a.b-c" * 50)[:252] + "z", "a" * 253, "a." * 126 + "b", "a" * 62 + "-b"]
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


@pytest.mark.parametrize("name", MAXIMAL)
def test_every_name_and_label_fits_for_the_longest_run_names(name: str) -> None:
    run = RunRef(name, "ns", "0b6f3a52-3b9e-4c55-9d59-8a1b6f2f4e11")
    spec = parse_spec(example("quickstart.yaml"))
    steps = plan(spec)
    names = [credentials_secret_name(run), plan_configmap_name(run)]
    names += [job_name(run, s) for s in steps]
    for child in names:
        assert len(child) <= 63, child
        assert DNS_1035.match(child), child
    # Indexed pods are `<job>-<index>` (runner.pods <= 64): hostnames stay labels.
    pods_max = Runner.model_fields["pods"].metadata
    assert any(getattr(m, "le", None) == 64 for m in pods_max)
    assert all(len(f"{job_name(run, s)}-63") <= 63 for s in steps)
    for value in run_labels(run, "runner").values():
        assert len(value) <= 63, value
        assert LABEL_VALUE.match(value), value
    assert len({child_name(RunRef(n, "ns", "u"), "plan") for n in MAXIMAL}) == len(MAXIMAL)


def test_names_that_only_clean_up_alike_stay_apart() -> None:
    assert child_name(RunRef("a.b", "ns", "u"), "plan") != child_name(RunRef("a-b", "ns", "u"),
                                                                       "plan")  # fmt: skip
    assert child_name(RunRef("quick", "ns", "u"), "plan") == "quick-plan"  # unchanged when valid


def test_adopt_sets_controller_owner_namespace_and_run_label() -> None:
    adopted = adopt({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}, RUN)
    meta = adopted["metadata"]
    assert meta["namespace"] == "team-a"
    assert meta["labels"]["dbbench.io/run"] == "quick"
    assert meta["labels"]["dbbench.io/run-uid"] == "1234-uid"
    (owner,) = meta["ownerReferences"]
    assert owner == {
        "apiVersion": "dbbench.io/v1alpha1", "kind": "BenchmarkRun", "name": "quick",
        "uid": "1234-uid", "controller": True, "blockOwnerDeletion": True,
    }  # fmt: skip


def test_credentials_are_random_owned_and_the_keyfile_is_valid_for_mongod() -> None:
    counter = count()

    def token(n: int) -> str:
        return f"t{next(counter)}-" + "x" * n

    secret = build_credentials_secret(RUN, token, "the-results-token")
    data = secret["stringData"]
    assert data["results-token"] == "the-results-token"
    assert secret["metadata"]["ownerReferences"][0]["uid"] == RUN.uid
    assert data[SECRET_PASSWORD_KEY].startswith("t")
    keyfile = data[SECRET_KEYFILE_KEY]
    # mongod: 6..1024 characters of the base64 alphabet.
    assert 6 <= len(keyfile) <= 1024
    assert re.fullmatch(r"[A-Za-z0-9+/=]+", keyfile)
    base64.b64decode(keyfile + "=" * (-len(keyfile) % 4))
    assert len(set(data.values())) == len(data), "each credential is generated separately"


def test_plan_is_targets_then_phases_then_repeats_and_never_repeats_loads() -> None:
    spec = parse_spec(example("quickstart.yaml") | {"repeats": 3})
    steps = plan(spec)
    phases = [p.name for p in spec.phases]
    loads = sum(1 for p in spec.phases if p.type == "insert")
    assert len(steps) == len(spec.targets) * (loads + (len(phases) - loads) * 3)
    assert [s.index for s in steps] == list(range(len(steps)))
    assert steps[0].phase == phases[0]
    assert steps[0].repeat == 1
    assert {s.target for s in steps} == {t.name for t in spec.targets}
    assert len({s.key for s in steps}) == len(steps)
    cm = build_plan_configmap(RUN, steps)
    assert json.loads(cm["data"]["plan.json"])[0]["target"] == spec.targets[0].name


def test_topology_request_carries_the_hardware_and_cleanup() -> None:
    spec = parse_spec(
        example("quickstart.yaml")
        | {
            "cleanup": "Retain",
            "hardware": {
                "nodeSelector": {"pool": "db"},
                "tolerations": [{"key": "db", "operator": "Exists", "effect": "NoSchedule"}],
                "resources": {"limits": {"memory": "2Gi", "cpu": "1"}},
                "storage": {"storageClassName": "fast", "size": "5Gi"},
            },
        }
    )
    request = topology_request(RUN, spec, spec.targets[0])
    assert request.hardware.node_selector == {"pool": "db"}
    assert request.hardware.tolerations == (
        {"key": "db", "operator": "Exists", "effect": "NoSchedule"},
    )
    assert request.hardware.resources["limits"]["memory"] == "2Gi"
    assert request.hardware.storage.storage_class_name == "fast"
    assert request.hardware.storage.size == "5Gi"
    assert request.cleanup == "Retain"
    assert request.credentials_secret == "quick-credentials"
    assert (request.run_name, request.run_uid, request.namespace) == ("quick", "1234-uid", "team-a")
