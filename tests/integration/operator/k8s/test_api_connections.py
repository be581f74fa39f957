"""The operator's API client keeps a connection for every pass thread: a call made
while all of them are busy must not pay a TLS handshake each time (real
kube-apiserver)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest

from dbbench_operator.controller import run_loop
from dbbench_operator.k8s import api
from tests.fixtures.controlplane import ControlPlane, forget_kube_clients


@pytest.fixture
def admin_client(kube_cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("KUBECONFIG", str(kube_cluster.kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    forget_kube_clients()
    yield
    forget_kube_clients()


def test_every_pass_thread_keeps_its_connection_between_passes(admin_client: None) -> None:
    workers = run_loop.PASS_WORKERS
    together = threading.Barrier(workers)

    def call(_: int) -> int:
        together.wait(timeout=30)  # every thread calls at once
        return len(api.list_objects("v1", "Node", None))

    api.list_objects("v1", "Node", None)  # the client and its discovery, made once
    for _ in range(3):  # a pass per thread, three times
        list(run_loop.PASSES.map(call, range(workers)))
    client = api.api_client()
    pool = client.rest_client.pool_manager.connection_from_url(client.configuration.host)
    # The first round opens one connection per thread; later rounds reuse them.
    assert pool.num_connections <= workers, pool.num_connections


def test_writes_whose_answer_is_not_parsed_still_give_their_connection_back(
    admin_client: None,
) -> None:
    workers = run_loop.PASS_WORKERS
    together = threading.Barrier(workers)
    api.apply(config_map(0))  # the client and its discovery, made once

    def write(i: int) -> None:
        together.wait(timeout=30)
        api.apply(config_map(i))  # server-side apply: its answer is read, not parsed

    for _ in range(3):
        list(run_loop.PASSES.map(write, range(workers)))
    client = api.api_client()
    pool = client.rest_client.pool_manager.connection_from_url(client.configuration.host)
    assert pool.num_connections <= workers + 1, pool.num_connections


def config_map(i: int) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"connections-{i}", "namespace": "default"},
            "data": {"i": str(i)}}  # fmt: skip


def test_lists_are_read_a_page_at_a_time_and_every_object_is_seen(
    kube_cluster: ControlPlane, admin_client: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"paged-{i}", "namespace": "default",
                          "labels": {"test": "paged"}},
             "spec": {"containers": [{"name": "c", "image": "none"}]}}
            for i in range(5)]  # fmt: skip
    kube_cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1",
                         "kind": "List", "items": pods}))  # fmt: skip
    try:
        monkeypatch.setattr(api, "LIST_PAGE", 2)
        requests = []
        real_get = api._call

        def counted(*args: object) -> object:
            requests.append(args)
            return real_get(*args)  # type: ignore[arg-type]

        monkeypatch.setattr(api, "_call", counted)
        found = api.list_objects("v1", "Pod", "default", {"test": "paged"})
        assert sorted(p["metadata"]["name"] for p in found) == [f"paged-{i}" for i in range(5)]
        assert [r[0] for r in requests if r[0] == "list"] == ["list"] * 3  # pages: 2, 2, 1
    finally:
        kube_cluster.kubectl("delete", "pod", "-l", "test=paged", "-n", "default",
                             "--wait=false")  # fmt: skip
