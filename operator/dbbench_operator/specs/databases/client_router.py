"""A mongos in every runner pod: client-side routers (pure builders).

Field benchmark 2 ran mongos on the load machine, so the router's work was
the client's, not the database server's. With `sharding.routers.placement:
client` each runner pod carries its own mongos as a native sidecar (an init
container with `restartPolicy: Always`): the kubelet starts the runner only
once the router's port answers (its startup probe), and stops the router
once the runner has exited, so the Job's pods still complete. The runner
connects to `localhost`; the router reaches the config servers and shards
directly (the target's NetworkPolicy admits the run's runner pods).

mongos authenticates to the cluster with the keyFile, which it refuses when
group- or world-readable: as in the chart's pods, an init container copies
it from the run's Secret into a memory volume with mode 0400, owned by the
pod's user.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dbbench_operator.specs.databases import target_names
from dbbench_operator.specs.databases.request import SECRET_KEYFILE_KEY, TopologyRequest

ROUTER_PORT = 27017
# What the runner connects to: the router in its own pod, never another pod's.
ROUTER_HOST = "localhost"
KEYFILE_DIR = "/mongos-keyfile"
_SECRET_VOLUME = "mongos-keyfile-secret"  # noqa: S105 - a volume name
_KEYFILE_VOLUME = "mongos-keyfile"
_SECRET_DIR = "/mongos-keyfile-secret"  # noqa: S105 - a mount path


@dataclass(frozen=True)
class ClientRouter:
    """What a runner pod's mongos needs: the servers' image, the config servers'
    replica set (mongos --configdb) and the run's Secret holding the keyFile."""

    image: str
    config_db: str  # "cfg/<host>:27017,<host>:27017,..."
    keyfile_secret: str
    resources: dict[str, Any] = field(default_factory=dict)
    pull_policy: str = "IfNotPresent"


def client_router(request: TopologyRequest) -> ClientRouter | None:
    """The runner pods' router of a sharded target with client-side routers, else None."""
    if request.topology != "sharded" or request.sharding.router_placement != "client":
        return None
    config_servers = target_names.layout(request).config_servers
    if config_servers is None:
        raise ValueError("a sharded layout has config servers")
    return ClientRouter(
        image=request.image or f"mongo:{request.version}",
        config_db=f"{config_servers.name}/{','.join(config_servers.hosts)}",
        keyfile_secret=request.credentials_secret,
        resources=dict(request.hardware.mongos_resources),
    )


def router_uri(options: str) -> str:
    """The runner's URI with a router of its own (no credentials: they go apart)."""
    return f"mongodb://{ROUTER_HOST}:{ROUTER_PORT}/?{options}"


def _security() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def _keyfile_init(router: ClientRouter) -> dict[str, Any]:
    script = (
        f"rm -f {KEYFILE_DIR}/keyfile.tmp && install -m 0400 {_SECRET_DIR}/keyfile "
        f"{KEYFILE_DIR}/keyfile.tmp && mv -f {KEYFILE_DIR}/keyfile.tmp {KEYFILE_DIR}/keyfile"
    )
    container: dict[str, Any] = {
        "name": "mongos-keyfile",
        "image": router.image,
        "imagePullPolicy": router.pull_policy,
        "command": ["sh", "-c", script],
        "securityContext": _security(),
        "volumeMounts": [
            {"name": _SECRET_VOLUME, "mountPath": _SECRET_DIR, "readOnly": True},
            {"name": _KEYFILE_VOLUME, "mountPath": KEYFILE_DIR},
        ],
    }
    if router.resources:
        container["resources"] = router.resources
    return container


def mongos_args(router: ClientRouter) -> list[str]:
    """The router's command line: the pod's own loopback only, no unix socket (the
    root filesystem is read-only), the cluster's keyFile."""
    return [
        "--bind_ip=127.0.0.1",
        f"--port={ROUTER_PORT}",
        f"--configdb={router.config_db}",
        f"--keyFile={KEYFILE_DIR}/keyfile",
        "--nounixsocket",
    ]


def _sidecar(router: ClientRouter) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "mongos",
        "image": router.image,
        "imagePullPolicy": router.pull_policy,
        # A native sidecar: runs beside the runner, stopped once the runner exits.
        "restartPolicy": "Always",
        "command": ["mongos"],
        "args": mongos_args(router),
        "ports": [{"name": "mongos", "containerPort": ROUTER_PORT, "protocol": "TCP"}],
        # The runner starts once this answers; mongos listens after reaching the
        # config servers, which are ready before any step's Job is made.
        "startupProbe": {
            "tcpSocket": {"port": ROUTER_PORT},
            "periodSeconds": 2,
            "failureThreshold": 150,
        },
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "securityContext": _security(),
        "volumeMounts": [{"name": _KEYFILE_VOLUME, "mountPath": KEYFILE_DIR, "readOnly": True}],
    }
    if router.resources:
        container["resources"] = router.resources
    return container


def _volumes(router: ClientRouter) -> list[dict[str, Any]]:
    return [
        {"name": _SECRET_VOLUME, "secret": {
            "secretName": router.keyfile_secret,
            "items": [{"key": SECRET_KEYFILE_KEY, "path": "keyfile"}],
            "defaultMode": 0o400,
        }},
        {"name": _KEYFILE_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
    ]  # fmt: skip


def with_router(pod: dict[str, Any], router: ClientRouter | None) -> dict[str, Any]:
    """A runner pod spec with its own mongos (unchanged without one)."""
    if router is None:
        return pod
    return {
        **pod,
        "initContainers": [*pod.get("initContainers", []), _keyfile_init(router), _sidecar(router)],
        "volumes": [*pod.get("volumes", []), *_volumes(router)],
    }
