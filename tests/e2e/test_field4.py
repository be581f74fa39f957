"""Field benchmark 4's small variant on the local node, end to end:
examples/field/4-oltp-replicas-cost-small.yaml, MySQL and PostgreSQL
primary/replica and the MongoDB-protocol stand-in, each target with its own
resources and price; the 85:15:5 mix as thread groups (16, 3 and 1 of 20
connections), each group's in the summary and the report; the report compares
the three and costs each at its own price and pod count.

Its own module, so its own worker (`--dist loadgroup`): the run's three
targets go one after another (docs/decisions.md), the longest chain of the
concurrent phase, and until 2026-11-29 it shared test_postgresql.py's module
fixture, so that worker waited for PostgreSQL's two runs and then this one.
The run is deleted at the end and the test waits, bounded, until nothing of
it is left.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from dbbench_contract.durations import parse_duration
from dbbench_local.install import Kube
from tests.e2e.conftest import (
    FIELD,
    apply_run,
    delete_run,
    node_image,
    results_json,
    results_text,
    run_uid,
    session_name,
    wait_for_report,
    wait_phase,
)
from tests.e2e.expectations import check_results
from tests.e2e.sizes import timed_at
from tests.support.pages import Page, parse

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3600)]

FIELD4 = FIELD / "4-oltp-replicas-cost-small.yaml"

# Field 4's measured phases as the e2e suite runs them. The example's 30 s of
# 40 unpaced connections per phase and target (3 targets x 2 phases: three
# minutes of both cores) were the concurrent phase's largest CPU cost; what is
# checked here (thread groups, storage counts, the report's comparison and
# costs) holds at any length. `make reproduce` runs the example as written.
FIELD4_PHASE_S = "10s"
# And its data set: the example's 20,000 vehicle tests loaded three times, one
# target after another, and the stand-in's reads are table scans of all of
# them. What is checked (every record the mix inserted counted beside the
# load, each thread group's operations) holds at any size.
FIELD4_RECORDS = 5000


def _field4() -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load(FIELD4.read_text())["spec"]
    spec["phases"] = timed_at(spec["phases"], FIELD4_PHASE_S)
    spec["dataset"] = {**spec["dataset"], "records": FIELD4_RECORDS}
    return spec


FIELD4_RUN = session_name("field4-small")
FIELD4_SPEC = _field4()


@pytest.fixture(scope="module")
def finished(kube: Kube) -> Iterator[dict[str, Any]]:
    """The run's status once it ended (bounded by its own timeout and a minute);
    the run is deleted at the end of the module, leaving nothing behind."""
    try:
        uid = apply_run(kube, FIELD4_RUN, FIELD4_SPEC)
        status = wait_phase(kube, FIELD4_RUN, ("Succeeded", "Failed"),
                            timeout=parse_duration(FIELD4_SPEC["timeout"]) + 60)  # fmt: skip
        # The same run as applied (a re-created run would have another uid).
        assert run_uid(kube, FIELD4_RUN) == uid
        yield status
    finally:
        with contextlib.suppress(RuntimeError, TimeoutError):
            delete_run(kube, FIELD4_RUN)


def test_field4_run_succeeds_as_configured_with_a_report(
    kube: Kube, finished: dict[str, Any]
) -> None:
    status = finished
    check_results(FIELD4_RUN, FIELD4_SPEC, status)
    files = wait_for_report(kube, status)
    assert "report.html" in files
    assert "summary.json" in files


PRICES = {t["name"]: t["hardware"]["pricePerHour"] for t in FIELD4_SPEC["targets"]}
MEMORY = {"mysql": 2**30, "postgres": 2**30, "mongo-standin": 512 * 2**20}
PODS = {"mysql": 2, "postgres": 2, "mongo-standin": 1}


@pytest.fixture(scope="module")
def field4_report(kube: Kube, finished: dict[str, Any]) -> Page:
    status = finished
    assert "report.html" in wait_for_report(kube, status)
    return parse(results_text(kube, status, "report.html"))


def test_field4_targets_ran_on_their_own_hardware(kube: Kube, finished: dict[str, Any]) -> None:
    assert set(PRICES) == set(MEMORY) == {t["name"] for t in FIELD4_SPEC["targets"]}
    # The example names the stand-in by the reference images.sh gives it.
    standin_spec = next(t for t in FIELD4_SPEC["targets"] if t.get("protocolStandIn"))
    assert standin_spec["image"] == node_image("ferretdb.tar")
    assert len(set(PRICES.values())) > 1  # not all the same price
    status = finished
    for target, memory in MEMORY.items():
        environment = results_json(kube, status, f"{target}/load/1/pod-0/environment.json")
        # The limits the database pods carried, read from the pods when the step began.
        assert environment["database"]["memoryLimitBytes"] == memory, (target, environment)
        assert len(environment["database"]["pods"]) == PODS[target], (target, environment)
    standin = results_json(kube, status, "mongo-standin/load/1/pod-0/environment.json")
    assert "(FerretDB v1.24.0)" in standin["server"]["version"]


def test_field4_storage_counts_every_record_the_mix_inserted(
    kube: Kube, finished: dict[str, Any]
) -> None:
    """After the 85:15:5 phase each target holds the load plus exactly the records
    the mix inserted (the status shows the count); the read-only phase adds none.
    The mix is thread groups: the insert group inserts on every target, also on
    the stand-in, whose reads are table scans of every document (with weights
    per operation, its few operations could draw no insert at all)."""
    loaded = FIELD4_SPEC["dataset"]["records"]
    status = finished
    assert [t["name"] for t in status["targets"]] == list(PODS), status["targets"]
    for target in status["targets"]:
        name = target["name"]
        phases = {p["name"]: p for p in target["phases"]}
        oltp = phases["oltp-primary"]
        summary = results_json(kube, status, f"{name}/oltp-primary/1/summary.json")
        inserts = summary["operationsByType"].get("insert", {"rows": 0})
        assert "records" in oltp, (name, oltp)
        inserted = oltp["records"]
        assert inserted == inserts["rows"] == summary["records"], (name, oltp, summary)
        assert inserted > 0, (name, summary["operationsByType"])
        for phase in ("oltp-primary", "read-only-primary"):
            storage = phases[phase]["storage"]
            assert storage["records"] == loaded + inserted, (name, phase, storage)


def test_field4_thread_groups_each_ran_and_the_report_shows_them(
    kube: Kube, finished: dict[str, Any], field4_report: Page
) -> None:
    """mix.by: connections over the example's 20 connections: 16 read, 3 insert,
    1 update, on every target; each group ran its type (the per-connection proof
    is tests/integration/runner/test_thread_groups_at_the_server.py), and the
    report gives each group's connections beside its figures."""
    status = finished
    groups = {"read": 16, "insert": 3, "update": 1}
    for target in PODS:
        summary = results_json(kube, status, f"{target}/oltp-primary/1/summary.json")
        assert summary["connectionGroups"] == groups, (target, summary)
        by_type = summary["operationsByType"]
        assert set(by_type) == set(groups), (target, by_type)
        assert all(v["operations"] > 0 for v in by_type.values()), (target, by_type)
        for kind, size in groups.items():
            cell = field4_report.find("operations", "groupConnections", target=target,
                                      phase="oltp-primary", repeat=1, op=kind)  # fmt: skip
            assert cell.value == str(size), (target, kind, cell)
        read_only = results_json(kube, status, f"{target}/read-only-primary/1/summary.json")
        assert read_only["connectionGroups"] == {}


def test_field4_report_compares_the_three_and_costs_each_target(
    kube: Kube, finished: dict[str, Any], field4_report: Page
) -> None:
    status = finished
    page = field4_report
    assert list(PRICES) == list(PODS)  # every target of the run is costed below
    for phase in ("oltp-primary", "read-only-primary"):
        for target, price in PRICES.items():
            summary = results_json(kube, status, f"{target}/{phase}/1/summary.json")
            mean = summary["throughput"]  # one repeat: the mean is this step's
            side = page.find("side-by-side", f"throughput.mean.{target}", phase=phase)
            assert side.value is not None
            assert float(side.value) == pytest.approx(mean, rel=1e-9)
            where = {"target": target, "phase": phase}
            cell = page.find("cost", "pricePerHour", **where)
            assert cell.value is not None
            assert float(cell.value) == price
            pods = page.find("cost", "pods", **where)
            assert pods.value == repr(PODS[target])
            expected = price * PODS[target] * 1_000_000 / (mean * 3600)
            cost = page.find("cost", "costPerMillion", **where)
            assert cost.value is not None
            assert float(cost.value) == pytest.approx(expected, rel=1e-9), (target, phase)
