"""kind, for machines with a container engine (a user's laptop).

The same interface as the local node (``up``, ``down``, ``healthy``,
``import_images``, ``kubeconfig``): kind's upstream node image and the
official database images pulled by the node; the operator and runner images
built with ``docker build`` (hack/cluster/kind-images.sh) and loaded with
``kind load``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from dbbench_local.controlplane import tool

KIND_NAME = "dbbench"


def engine_available() -> bool:
    """A Docker engine that answers (kind's default provider)."""
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "info"], capture_output=True, check=False, timeout=30)
    return probe.returncode == 0


@dataclass(frozen=True)
class KindCluster:
    state: Path
    images: tuple[str, ...]  # references built locally, loaded into the node

    @property
    def kubeconfig(self) -> Path:
        return self.state / "kind-kubeconfig"

    def _kind(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [tool("kind"), *args], capture_output=True, text=True, check=False, timeout=timeout
        )

    def healthy(self) -> bool:
        if KIND_NAME not in self._kind("get", "clusters").stdout.split():
            return False
        nodes = subprocess.run(
            [tool("kubectl"), f"--kubeconfig={self.kubeconfig}", "get", "nodes", "-o", "json"],
            capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
        if nodes.returncode != 0:
            return False
        return all(
            any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])
            for n in json.loads(nodes.stdout)["items"]
        )

    def up(self) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        if not self.healthy():
            print("cluster: kind create cluster (about 1 minute)", file=sys.stderr, flush=True)
            created = self._kind(
                "create", "cluster", "--name", KIND_NAME,
                "--kubeconfig", str(self.kubeconfig), "--wait", "5m",
            )  # fmt: skip
            if created.returncode != 0:
                raise RuntimeError(f"kind create cluster failed:\n{created.stderr}")
        self.import_images()

    def import_images(self) -> None:
        for image in self.images:
            loaded = self._kind("load", "docker-image", image, "--name", KIND_NAME)
            if loaded.returncode != 0:
                raise RuntimeError(f"kind load docker-image {image} failed:\n{loaded.stderr}")

    def down(self) -> None:
        self._kind("delete", "cluster", "--name", KIND_NAME)
        self.kubeconfig.unlink(missing_ok=True)
