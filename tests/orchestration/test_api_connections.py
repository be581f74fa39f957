"""The operator's API client keeps a connection for every pass thread: a call made
while all of them are busy must not pay a TLS handshake each time (real
kube-apiserver)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from dbbench_operator import driving, kube
from tests.fixtures.controlplane import ControlPlane


@pytest.fixture
def admin_client(kube_cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("KUBECONFIG", str(kube_cluster.kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    kube.api_client.cache_clear()
    kube.dynamic.cache_clear()
    yield
    kube.api_client.cache_clear()
    kube.dynamic.cache_clear()


def test_every_pass_thread_keeps_its_connection_between_passes(admin_client: None) -> None:
    workers = driving.PASS_WORKERS
    together = threading.Barrier(workers)

    def call(_: int) -> int:
        together.wait(timeout=30)  # every thread calls at once
        return len(kube.list_objects("v1", "Node", None))

    kube.list_objects("v1", "Node", None)  # the client and its discovery, made once
    for _ in range(3):  # a pass per thread, three times
        list(driving.PASSES.map(call, range(workers)))
    client = kube.api_client()
    pool = client.rest_client.pool_manager.connection_from_url(client.configuration.host)
    # The first round opens one connection per thread; later rounds reuse them.
    assert pool.num_connections <= workers, pool.num_connections


def test_writes_whose_answer_is_not_parsed_still_give_their_connection_back(
    admin_client: None,
) -> None:
    workers = driving.PASS_WORKERS
    together = threading.Barrier(workers)
    kube.apply(config_map(0))  # the client and its discovery, made once

    def write(i: int) -> None:
        together.wait(timeout=30)
        kube.apply(config_map(i))  # server-side apply: its answer is read, not parsed

    for _ in range(3):
        list(driving.PASSES.map(write, range(workers)))
    client = kube.api_client()
    pool = client.rest_client.pool_manager.connection_from_url(client.configuration.host)
    assert pool.num_connections <= workers + 1, pool.num_connections


def config_map(i: int) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"connections-{i}", "namespace": "default"},
            "data": {"i": str(i)}}  # fmt: skip
