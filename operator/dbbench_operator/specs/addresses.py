"""How a target is reached (pure): the topology package's request for a
deployed target, and the address runner pods use for any target.

Runner pods get addresses and file paths, never credentials: passwords and
external URIs reach them as files mounted from Secrets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dbbench_contract.api import (
    BENCHMARK_DATABASE,
    BenchmarkRunSpec,
    Resources,
    SecretKeyRef,
    Target,
    mysql_connections_needed,
)
from dbbench_contract.api.tables import used_tables
from dbbench_operator.naming import RunRef, credentials_secret_name
from dbbench_operator.settings import EngineImage, OperatorSettings
from dbbench_operator.specs.credentials import ROOT_USERNAME
from dbbench_operator.specs.databases import target_names
from dbbench_operator.specs.databases.client_router import ClientRouter, client_router, router_uri
from dbbench_operator.specs.databases.request import (
    DEFAULT_CONFIG_SERVER_RESOURCES,
    DEFAULT_MONGOS_RESOURCES,
    Hardware,
    Storage,
    TopologyRequest,
)
from dbbench_operator.specs.databases.shard_placement import shard_resources, sharding_request

MYSQL_ROOT = "root"
DEFAULT_SHARD_KEY = "_id"


def _resources(given: Resources | None, default: dict[str, Any]) -> dict[str, Any]:
    return given.model_dump(by_alias=True, exclude_none=True) if given else dict(default)


def server_image(target: Target, images: Mapping[str, EngineImage]) -> tuple[str, str]:
    """(image reference, version) of a deployed target's servers: its `image`, else
    the operator's image of the engine (chart values `engines`) at its `version`."""
    if target.image is not None:
        return target.image, target.version or ""
    chosen = images[target.engine]
    version = target.version or chosen.version
    return chosen.reference(version), version


def topology_request(
    run: RunRef,
    spec: BenchmarkRunSpec,
    target: Target,
    cluster_domain: str | None = None,
    images: Mapping[str, EngineImage] | None = None,
) -> TopologyRequest:
    """The topology package's input for one target (pure but for the operator's
    settings DBBENCH_CLUSTER_DOMAIN and DBBENCH_ENGINE_IMAGES, read when
    `cluster_domain` or `images` is not given)."""
    hw = spec.hardware_of(target)
    if cluster_domain is None or images is None:
        settings = OperatorSettings.from_env()
        cluster_domain = cluster_domain or settings.cluster_domain
        images = settings.engine_images if images is None else images
    image, version = server_image(target, images)
    return TopologyRequest(
        run_name=run.name,
        run_uid=run.uid,
        namespace=run.namespace,
        target_name=target.name,
        engine=target.engine,
        topology=target.topology,
        version=version,
        image=image,
        protocol_stand_in=bool(target.protocol_stand_in),
        members=target.effective_members,
        shards=target.shards or 0,
        settings=dict(target.settings or {}),
        connections=mysql_connections_needed(spec, target)
        if target.engine in ("mysql", "mariadb")
        else 0,
        durability=target.durability,
        hardware=Hardware(
            node_selector=dict(hw.node_selector or {}),
            tolerations=tuple(
                t.model_dump(by_alias=True, exclude_none=True) for t in hw.tolerations or ()
            ),
            affinity=dict(hw.affinity or {}),
            resources=shard_resources(target, _resources(hw.resources, {})),
            config_server_resources=_resources(
                hw.config_server_resources, DEFAULT_CONFIG_SERVER_RESOURCES
            ),
            mongos_resources=_resources(hw.mongos_resources, DEFAULT_MONGOS_RESOURCES),
            storage=Storage(
                storage_class_name=hw.storage.storage_class_name, size=str(hw.storage.size)
            ),
        ),
        sharding=sharding_request(target),
        cleanup=spec.cleanup,
        credentials_secret=credentials_secret_name(run),
        database=BENCHMARK_DATABASE,
        collections=used_tables(spec),
        shard_key=target.shard_key or DEFAULT_SHARD_KEY,
        cluster_domain=cluster_domain,
    )


@dataclass(frozen=True)
class TargetAccess:
    """Where runner pods connect to one target, and which Secret holds what they need."""

    engine: str
    host: str | None = None  # SQL engines: the primary
    port: int | None = None
    replicas: tuple[tuple[str, int], ...] = ()  # SQL engines: reads with readPreference
    uri: str | None = None  # mongodb: without credentials
    user: str | None = None
    password_secret: str | None = None  # the run's credentials Secret (deployed targets)
    uri_secret: SecretKeyRef | None = None  # external targets: the user's Secret
    shard_key: str | None = None  # sharded: what setup sharded the collection on
    # sharded with client-side routers: the mongos every runner pod carries (`uri`
    # then names it, on localhost).
    router: ClientRouter | None = None


def _split(host_port: str) -> tuple[str, int]:
    host, _, port = host_port.rpartition(":")
    return host, int(port)


def target_access(run: RunRef, spec: BenchmarkRunSpec, index: int) -> TargetAccess:
    target = spec.targets[index]
    if target.external is not None:
        return TargetAccess(engine=target.engine, uri_secret=target.external.uri_secret_ref)
    request = topology_request(run, spec, target)
    layout = target_names.layout(request)
    secret = credentials_secret_name(run)
    if target.engine != "mongodb":
        group = layout.replica_sets[0]
        host, port = _split(group.host(0))
        replicas = tuple(_split(group.host(i)) for i in range(1, group.members))
        # PostgreSQL's superuser is the Secret's root-username (the image's POSTGRES_USER).
        user = ROOT_USERNAME if target.engine == "postgresql" else MYSQL_ROOT
        return TargetAccess(
            engine=target.engine, host=host, port=port, replicas=replicas, user=user,
            password_secret=secret,
        )  # fmt: skip
    options = "authSource=admin"
    if target.topology == "replicaSet":
        options = f"replicaSet={layout.replica_sets[0].name}&{options}"
    router = client_router(request)
    return TargetAccess(
        engine=target.engine,
        uri=f"mongodb://{layout.endpoint}/?{options}" if router is None else router_uri(options),
        router=router,
        user=ROOT_USERNAME,
        password_secret=secret,
        # Setup refuses any other key, so this is the key in effect during the step.
        shard_key=f"{request.shard_key}: hashed" if target.topology == "sharded" else None,
    )
