"""`watch_for` (hack/dbbench_local/install.py), the e2e suite's event-driven wait,
against a real kube-apiserver: it returns as the object changes (no poll
interval), waits for an object that does not exist yet, and gives up at its
timeout, its kubectl stopped."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from dbbench_local.install import Kube, watch_for
from tests.fixtures.controlplane import ControlPlane

pytestmark = pytest.mark.integration


def _value(wanted: str) -> Any:
    def seen(obj: dict[str, Any]) -> str | None:
        value = (obj.get("data") or {}).get("step")
        return value if value == wanted else None

    return seen


def _later(seconds: float, *actions: tuple[str, ...], kube: Kube) -> threading.Thread:
    def act() -> None:
        time.sleep(seconds)
        for args in actions:
            kube.kubectl(*args)

    thread = threading.Thread(target=act, daemon=True)
    thread.start()
    return thread


def test_the_wait_ends_as_the_object_changes(kube_cluster: ControlPlane) -> None:
    kube = Kube(kube_cluster.kubeconfig)
    name = "watched-change"
    kube.kubectl("create", "configmap", name, "-n", "default", "--from-literal=step=1")
    assert watch_for(kube, ("configmap", name, "-n", "default"), _value("1"), 30, "1") == "1"
    patch = '{"data": {"step": "2"}}'
    changer = _later(1.0, ("patch", "configmap", name, "-n", "default", "-p", patch), kube=kube)
    started = time.monotonic()
    assert watch_for(kube, ("configmap", name, "-n", "default"), _value("2"), 30, "2") == "2"
    took = time.monotonic() - started
    changer.join()
    # The patch came after a second: seen within a fraction of a second of it.
    assert 1.0 <= took < 2.5, took


def test_an_object_created_later_is_waited_for(kube_cluster: ControlPlane) -> None:
    kube = Kube(kube_cluster.kubeconfig)
    name = "watched-later"
    create = ("create", "configmap", name, "-n", "default", "--from-literal=step=here")
    creator = _later(2.0, create, kube=kube)
    found = watch_for(kube, ("configmap", name, "-n", "default"), _value("here"), 30, "it")
    creator.join()
    assert found == "here"


def test_it_gives_up_at_its_timeout_and_stops_its_kubectl(kube_cluster: ControlPlane) -> None:
    kube = Kube(kube_cluster.kubeconfig)
    kube.kubectl("create", "configmap", "watched-never", "-n", "default", "--from-literal=step=0")
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="timed out after 3s waiting for never"):
        watch_for(kube, ("configmap", "watched-never", "-n", "default"), _value("9"), 3, "never")
    assert time.monotonic() - started < 5
    watching = [p for p in Path("/proc").glob("[0-9]*/cmdline")
                if b"watched-never" in _read(p) and b"--watch" in _read(p)]  # fmt: skip
    assert not watching, "the kubectl watch outlived the wait"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # the process ended meanwhile
        return b""
