"""hack/stamps.sh's `once`: each stamped Go tool of hack/tools.sh and
hack/cluster-tools.sh is built when missing or when its pinned inputs change,
and skipped otherwise.

The real builds take most of an hour, so `go` is a script on PATH that records
each call and leaves the binary `go install`/`go build -o` would leave; the
shell around it (stamps, names, the kind-only tools) is the real scripts.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

FAKE_GO = r"""#!/bin/bash
echo "go $*" >>"$FAKE_GO_CALLS"
case "$1" in
  install)
    module="${@: -1}"; name="${module%@*}"; name="${name##*/}"
    mkdir -p "$GOBIN"; printf '#!/bin/true\n' >"$GOBIN/$name"; chmod +x "$GOBIN/$name" ;;
  build)
    out=""; previous=""
    for arg in "$@"; do [[ "$previous" == -o ]] && out="$arg"; previous="$arg"; done
    printf '#!/bin/true\n' >"$out"; chmod +x "$out" ;;
esac
"""
# What answers `docker info`: nothing, so DBBENCH_CLUSTER=kind means kind through podman.
NO_DOCKER = "#!/bin/bash\nexit 1\n"
KIND_TOOLS = {"coredns", "local-path-provisioner", "kind", "kubeadm", "crictl", "coredns-kind",
              "etcd-kind"}  # fmt: skip
TOOLS = {"helm", "dashboard-check", "kwok"}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    fake = tmp_path / "fake"
    fake.mkdir()
    for name, text in (("go", FAKE_GO), ("docker", NO_DOCKER)):
        (fake / name).write_text(text)
        (fake / name).chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{fake}:{os.environ['PATH']}",
        "TOOLS_DIR": str(tmp_path / "tools"),
        "DBBENCH_CLUSTER": "kind",
        "FAKE_GO_CALLS": str(tmp_path / "calls"),
    }


def install(env: dict[str, str]) -> list[str]:
    """Both scripts' stamped steps; the `go` calls they made."""
    calls = Path(env["FAKE_GO_CALLS"])
    calls.unlink(missing_ok=True)
    for argv in (["hack/cluster-tools.sh", "go"], ["hack/tools.sh", "helm", "dashboard-check",
                                                    "kwok"]):  # fmt: skip
        subprocess.run(["bash", *argv], cwd=REPO, env=env, check=True, capture_output=True)
    return calls.read_text().splitlines() if calls.exists() else []


def stamps(env: dict[str, str]) -> set[str]:
    return {p.name for p in (Path(env["TOOLS_DIR"]) / "bin").glob(".*")}


def test_each_tool_is_built_once_then_skipped(env: dict[str, str]) -> None:
    first = install(env)
    bin_dir = Path(env["TOOLS_DIR"]) / "bin"
    built = {p.name for p in bin_dir.iterdir() if not p.name.startswith(".")}
    assert built == KIND_TOOLS | TOOLS
    assert len(stamps(env)) == len(KIND_TOOLS | TOOLS)  # one stamp per tool
    assert any("go install sigs.k8s.io/kwok/cmd/kwok@" in c for c in first)
    assert install(env) == []  # all present: no go call at all


def test_a_changed_input_rebuilds_that_tool_and_drops_its_old_stamp(env: dict[str, str]) -> None:
    install(env)
    bin_dir = Path(env["TOOLS_DIR"]) / "bin"
    (old,) = bin_dir.glob(".kwok-*")
    old.rename(bin_dir / ".kwok-v0.6.1")  # as if kwok had been built at another version
    again = install(env)
    assert again, "kwok was not rebuilt"
    assert all("kwok" in c for c in again), again
    assert not (bin_dir / ".kwok-v0.6.1").exists()
    assert old.exists()


def test_a_missing_binary_is_built_even_with_its_stamp(env: dict[str, str]) -> None:
    install(env)
    (Path(env["TOOLS_DIR"]) / "bin" / "kubeadm").unlink()
    again = install(env)
    assert again, "kubeadm was not rebuilt"
    assert all("kubeadm" in c for c in again), again
    assert (Path(env["TOOLS_DIR"]) / "bin" / "kubeadm").exists()
