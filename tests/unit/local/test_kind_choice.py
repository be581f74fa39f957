"""Which cluster `make cluster-up` builds, and kind's CoreDNS without forwarding.

The choice (docs/local-cluster.md): the local node unless DBBENCH_CLUSTER=kind
or a Docker engine answers; kind goes through Docker where it answers, else
through podman with the node image built here. podman answering alone never
makes kind the default (it answers on the development machines).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dbbench_local import cluster, kind


@pytest.fixture(autouse=True)
def no_cluster_up(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The checkout's own .cluster may hold a cluster that is up: not these tests'."""
    monkeypatch.setattr(cluster, "FLAVOUR_FILE", tmp_path / "flavour")


# kubeadm v1.34's CoreDNS configuration, as `kind create cluster` leaves it.
KUBEADM_COREFILE = """.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
"""


def test_the_forward_block_goes_and_nothing_else() -> None:
    block = "    forward . /etc/resolv.conf {\n       max_concurrent 1000\n    }\n"
    assert block in KUBEADM_COREFILE
    assert kind.corefile_without_forward(KUBEADM_COREFILE) == KUBEADM_COREFILE.replace(block, "")


def test_a_one_line_forward_goes_too() -> None:
    corefile = ".:53 {\n    kubernetes cluster.local\n    forward . 8.8.8.8\n    cache 30\n}\n"
    assert kind.corefile_without_forward(corefile) == (
        ".:53 {\n    kubernetes cluster.local\n    cache 30\n}\n"
    )


@pytest.mark.parametrize(
    ("wanted", "docker", "recipe"),
    [
        ("", False, "local"),  # podman answering here changes nothing
        ("", True, "kind-docker"),
        ("kind", False, "kind-podman"),
        ("kind", True, "kind-docker"),
        ("local", True, "local"),
        ("local", False, "local"),
    ],
)
def test_the_cluster_choice(
    monkeypatch: pytest.MonkeyPatch, wanted: str, docker: bool, recipe: str
) -> None:
    monkeypatch.setenv("DBBENCH_CLUSTER", wanted)
    monkeypatch.setattr(cluster, "engine_available", lambda: docker)
    monkeypatch.setattr(kind, "docker_answers", lambda: docker)
    assert cluster.images_recipe() == recipe
    assert cluster.flavour() == ("local" if recipe == "local" else "kind")
    # Only kind on Docker pulls the official database images.
    assert cluster.node_images_built_here() == (recipe != "kind-docker")


def test_the_cluster_that_is_up_is_the_one_later_commands_take(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`DBBENCH_CLUSTER=kind make cluster-up`, then `make cluster-down` alone: kind goes
    down, not the local node (which is the default here)."""
    monkeypatch.setattr(cluster, "engine_available", lambda: False)
    monkeypatch.setattr(kind, "docker_answers", lambda: False)
    monkeypatch.setenv("DBBENCH_CLUSTER", "kind")
    cluster.record_flavour()
    monkeypatch.delenv("DBBENCH_CLUSTER")
    assert cluster.flavour() == "kind"
    assert cluster.images_recipe() == "kind-podman"
    monkeypatch.setenv("DBBENCH_CLUSTER", "local")  # said out loud, it still wins
    assert cluster.flavour() == "local"
    monkeypatch.delenv("DBBENCH_CLUSTER")
    cluster.forget_flavour()
    assert cluster.flavour() == "local"
