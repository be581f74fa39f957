"""The kind node image's CNI DaemonSet script (hack/cluster/kind-node/default-cni.yaml),
run by a real shell: each node's conflist holds the node's own pod CIDR, and
the node keeps a route to every other node's CIDR via that node's address.

kubectl and ip are stand-ins on PATH (kubectl answers as the API server would
for three nodes; ip records what it is asked): the script's own logic (the
wait for the node's range, the conflist, which routes it adds and which it
leaves) is what runs. The real network is tried on kind (docs/local-cluster.md,
"Several nodes").
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import yaml

from dbbench_local.controlplane import REPO

MANIFEST = REPO / "hack" / "cluster" / "kind-node" / "default-cni.yaml"

NODES = """dbbench-control-plane 10.244.0.0/24 10.89.0.2
dbbench-worker 10.244.1.0/24 10.89.0.3
dbbench-worker2 10.244.2.0/24 10.89.0.4
dbbench-worker3  10.89.0.5
"""


def _daemonset() -> dict[str, object]:
    # kind fills in its template field; images.sh the image.
    text = MANIFEST.read_text().replace("{{ .PodSubnet }}", "10.244.0.0/16")
    text = text.replace("@CNI_IMAGE@", "docker.io/library/busybox:1.36")
    docs = [d for d in yaml.safe_load_all(text) if d]
    (daemonset,) = [d for d in docs if d["kind"] == "DaemonSet"]
    assert isinstance(daemonset, dict)
    return daemonset


def _fakes(bin_dir: Path, state: Path) -> Path:
    bin_dir.mkdir()
    kubectl = bin_dir / "kubectl"
    # The node's range is empty on the first ask (not yet assigned), then set.
    kubectl.write_text(f"""#!/bin/sh
echo "$*" >>{state}/kubectl.log
case "$*" in
  "get node dbbench-worker "*)
    if [ -f {state}/asked ]; then echo -n 10.244.1.0/24; else touch {state}/asked; fi ;;
  "get nodes "*) cat {state}/nodes ;;
esac
""")
    ip = bin_dir / "ip"
    ip.write_text(f"""#!/bin/sh
case "$*" in
  "route show 10.244.0.0/24") echo "10.244.0.0/24 via 10.89.0.2 dev eth0 " ;;
  "route show "*) ;;
  *) echo "$*" >>{state}/ip.log ;;
esac
""")
    for tool in (kubectl, ip):
        tool.chmod(0o755)
    (state / "nodes").write_text(NODES)
    return kubectl


def test_a_node_takes_its_own_range_and_routes_to_the_others(tmp_path: Path) -> None:
    container = _daemonset()["spec"]["template"]["spec"]["containers"][0]  # type: ignore[index]
    script = container["command"][2]
    env = {e["name"]: e.get("value", "") for e in container["env"]}
    assert container["command"][:2] == ["sh", "-c"]
    state = tmp_path / "state"
    state.mkdir()
    kubectl = _fakes(tmp_path / "bin", state)
    net_d = tmp_path / "net.d"
    net_d.mkdir()
    script = script.replace("/kind-node/kubectl", str(kubectl))
    script = script.replace("/etc/cni/net.d", str(net_d))
    shell = subprocess.Popen(
        ["/bin/sh", "-c", script],
        env={**env, "NODE_NAME": "dbbench-worker", "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not (state / "ip.log").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(0.5)  # the rest of the first round
    finally:
        shell.terminate()
        returncode = shell.wait(timeout=20)
        # Its `sleep 10` holds the output open (in a pod it goes with the container).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGKILL)
        out, _ = shell.communicate(timeout=20)
    conflist = json.loads((net_d / "10-dbbench-ptp.conflist").read_text())
    ptp = conflist["plugins"][0]
    assert ptp["type"] == "ptp"
    # Its own /24, not the cluster's /16 (which every node would share).
    assert ptp["ipam"]["ranges"] == [[{"subnet": "10.244.1.0/24"}]], out
    # The control plane's route is there already; its own range and a node
    # without a range get none.
    assert (state / "ip.log").read_text().splitlines() == [
        "route replace 10.244.2.0/24 via 10.89.0.4"
    ], out
    assert "wrote" in out
    assert returncode == 0  # TERM ends it cleanly (the pod's stop)
