"""The host-side state the local node changes, and how to undo each change:
the node address on ``lo``, forwarding sysctls, the CNI bridge, network
namespaces and mounts under the node's directories.
"""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

NETNS_DIR = Path("/run/netns")


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check, timeout=60)


def has_address(address: str) -> bool:
    out = _run("ip", "-o", "-4", "addr", "show", "dev", "lo").stdout
    return f" {address}/" in out


def add_address(address: str) -> bool:
    """Put ``address/32`` on ``lo``; True if this call added it (so down removes it)."""
    if has_address(address):
        return False
    _run("ip", "addr", "add", f"{address}/32", "dev", "lo")
    return True


def remove_address(address: str) -> None:
    if has_address(address):
        _run("ip", "addr", "del", f"{address}/32", "dev", "lo")


def enable_forwarding() -> None:
    """Pods reach Services through the bridge: forwarding and bridge netfilter on."""
    Path("/proc/sys/net/ipv4/ip_forward").write_text("1\n")
    bridge_nf = Path("/proc/sys/net/bridge/bridge-nf-call-iptables")
    if not bridge_nf.exists():
        raise RuntimeError(
            "bridge netfilter is missing (/proc/sys/net/bridge): load the br_netfilter "
            "kernel module (modprobe br_netfilter) and retry"
        )
    bridge_nf.write_text("1\n")


def delete_link(name: str) -> None:
    if _run("ip", "link", "show", name, check=False).returncode == 0:
        _run("ip", "link", "del", name, check=False)


def mounts_under(*roots: Path) -> list[str]:
    """Mount points below any of ``roots``, deepest first (the unmount order)."""
    found: list[str] = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if any(point == str(r) or point.startswith(f"{r}/") for r in roots):
            found.append(point)
    return sorted(set(found), key=lambda p: p.count("/"), reverse=True)


def unmount_all(*roots: Path) -> None:
    for point in mounts_under(*roots):
        if _run("umount", point, check=False).returncode != 0:
            _run("umount", "-l", point, check=False)


def remove_pod_netns() -> None:
    """Network namespaces the CNI made for pod sandboxes (``cni-<uuid>``)."""
    if not NETNS_DIR.is_dir():
        return
    for ns in NETNS_DIR.glob("cni-*"):
        _run("umount", str(ns), check=False)
        with contextlib.suppress(OSError):
            ns.unlink()


KUBELET_CHAINS = ("KUBE-FIREWALL", "KUBE-KUBELET-CANARY", "KUBE-IPTABLES-HINT")


def remove_kubelet_chains() -> None:
    """The iptables chains the kubelet adds (kube-proxy --cleanup leaves them)."""
    for binary in ("iptables", "ip6tables"):
        for table in ("filter", "nat", "mangle"):
            for hook in ("INPUT", "OUTPUT"):
                _run(binary, "-t", table, "-D", hook, "-j", "KUBE-FIREWALL", check=False)
            for chain in KUBELET_CHAINS:
                _run(binary, "-t", table, "-F", chain, check=False)
                _run(binary, "-t", table, "-X", chain, check=False)
