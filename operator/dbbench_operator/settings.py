"""Operator settings, read from the environment the chart sets (on every pass,
so tests and restarts see the current values; it costs a few dict lookups)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class OperatorSettings:
    reconcile_interval: float = 5.0
    namespace: str = "dbbench-system"
    runner_image: str = "dbbench/runner:0.1.0"
    runner_pull_policy: str = "IfNotPresent"
    results_url: str = ""
    # Never logged or shown: it derives every run's results token.
    results_key: bytes = field(default=b"", repr=False)
    results_claim: str = "dbbench-results"
    allow_cache_drop: bool = False
    runner_backoff_limit: int = 2
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

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OperatorSettings:
        env = os.environ if env is None else env
        defaults = cls()
        return cls(
            reconcile_interval=float(env.get("DBBENCH_RECONCILE_INTERVAL", "5")),
            namespace=env.get("DBBENCH_OPERATOR_NAMESPACE", defaults.namespace),
            runner_image=env.get("DBBENCH_RUNNER_IMAGE", defaults.runner_image),
            runner_pull_policy=env.get("DBBENCH_RUNNER_PULL_POLICY", defaults.runner_pull_policy),
            results_url=env.get("DBBENCH_RESULTS_URL", ""),
            results_key=env.get("DBBENCH_RESULTS_KEY", "").encode(),
            results_claim=env.get("DBBENCH_RESULTS_CLAIM", defaults.results_claim),
            allow_cache_drop=_flag(env.get("DBBENCH_ALLOW_CACHE_DROP")),
            runner_backoff_limit=int(env.get("DBBENCH_RUNNER_BACKOFF_LIMIT", "2")),
            pass_error_limit=int(env.get("DBBENCH_PASS_ERROR_LIMIT", "5")),
            pass_error_window=float(env.get("DBBENCH_PASS_ERROR_WINDOW", "60")),
            pass_deadline=float(env.get("DBBENCH_PASS_DEADLINE", "120")),
            api_timeout=float(env.get("DBBENCH_API_TIMEOUT", "30")),
            cluster_domain=env.get("DBBENCH_CLUSTER_DOMAIN") or defaults.cluster_domain,
            watch_namespaces=tuple(
                ns for ns in env.get("DBBENCH_WATCH_NAMESPACES", "").split(",") if ns
            ),
        )
