"""`DBBENCH_NODES` that cannot be honoured stops `make cluster-up` before anything is
built: the Makefile's images step asks `hack/cluster.py images-recipe` first and
stops when it fails (docs/local-cluster.md, "Several nodes")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dbbench_local.controlplane import REPO


def _recipe(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "hack" / "cluster.py"), "images-recipe"],
        # Its own state directory: no cluster that is up decides the flavour.
        env={**os.environ, "DBBENCH_CLUSTER_STATE": str(tmp_path), **env},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_several_nodes_on_the_local_cluster_stop_before_the_images(tmp_path: Path) -> None:
    done = _recipe(tmp_path, DBBENCH_CLUSTER="local", DBBENCH_NODES="4")
    assert done.returncode == 1
    assert done.stdout == ""  # make's `recipe=$(...) &&` builds nothing
    assert "DBBENCH_NODES=4" in done.stderr
    assert "DBBENCH_CLUSTER=kind DBBENCH_NODES=4 make cluster-up" in done.stderr


@pytest.mark.parametrize("value", ["0", "many"])
def test_a_count_that_is_no_count_stops_too(tmp_path: Path, value: str) -> None:
    done = _recipe(tmp_path, DBBENCH_CLUSTER="kind", DBBENCH_NODES=value)
    assert done.returncode == 1
    assert f"DBBENCH_NODES={value!r}" in done.stderr


@pytest.mark.parametrize(("cluster", "nodes"), [("local", "1"), ("local", ""), ("kind", "4")])
def test_what_can_be_honoured_goes_on(tmp_path: Path, cluster: str, nodes: str) -> None:
    done = _recipe(tmp_path, DBBENCH_CLUSTER=cluster, DBBENCH_NODES=nodes)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() in ("local", "kind-podman", "kind-docker")
