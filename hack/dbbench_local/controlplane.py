"""A real Kubernetes control plane on loopback: etcd + kube-apiserver (RBAC on)
+ kube-controller-manager + kube-scheduler.

Used by the test fixture ``kube_cluster``, ``hack/controlplane.py`` and the local cluster.
Every process is started here and stopped by its PID; certificates are made
with openssl; the admin identity is a static token in ``system:masters``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from dbbench_local.ports import (
    PortInUseError,
    listening_ports,
    port_in_use_in,
    retry_on_port_in_use,
)
from dbbench_local.processes import free_port, stop_pid

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

REPO = Path(__file__).resolve().parents[2]
TOOLS_BIN = Path(os.environ.get("TOOLS_DIR", REPO / ".tools")) / "bin"
START_TIMEOUT = 90.0
STOP_TIMEOUT = 15.0


def tool(name: str) -> str:
    """Path of a test tool: .tools/bin first (pinned builds), then PATH."""
    candidate = TOOLS_BIN / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} not found in {TOOLS_BIN} or PATH: run `make tools`")
    return found


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(pki: Path, extra_ips: tuple[str, ...] = ()) -> None:
    """CA, apiserver serving cert (SAN 127.0.0.1/localhost + extra IPs) and SA key."""
    pki.mkdir(parents=True, exist_ok=True)
    _openssl("genrsa", "-out", "ca.key", "2048", cwd=pki)
    # Python 3.13 verifies strictly (VERIFY_X509_STRICT): the CA needs key usage
    # and the serving certificate an authority key identifier, or in-cluster
    # clients such as the operator refuse the API server.
    _openssl(
        "req", "-x509", "-new", "-nodes", "-key", "ca.key", "-subj", "/CN=dbbench-test-ca",
        "-days", "3650", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
        "-addext", "subjectKeyIdentifier=hash", "-out", "ca.crt", cwd=pki,
    )  # fmt: skip
    sans = ["DNS:localhost", "DNS:kubernetes", "DNS:kubernetes.default",
            "DNS:kubernetes.default.svc", "DNS:kubernetes.default.svc.cluster.local",
            "IP:127.0.0.1", "IP:10.96.0.1", *(f"IP:{ip}" for ip in extra_ips)]  # fmt: skip
    (pki / "san.cnf").write_text(
        f"subjectAltName={','.join(sans)}\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
        "authorityKeyIdentifier=keyid,issuer\n"
        "subjectKeyIdentifier=hash\n"
    )
    _openssl("genrsa", "-out", "apiserver.key", "2048", cwd=pki)
    _openssl("req", "-new", "-key", "apiserver.key", "-subj", "/CN=kube-apiserver",
             "-out", "apiserver.csr", cwd=pki)  # fmt: skip
    _openssl(
        "x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "3650", "-extfile", "san.cnf", "-out", "apiserver.crt",
        cwd=pki,
    )  # fmt: skip
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=pki)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def kubeconfig_for(server: str, ca: Path, token: str, user: str) -> dict[str, object]:
    """A kubeconfig that authenticates with a bearer token."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "dbbench-test", "cluster": {
            "server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "dbbench-test", "user": user}}],
        "current-context": user,
    }  # fmt: skip


@dataclass
class ControlPlane:
    """A running control plane; ``start()`` brings it up, ``stop()`` tears it down."""

    workdir: Path
    extra_ips: tuple[str, ...] = ()
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    apiserver_port: int = 0  # 0: a free port on loopback
    admin_token: str = ""
    # The local node serves the API on its own (non-loopback, machine-local) address.
    address: str = "127.0.0.1"
    # More kube-apiserver flags (e.g. feature gates for `make scale`).
    apiserver_args: tuple[str, ...] = ()

    @property
    def server(self) -> str:
        return f"https://{self.address}:{self.apiserver_port}"

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"

    @property
    def ca(self) -> Path:
        return self.workdir / "pki" / "ca.crt"

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> ControlPlane:
        self.workdir.mkdir(parents=True, exist_ok=True)
        pki = self.workdir / "pki"
        make_pki(pki, self.extra_ips)
        self.admin_token = secrets.token_hex(16)
        (pki / "tokens.csv").write_text(f'{self.admin_token},admin,admin,"system:masters"\n')
        fixed_port = self.apiserver_port
        try:
            # Each attempt takes new ports (see dbbench_local.ports); a fixed one is not retried.
            etcd_url = retry_on_port_in_use(self._start_etcd)
            retry_on_port_in_use(lambda: self._start_apiserver(etcd_url, pki, fixed_port))
            self._start("kube-controller-manager", [
                f"--kubeconfig={self.kubeconfig}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--secure-port=0", "--leader-elect=false",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={pki / 'ca.crt'}",
                "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller",
                "--concurrent-gc-syncs=5",
            ])  # fmt: skip
            self._start("kube-scheduler", [
                f"--kubeconfig={self.kubeconfig}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--secure-port=0", "--leader-elect=false",
            ])  # fmt: skip
            self._wait_for_default_service_account()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop in dependency order: controllers, then apiserver, then etcd."""
        order = ["kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"]
        for name in order:
            proc = self.procs.pop(name, None)
            if proc is None:
                continue
            stop_pid(proc.pid, proc, STOP_TIMEOUT)

    # -- clients ---------------------------------------------------------------

    def kubectl(
        self,
        *args: str,
        check: bool = True,
        input: str | None = None,  # noqa: A002 - the name subprocess.run uses
        kubeconfig: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        cmd = [tool("kubectl"), f"--kubeconfig={kubeconfig or self.kubeconfig}", *args]
        result = subprocess.run(
            cmd, input=input, capture_output=True, text=True, timeout=120, check=False
        )
        if check and result.returncode != 0:
            raise RuntimeError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}"
            )
        return result

    def api_client(self, kubeconfig: Path | None = None) -> ApiClient:
        from kubernetes import config  # noqa: PLC0415 - heavy import, only when used

        return config.new_client_from_config(config_file=str(kubeconfig or self.kubeconfig))

    def service_account_kubeconfig(self, namespace: str, name: str, path: Path) -> Path:
        """A kubeconfig that acts as a ServiceAccount (token from the TokenRequest API)."""
        token = self.kubectl("create", "token", name, "-n", namespace, "--duration=2h").stdout
        self._write_kubeconfig(path, token.strip(), f"system:serviceaccount:{namespace}:{name}")
        return path

    # -- internals -------------------------------------------------------------

    def _write_kubeconfig(self, path: Path, token: str, user: str) -> None:
        path.write_text(yaml.safe_dump(kubeconfig_for(self.server, self.ca, token, user)))
        path.chmod(0o600)

    def _start(self, name: str, args: list[str]) -> None:
        log = (self.workdir / f"{name}.log").open("wb")
        self.procs[name] = subprocess.Popen(
            [tool(name), *args], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def _start_etcd(self) -> str:
        client, peer = free_port(), free_port()
        url = f"http://127.0.0.1:{client}"
        self._start("etcd", [
            f"--data-dir={self.workdir / 'etcd'}",
            f"--listen-client-urls={url}", f"--advertise-client-urls={url}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=default=http://127.0.0.1:{peer}",
        ])  # fmt: skip
        # Wait until it is our etcd that listens there: the apiserver must never
        # reach another one that happens to hold the port.
        self._wait_listening("etcd", client)
        return url

    def _start_apiserver(self, etcd_url: str, pki: Path, fixed_port: int) -> None:
        self.apiserver_port = fixed_port or free_port()
        self._write_kubeconfig(self.kubeconfig, self.admin_token, "admin")
        self._start("kube-apiserver", [
            f"--etcd-servers={etcd_url}",
            f"--bind-address={self.address}", f"--advertise-address={self.address}",
            f"--secure-port={self.apiserver_port}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            f"--token-auth-file={pki / 'tokens.csv'}",
            "--authorization-mode=Node,RBAC",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--service-cluster-ip-range=10.96.0.0/16",
            "--allow-privileged=true",
            "--kubelet-preferred-address-types=InternalIP",
            f"--cert-dir={pki}",
            *self.apiserver_args,
        ])  # fmt: skip
        if not fixed_port:
            self._wait_listening("kube-apiserver", self.apiserver_port)
        self._wait_ready()

    def _wait_listening(self, name: str, port: int) -> None:
        """Until ``name`` listens on ``port``; PortInUseError if it exited because it was taken."""
        proc = self.procs[name]
        log = self.workdir / f"{name}.log"
        deadline = time.monotonic() + START_TIMEOUT
        while port not in listening_ports(proc.pid):
            if proc.poll() is not None:
                del self.procs[name]
                if port_in_use_in(log):
                    raise PortInUseError(f"{name}: port {port} was taken before it bound it")
                tail = log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{tail}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not listen on {port} within {START_TIMEOUT}s")
            time.sleep(0.1)

    def _check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                tail = (self.workdir / f"{name}.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{tail}")

    def _wait_ready(self) -> None:
        ctx = ssl.create_default_context(cafile=str(self.ca))
        request = urllib.request.Request(
            f"{self.server}/readyz", headers={"Authorization": f"Bearer {self.admin_token}"}
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            self._check_alive()
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(request, context=ctx, timeout=5) as resp,
            ):
                if resp.status == 200:
                    return
            time.sleep(0.5)
        raise RuntimeError(f"kube-apiserver not ready after {START_TIMEOUT}s; see {self.workdir}")

    def _wait_for_default_service_account(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            self._check_alive()
            if self.kubectl("get", "serviceaccount", "default", check=False).returncode == 0:
                return
            time.sleep(0.5)
        raise RuntimeError("kube-controller-manager did not create the default ServiceAccount")

    def wait_established(self, crd: str, timeout: float = 60) -> None:
        """Until the CRD is Established. Polled: `kubectl wait --for=condition=...`
        fails at once while the new CRD's status.conditions is still unset (it
        stopped a `make scale` on 2026-11-29)."""
        query = '{.status.conditions[?(@.type=="Established")].status}'
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.kubectl("get", "crd", crd, "-o", f"jsonpath={query}", check=False)
            if found.stdout.strip() == "True":
                return
            time.sleep(0.5)
        raise RuntimeError(f"the CRD {crd} did not become Established within {timeout:.0f}s")


@contextlib.contextmanager
def running_control_plane(workdir: Path) -> Iterator[ControlPlane]:
    plane = ControlPlane(workdir).start()
    try:
        yield plane
    finally:
        plane.stop()
