"""The one place that owns child names, hosts and labels of a deployed target.

Names are run-unique (they carry a hash of the run's uid, so a re-created run
with the same name never adopts a Retained volume of its predecessor),
DNS-1035 safe, and short enough that every suffix the charts add
(`-mongos`, `-shard31`, StatefulSet pod ordinals and controller-revision
hashes) stays within the 63-character label limit.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from dbbench_operator.specs.databases.request import TopologyRequest

MAX_BASE = 40  # 63 - len("-shard31") - len("-") - 10 (controller-revision hash) - margin
_HASH_LEN = 6
MONGO_PORT = 27017
MYSQL_PORT = 3306
POSTGRES_PORT = 5432
DEFAULT_CLUSTER_DOMAIN = "cluster.local"
MANAGED_BY = "dbbench"
_INVALID = re.compile(r"[^a-z0-9-]+")


def _dns_label(text: str) -> str:
    label = _INVALID.sub("-", text.lower()).strip("-")
    label = re.sub(r"-{2,}", "-", label)
    if not label or not label[0].isalpha():
        label = f"db-{label}".rstrip("-")
    return label


def base_name(request: TopologyRequest) -> str:
    """`<run>-<target>-<hash>`: the Helm release name and prefix of every child."""
    digest = hashlib.sha256(
        f"{request.namespace}/{request.run_name}/{request.run_uid}/{request.target_name}".encode()
    ).hexdigest()[:_HASH_LEN]
    stem = _dns_label(f"{request.run_name}-{request.target_name}")
    stem = stem[: MAX_BASE - _HASH_LEN - 1].rstrip("-")
    return f"{stem}-{digest}"


def chart_name(request: TopologyRequest) -> str:
    """Directory under charts/ that deploys this engine."""
    if request.engine in ("mongodb", "postgresql"):
        return request.engine
    return "mysql"


def labels(request: TopologyRequest, component: str) -> dict[str, str]:
    """Labels the charts put on every object of this target (and its pods)."""
    return {
        "app.kubernetes.io/name": chart_name(request),
        "app.kubernetes.io/instance": base_name(request),
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        "dbbench.io/run": _label_value(request.run_name),
        # What tells this run's pods from an earlier run's of the same name.
        "dbbench.io/run-uid": _label_value(request.run_uid),
        "dbbench.io/target": _label_value(request.target_name),
    }


def common_labels(request: TopologyRequest) -> dict[str, str]:
    """The labels every object of the target shares (selecting them all for cleanup)."""
    every = labels(request, "")
    del every["app.kubernetes.io/component"]
    return every


def _label_value(text: str) -> str:
    """Label values are at most 63 characters of [A-Za-z0-9._-]."""
    value = re.sub(r"[^A-Za-z0-9._-]+", "-", text)[:63]
    return value.strip("-_.")


@dataclass(frozen=True)
class ReplicaSetLayout:
    """One replica set (or a SQL primary with its replicas) as the setup code sees it."""

    name: str  # replica-set name (mongo --replSet) or the StatefulSet name (SQL engines)
    statefulset: str
    component: str
    members: int
    port: int
    namespace: str
    configsvr: bool = False
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN
    # Addresses to use instead of the in-cluster DNS names (processes outside
    # Kubernetes, e.g. the contract tests' local mongod).
    explicit_hosts: tuple[str, ...] = ()

    def pod(self, ordinal: int) -> str:
        return f"{self.statefulset}-{ordinal}"

    def host(self, ordinal: int) -> str:
        """Stable DNS name of one member through the headless Service."""
        if self.explicit_hosts:
            return self.explicit_hosts[ordinal]
        return (
            f"{self.pod(ordinal)}.{self.statefulset}.{self.namespace}.svc.{self.cluster_domain}"
            f":{self.port}"
        )

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(self.host(i) for i in range(self.members))


@dataclass(frozen=True)
class Layout:
    """Every replica set of a target plus where clients connect."""

    replica_sets: tuple[ReplicaSetLayout, ...]
    config_servers: ReplicaSetLayout | None
    shards: tuple[ReplicaSetLayout, ...]
    mongos_service: str | None
    endpoint: str  # host:port list clients use (the runner's target)


def layout(request: TopologyRequest) -> Layout:
    """Names and hosts of everything the chart deploys for this request.

    A sharded target's config-server replica set has `members` members, like
    its shards, so one knob sizes every replica set.
    """
    base = base_name(request)
    ns, domain = request.namespace, request.cluster_domain

    def group(
        name: str, sts: str, component: str, port: int, cfg: bool = False
    ) -> ReplicaSetLayout:
        return ReplicaSetLayout(
            name, sts, component, request.members, port, ns, configsvr=cfg, cluster_domain=domain
        )

    if request.engine != "mongodb":
        port = POSTGRES_PORT if request.engine == "postgresql" else MYSQL_PORT
        sql = group(base, base, request.engine, port)
        return Layout((sql,), None, (), None, sql.host(0))
    if request.topology != "sharded":
        rs_name = "rs0" if request.topology == "replicaSet" else ""
        rs = group(rs_name, base, "mongod", MONGO_PORT)
        return Layout((rs,), None, (), None, ",".join(rs.hosts))
    cfg = group("cfg", f"{base}-cfg", "configsvr", MONGO_PORT, cfg=True)
    shards = tuple(
        group(f"shard{i}", f"{base}-shard{i}", f"shard{i}", MONGO_PORT)
        for i in range(request.shards)
    )
    mongos = f"{base}-mongos"
    endpoint = f"{mongos}.{ns}.svc.{domain}:{MONGO_PORT}"
    return Layout((cfg, *shards), cfg, shards, mongos, endpoint)
