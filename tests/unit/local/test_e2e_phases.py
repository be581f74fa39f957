"""`make e2e`'s two phases (hack/dbbench_local/e2e.py): the concurrent tests on
several workers, then the disruptive ones alone, both whatever the first's
outcome; and the rule that keeps a concurrent test's runs within its share of
the node (tests/e2e/sharing.py). Pure: command lines and specs, no cluster.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from pathlib import Path

import pytest

from dbbench_contract.api import parse_quantity
from dbbench_local import e2e
from tests.e2e import ordering, sharing
from tests.e2e.conftest import small_spec
from tests.e2e.sharing import Demand

REPO = Path(__file__).resolve().parents[3]
NODE = Demand(parse_quantity("2"), parse_quantity("24Gi"))


@pytest.fixture(autouse=True)
def in_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # paths in PYTEST_ARGS are the checkout's


def test_the_concurrent_phase_then_the_disruptive_one_alone() -> None:
    concurrent, alone = e2e.phases("py", 4, [])
    assert concurrent.command[:3] == ["py", "-m", "pytest"]
    assert concurrent.command[-8:] == [
        "-m", "e2e and not disruptive", "-n", "4", "--dist", "loadgroup",
        "--no-loadscope-reorder", "tests/e2e"]  # fmt: skip
    assert alone.command[-5:] == ["-m", "e2e and disruptive", "-n", "0", "tests/e2e"]
    assert "--durations=0" in concurrent.command
    assert "--durations=0" in alone.command


def test_pytest_args_go_to_both_phases_and_paths_replace_the_suite() -> None:
    args = ["tests/e2e/test_failures.py", "-k", "timeout"]
    for phase in e2e.phases("py", 3, args):
        assert phase.command[-3:] == args
        assert "tests/e2e" not in phase.command
    # "tests" is -k's value here, not a path: the whole suite, one worker.
    (concurrent, _) = e2e.phases("py", 1, ["-k", "tests"])
    assert concurrent.command[-5:] == ["-n", "0", "tests/e2e", "-k", "tests"]


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [([0, 0], 0), ([0, 5], 0), ([5, 0], 0), ([1, 0], 1), ([0, 1], 1), ([2, 1], 2), ([5, 5], 5)],
)
def test_a_phase_that_selected_nothing_passes_unless_both_did(
    statuses: list[int], expected: int
) -> None:
    assert e2e.outcome(statuses) == expected


# -- the node's share -------------------------------------------------------------


def test_a_run_requests_its_members_and_one_steps_runner_pods() -> None:
    spec = small_spec(
        targets=[{"name": "m", "engine": "mariadb", "topology": "primaryReplica", "members": 3}],
        runner={"pods": 2, "threads": 2,
                "resources": {"requests": {"memory": "128Mi"}, "limits": {"cpu": "1"}}},
    )  # fmt: skip
    # Database pods: 250m / 512Mi each (small_spec); runner pods: a limit alone
    # requests the limit, as the API server defaults it.
    assert sharing.demand(spec, NODE) == Demand(
        Decimal("0.75") + 2, 3 * parse_quantity("512Mi") + 2 * parse_quantity("128Mi")
    )
    secret = {"uriSecretRef": {"name": "s", "key": "uri"}}
    external = small_spec(targets=[{"name": "x", "engine": "mariadb", "external": secret}])
    assert sharing.demand(external, NODE) == Demand(Decimal("0.1"), parse_quantity("128Mi"))


def test_a_run_larger_than_the_node_deploys_nothing_and_keeps_its_requests() -> None:
    spec = small_spec()
    spec["hardware"]["resources"] = {"requests": {"cpu": "64", "memory": "512Mi"}}
    assert sharing.demand(spec, NODE) == Demand()
    assert sharing.lowered_cpu_requests(spec, NODE) == spec  # still refused: NoNodeFits


def test_cpu_requests_are_lowered_and_nothing_else_changes() -> None:
    spec = small_spec(runner={"threads": 2, "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}})
    spec["targets"][0]["hardware"] = {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
    before = copy.deepcopy(spec)
    lowered = sharing.lowered_cpu_requests(spec, NODE)
    assert spec == before  # a copy
    assert lowered["hardware"]["resources"] == {
        "requests": {"cpu": "50m", "memory": "512Mi"},
        "limits": {"cpu": "1", "memory": "512Mi"},
    }
    assert lowered["targets"][0]["hardware"]["resources"]["requests"] == {
        "cpu": "50m", "memory": "1Gi"}  # fmt: skip
    assert lowered["runner"]["resources"] == {
        "requests": {"cpu": "50m"}, "limits": {"cpu": "1", "memory": "1Gi"}}  # fmt: skip
    assert {k: v for k, v in lowered.items() if k not in ("hardware", "targets", "runner")} == {
        k: v for k, v in before.items() if k not in ("hardware", "targets", "runner")}  # fmt: skip
    small = small_spec(runner={"threads": 1, "resources": {"requests": {"cpu": "10m"}}})
    assert sharing.lowered_cpu_requests(small, NODE)["runner"]["resources"] == {
        "requests": {"cpu": "10m"}}  # fmt: skip


def test_an_exclusive_run_is_refused_in_the_concurrent_phase_naming_the_marker() -> None:
    share = Demand(Decimal("0.6"), parse_quantity("8Gi"))
    assert sharing.sharing_problems("r", small_spec(), Demand(), share, NODE) == []
    unset = small_spec()
    del unset["hardware"]["exclusive"]  # the CRD's default: exclusive
    (problem,) = sharing.sharing_problems("r", unset, Demand(), share, NODE)
    assert problem.startswith("run r: spec.hardware.exclusive is true (the default when unset)")
    assert "@pytest.mark.disruptive" in problem


def test_a_run_beyond_the_workers_share_is_refused_counting_its_other_runs() -> None:
    share = Demand(Decimal("0.6"), parse_quantity("2Gi"))
    spec = small_spec()  # 250m + 100m, 512Mi + 128Mi
    assert sharing.sharing_problems("r", spec, Demand(Decimal("0.25"), 0), share, NODE) == []
    (problem,) = sharing.sharing_problems(
        "r", spec, Demand(Decimal("0.3"), parse_quantity("1Gi")), share, NODE
    )
    assert problem.startswith("run r requests 0.35 cpu, 640 MiB beside this worker's other "
                              "runs' 0.3 cpu, 1024 MiB: more than the worker's share of the "
                              "node (0.6 cpu, 2048 MiB)")  # fmt: skip


def test_the_concurrent_phase_starts_the_longest_tests_first() -> None:
    ids = ["tests/e2e/test_api_outage.py::test_x", "tests/e2e/test_failures.py::test_lost",
           "tests/e2e/test_failures.py::test_a_timeout_fails", "tests/e2e/test_schedules.py::t",
           "tests/e2e/test_field4.py::a", "tests/e2e/test_field4.py::b",
           "tests/e2e/test_tenant.py::t"]  # fmt: skip
    assert sorted(ids, key=ordering.rank) == [
        "tests/e2e/test_field4.py::a", "tests/e2e/test_field4.py::b",
        "tests/e2e/test_schedules.py::t", "tests/e2e/test_failures.py::test_a_timeout_fails",
        "tests/e2e/test_failures.py::test_lost",
        # not named: in their collection order, after the named ones
        "tests/e2e/test_api_outage.py::test_x", "tests/e2e/test_tenant.py::t",
    ]  # fmt: skip


def test_every_test_named_as_longest_exists() -> None:
    """A renamed or removed file would silently lose its place at the front."""
    for prefix in ordering.LONGEST_FIRST:
        path, _, test = prefix.partition("::")
        assert (REPO / path).is_file(), prefix
        if test:
            assert f"def {test}" in (REPO / path).read_text(), prefix
