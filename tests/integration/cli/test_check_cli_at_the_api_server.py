"""`dbbench check` says what the API server and the operator say (issue 29).

The same files as tests/unit/cli/test_check_cli.py go to the real
kube-apiserver (a server-side dry run with strict field validation, as
`kubectl create` does) and, for what the API server accepts, through the
operator's admission (`controller/reconciling.admitted`: the spec, the results
claim and the series label of a tolerance, on the stored run, as a pass does);
the `dbbench` command runs on them and the field path and message of every
refusal are compared.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from dbbench_contract.api import GROUP, PLURAL, VERSION
from dbbench_operator.controller.reconciling import admitted
from dbbench_operator.schedules.ticking import admit
from dbbench_operator.settings import OperatorSettings
from tests.support.manifests import (
    INVALID,
    INVALID_SCHEDULES,
    REFUSED_SCHEDULES,
    REPO,
    SCHEDULE_EXAMPLES,
    crd_and_namespace,
    install_schedule_crd,
    load,
)
from tests.unit.cli.test_check_cli import (
    EXAMPLES,
    REFUSED,
    WORDING,
    cli_refusals,
    dbbench_check,
)

NAMESPACE = "dbbench-check-test"


@pytest.fixture(scope="module")
def cluster(kube_cluster: Any) -> Iterator[Any]:
    with crd_and_namespace(kube_cluster, NAMESPACE, "dbbench-check-test") as cluster:
        install_schedule_crd(cluster, "dbbench-check-test")
        yield cluster


def server_refusals(api: client.CustomObjectsApi, path: Path) -> list[tuple[str, str]]:
    """What the API server says to a create of the file (dry run, strict field
    validation), then, if it stores it, what the operator's admission says (a run's
    first pass, or a schedule's tick)."""
    doc = load(path)
    schedule = doc.get("kind") == "BenchmarkSchedule"
    try:
        stored = api.create_namespaced_custom_object(
            GROUP, VERSION, NAMESPACE, "benchmarkschedules" if schedule else PLURAL, doc,
            dry_run="All", field_validation="Strict",
        )  # fmt: skip
    except ApiException as exc:
        status = json.loads(exc.body)
        causes = (status.get("details") or {}).get("causes") or []
        if causes:
            return [(c.get("field", ""), c["message"]) for c in causes]
        # Strict decoding: one message listing the unknown fields.
        unknown = re.findall(r'unknown field "([^"]+)"', status["message"])
        assert unknown, status
        return [(field, f'unknown field "{field}"') for field in unknown]
    if schedule:
        _, refusals = admit(stored["spec"], OperatorSettings().results_claim)
        return [(p.field, p.message) for p in refusals]
    labels = (stored.get("metadata") or {}).get("labels")
    _, problems = admitted(stored["spec"], OperatorSettings(), labels)
    return [(p.field, p.message) for p in problems]


@pytest.mark.integration
def test_dbbench_check_says_what_the_api_server_and_the_operator_say(cluster: Any) -> None:
    api = client.CustomObjectsApi(cluster.api_client())
    paths = [p.relative_to(REPO) for p in (*INVALID, *REFUSED, *WORDING, *EXAMPLES)]
    assert len(paths) >= 86 + 8 + 12 + 20
    offline = dbbench_check(*paths).stdout
    differences, refused = [], 0
    for path in paths:
        expected = sorted(server_refusals(api, REPO / path))
        got = sorted(cli_refusals(offline, path))
        refused += bool(expected)
        if got != expected:
            differences.append((str(path), {"api server/operator": expected, "dbbench check": got}))
    assert differences == []
    assert refused == len(INVALID) + len(REFUSED) + len(WORDING)


@pytest.mark.integration
def test_dbbench_check_says_what_they_say_of_schedules(cluster: Any) -> None:
    api = client.CustomObjectsApi(cluster.api_client())
    paths = [p.relative_to(REPO) for p in (*INVALID_SCHEDULES, *REFUSED_SCHEDULES,
                                           *SCHEDULE_EXAMPLES)]  # fmt: skip
    offline = dbbench_check(*paths).stdout
    differences, refused = [], 0
    for path in paths:
        expected = sorted(server_refusals(api, REPO / path))
        got = sorted(cli_refusals(offline, path))
        refused += bool(expected)
        if got != expected:
            differences.append((str(path), {"api server/operator": expected, "dbbench check": got}))
    assert differences == []
    assert refused == len(INVALID_SCHEDULES) + len(REFUSED_SCHEDULES)
