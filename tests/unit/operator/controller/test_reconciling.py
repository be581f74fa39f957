"""One reconcile pass on the paths that need no cluster, and on what happens when
the cluster cannot be reached: the timeout still ends the run, and a failing
pass becomes a condition, retried and then fatal."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_contract.api.status import BenchmarkRunStatus
from dbbench_operator.controller.concluding import describe_error
from dbbench_operator.controller.reconciling import needs_pass, reconcile
from dbbench_operator.k8s.api import KubeError
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.steps.results_service import ResultsServiceError
from tests.fixtures.controlplane import forget_kube_clients

REPO = Path(__file__).resolve().parents[4]
RUN = RunRef(name="quick", namespace="team-a", uid="uid-1", generation=2)
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
SETTINGS = OperatorSettings(pass_error_limit=3, pass_error_window=60)


def quickstart(**overrides: Any) -> dict[str, Any]:
    spec = dict(yaml.safe_load((REPO / "examples" / "quickstart.yaml").read_text())["spec"])
    spec.update(overrides)
    return spec


@pytest.fixture
def no_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """The API is unreachable: a kubeconfig that does not exist, no cached client."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing-kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    forget_kube_clients()
    yield
    forget_kube_clients()


def test_semantic_problem_fails_with_a_warning_event_naming_the_field() -> None:
    outcome = reconcile(RUN, quickstart(timeout="1s"), {}, NOW, SETTINGS)
    assert outcome.status["phase"] == "Failed"
    assert "spec.timeout" in outcome.status["message"]
    assert "completedAt" in outcome.status
    assert "startedAt" not in outcome.status  # it never started
    assert outcome.status["cleanedUp"] is True  # and deployed nothing
    ((kind, reason, message),) = outcome.events
    assert (kind, reason) == ("Warning", "InvalidSpec")
    assert "spec.timeout" in message
    BenchmarkRunStatus.model_validate(outcome.status)


def test_unparseable_spec_fails_naming_the_field() -> None:
    # Bypasses admission (e.g. an old CRD): the operator applies the same rules.
    outcome = reconcile(RUN, quickstart(repeats=0), {}, NOW, SETTINGS)
    assert outcome.status["phase"] == "Failed"
    assert "spec.repeats" in outcome.status["message"]


def test_a_results_claim_other_than_the_services_is_refused_naming_the_field() -> None:
    # One results service owns one claim: spec.results.claimName cannot move a run's files.
    outcome = reconcile(RUN, quickstart(results={"claimName": "elsewhere"}), {}, NOW, SETTINGS)
    assert outcome.status["phase"] == "Failed"
    assert "spec.results.claimName" in outcome.status["message"]
    assert "'dbbench-results'" in outcome.status["message"]
    same = reconcile(RUN, quickstart(results={"claimName": "dbbench-results"}), {}, NOW, SETTINGS)
    assert same.status.get("phase") != "Failed"


def test_cold_cache_without_the_charts_permission_fails_before_starting() -> None:
    spec = quickstart(cache="cold", hardware={"exclusive": True})
    outcome = reconcile(RUN, spec, {}, NOW, SETTINGS)
    assert outcome.status["phase"] == "Failed"
    assert "coldCache.allowPrivilegedPods=true" in outcome.status["message"]
    failed = next(c for c in outcome.status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "ColdCacheNotAllowed"


def test_an_ended_and_cleaned_run_is_not_touched() -> None:
    for phase in ("Succeeded", "Failed"):
        status = {"phase": phase, "cleanedUp": True}
        assert not needs_pass(status)
        outcome = reconcile(RUN, quickstart(), status, NOW, SETTINGS)
        assert outcome.status == {}
        assert outcome.events == ()
    assert needs_pass({"phase": "Failed"})
    assert needs_pass({"phase": "Running"})


def test_a_timeout_ends_the_run_before_any_work_even_without_a_cluster(no_cluster: None) -> None:
    status = {"phase": "Running", "startedAt": "2026-10-23T12:00:00Z"}  # 30 days ago
    outcome = reconcile(RUN, quickstart(), status, NOW, SETTINGS)
    assert outcome.status["phase"] == "Failed"
    failed = next(c for c in outcome.status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "Timeout"
    assert "spec.timeout" in failed["message"]
    # Removing its children failed (no cluster): it is retried on later passes.
    assert "cleanedUp" not in outcome.status
    assert needs_pass(outcome.status)
    BenchmarkRunStatus.model_validate(outcome.status)


def test_a_failing_pass_becomes_a_condition_then_fails_the_run(no_cluster: None) -> None:
    started = {"phase": "Running", "startedAt": "2026-11-22T11:59:00Z"}
    first = reconcile(RUN, quickstart(), started, NOW, SETTINGS)
    assert "phase" not in first.status  # the phase stays; the pass is retried
    assert first.status["failedPasses"] == 1
    reconciled = next(c for c in first.status["conditions"] if c["type"] == "Reconciled")
    assert reconciled["status"] == "False"
    assert "retrying" in reconciled["message"]
    assert [e[0] for e in first.events] == ["Warning"]

    later = NOW + timedelta(seconds=30)
    second = reconcile(RUN, quickstart(), {**started, **first.status}, later, SETTINGS)
    assert second.status["failedPasses"] == 2
    assert second.events == ()  # one Warning per series, not one per pass

    third_at = NOW + timedelta(seconds=61)
    third = reconcile(RUN, quickstart(), {**started, **second.status}, third_at, SETTINGS)
    assert third.status["phase"] == "Failed"
    failed = next(c for c in third.status["conditions"] if c["type"] == "Failed")
    assert "3 attempts over 61s" in failed["message"]
    BenchmarkRunStatus.model_validate(third.status)


def test_errors_are_described_by_the_object_and_never_by_a_driver_message() -> None:
    class UnprocessableEntityError(Exception):
        status = 422
        body = '{"message": "StatefulSet.apps \\"db\\" is invalid: spec.template.spec.affinity"}'

    error = KubeError("apply", "StatefulSet", "team-a", "db", UnprocessableEntityError())
    reason, message = describe_error(error)
    assert reason == "KubernetesApiError"
    assert message.startswith("apply StatefulSet team-a/db: 422 StatefulSet.apps")
    assert describe_error(ResultsServiceError("POST x: HTTP 409"))[0] == "ResultsServiceError"
    assert describe_error(LookupError("Secret s has no key k")) == (
        "SetupError", "Secret s has no key k")  # fmt: skip

    class OperationFailure(Exception):  # noqa: N818 - pymongo's name
        pass

    OperationFailure.__module__ = "pymongo.errors"
    leak = OperationFailure("auth failed for mongodb://root:hunter2@db")
    reason, message = describe_error(leak)
    assert reason == "DatabaseError"
    assert "hunter2" not in message


def test_a_psycopg_error_is_described_by_its_type_only() -> None:
    import psycopg  # noqa: PLC0415

    leak = psycopg.OperationalError("connection failed: host=db password=hunter2")
    assert describe_error(leak) == ("DatabaseError", "database driver error (OperationalError)")
