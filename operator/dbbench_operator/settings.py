"""Operator settings, read from the environment the chart sets (on every pass,
so tests and restarts see the current values; it costs a few dict lookups)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from dbbench_contract.api import DEFAULT_REPOSITORIES, DEFAULT_VERSIONS

ENGINE_IMAGES_ENV = "DBBENCH_ENGINE_IMAGES"


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class EngineImage:
    """Where a deployed target's server image comes from when it sets no `image`."""

    repository: str
    version: str

    def reference(self, version: str | None = None) -> str:
        """`repository:tag`, the tag being the target's `version` or the default."""
        return f"{self.repository}:{version or self.version}"


BUILT_IN_ENGINE_IMAGES: Mapping[str, EngineImage] = MappingProxyType(
    {e: EngineImage(DEFAULT_REPOSITORIES[e], DEFAULT_VERSIONS[e]) for e in DEFAULT_VERSIONS}
)


def engine_images(text: str | None) -> Mapping[str, EngineImage]:
    """The chart's `engines` values (JSON in DBBENCH_ENGINE_IMAGES) over the built-in
    official images; an engine or a key the chart leaves out keeps the built-in one."""
    images = dict(BUILT_IN_ENGINE_IMAGES)
    if not (text or "").strip():
        return MappingProxyType(images)
    try:
        given = json.loads(text or "")
    except ValueError as exc:
        raise ValueError(f"{ENGINE_IMAGES_ENV} is not JSON: {exc}") from exc
    # ValueError throughout: a bad setting's value, whatever is wrong with it.
    if not isinstance(given, dict):
        raise ValueError(f"{ENGINE_IMAGES_ENV} must be a JSON object of engine -> image")  # noqa: TRY004
    for engine, value in given.items():
        if not isinstance(value, dict):
            raise ValueError(f"{ENGINE_IMAGES_ENV}: {engine} must be an object")  # noqa: TRY004
        base = images.get(engine)
        repository = str(value.get("repository") or (base.repository if base else ""))
        version = str(value.get("version") or (base.version if base else ""))
        if not repository or not version:
            raise ValueError(f"{ENGINE_IMAGES_ENV}: {engine} needs a repository and a version")
        images[engine] = EngineImage(repository, version)
    return MappingProxyType(images)


@dataclass(frozen=True)
class OperatorPeer:
    """Where the operator's pod runs and its labels: what NetworkPolicies let in."""

    namespace: str
    labels: Mapping[str, str]


def _labels(text: str | None) -> Mapping[str, str]:
    """DBBENCH_OPERATOR_POD_LABELS: the chart's selector labels of the operator's pod (JSON)."""
    if not (text or "").strip():
        return MappingProxyType(dict(DEFAULT_OPERATOR_LABELS))
    given = json.loads(text or "")
    if not isinstance(given, dict) or not given:
        raise ValueError("DBBENCH_OPERATOR_POD_LABELS must be a JSON object of labels")
    return MappingProxyType({str(k): str(v) for k, v in given.items()})


# The chart's selector labels for a release named "dbbench".
DEFAULT_OPERATOR_LABELS = {
    "app.kubernetes.io/name": "dbbench",
    "app.kubernetes.io/instance": "dbbench",
    "app.kubernetes.io/component": "operator",
}


@dataclass(frozen=True)
class OperatorSettings:
    # How a run's passes are paced (`controller/pass_timing`): with `events`, a change of one of
    # the run's Pods, Jobs or StatefulSets starts its next pass, and a quiet run
    # (waiting for nodes, or running a step) is looked at every
    # `resync_interval` seconds as a safety net, a running step's progress every
    # `progress_interval`; every other wait, and every run without `events`, is
    # polled every `reconcile_interval` seconds. With many runs at once every
    # such wait stretches so that all runs together make at most
    # `max_passes_per_second` timed passes (0: no limit).
    reconcile_interval: float = 5.0
    events: bool = True
    resync_interval: float = 60.0
    progress_interval: float = 5.0
    max_passes_per_second: float = 5.0
    namespace: str = "dbbench-system"
    runner_image: str = "dbbench/runner:0.1.0"
    runner_pull_policy: str = "IfNotPresent"
    results_url: str = ""
    # Never logged or shown: it derives every run's results token.
    results_key: bytes = field(default=b"", repr=False)
    results_claim: str = "dbbench-results"
    allow_cache_drop: bool = False
    # Per-target NetworkPolicies (chart value networkPolicy.enabled).
    network_policies: bool = False
    operator_labels: Mapping[str, str] = field(
        default_factory=lambda: MappingProxyType(dict(DEFAULT_OPERATOR_LABELS))
    )
    # A pass that fails (API error, setup error) is retried; the run fails once
    # this many passes in a row failed over at least `pass_error_window` seconds.
    pass_error_limit: int = 5
    pass_error_window: float = 60.0
    # Nothing waits forever: a reconcile pass is abandoned after this many
    # seconds (or sooner, at spec.timeout), and each API call after `api_timeout`.
    pass_deadline: float = 120.0
    api_timeout: float = 30.0
    watch_namespaces: tuple[str, ...] = ()
    # The cluster's DNS domain (kubelet --cluster-domain); database hosts end in it.
    cluster_domain: str = "cluster.local"
    # Each engine's image when a target sets no `image` (chart values `engines`).
    engine_images: Mapping[str, EngineImage] = field(default_factory=lambda: BUILT_IN_ENGINE_IMAGES)
    # /metrics ports (0: none): the operator's own, and the one its runner pods
    # serve, with how long they keep serving after their phase (docs/metrics.md).
    metrics_port: int = 0
    metrics_address: str = "0.0.0.0"  # noqa: S104 - a pod's own port; tests bind loopback
    runner_metrics_port: int = 0
    runner_metrics_linger: float = 0.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OperatorSettings:
        env = os.environ if env is None else env
        defaults = cls()
        return cls(
            reconcile_interval=float(env.get("DBBENCH_RECONCILE_INTERVAL", "5")),
            events=_flag(env.get("DBBENCH_EVENTS", "true")),
            resync_interval=float(env.get("DBBENCH_RESYNC_INTERVAL") or 60),
            progress_interval=float(env.get("DBBENCH_PROGRESS_INTERVAL") or 5),
            max_passes_per_second=float(env.get("DBBENCH_MAX_PASSES_PER_SECOND") or 5),
            namespace=env.get("DBBENCH_OPERATOR_NAMESPACE", defaults.namespace),
            runner_image=env.get("DBBENCH_RUNNER_IMAGE", defaults.runner_image),
            runner_pull_policy=env.get("DBBENCH_RUNNER_PULL_POLICY", defaults.runner_pull_policy),
            results_url=env.get("DBBENCH_RESULTS_URL", ""),
            results_key=env.get("DBBENCH_RESULTS_KEY", "").encode(),
            results_claim=env.get("DBBENCH_RESULTS_CLAIM", defaults.results_claim),
            allow_cache_drop=_flag(env.get("DBBENCH_ALLOW_CACHE_DROP")),
            network_policies=_flag(env.get("DBBENCH_NETWORK_POLICIES")),
            operator_labels=_labels(env.get("DBBENCH_OPERATOR_POD_LABELS")),
            pass_error_limit=int(env.get("DBBENCH_PASS_ERROR_LIMIT", "5")),
            pass_error_window=float(env.get("DBBENCH_PASS_ERROR_WINDOW", "60")),
            pass_deadline=float(env.get("DBBENCH_PASS_DEADLINE", "120")),
            api_timeout=float(env.get("DBBENCH_API_TIMEOUT", "30")),
            cluster_domain=env.get("DBBENCH_CLUSTER_DOMAIN") or defaults.cluster_domain,
            engine_images=engine_images(env.get(ENGINE_IMAGES_ENV)),
            watch_namespaces=tuple(
                ns for ns in env.get("DBBENCH_WATCH_NAMESPACES", "").split(",") if ns
            ),
            metrics_port=int(env.get("DBBENCH_METRICS_PORT") or 0),
            metrics_address=env.get("DBBENCH_METRICS_ADDRESS") or defaults.metrics_address,
            runner_metrics_port=int(env.get("DBBENCH_RUNNER_METRICS_PORT") or 0),
            runner_metrics_linger=float(env.get("DBBENCH_RUNNER_METRICS_LINGER") or 0),
        )

    def operator_peer(self) -> OperatorPeer:
        return OperatorPeer(self.namespace, self.operator_labels)
