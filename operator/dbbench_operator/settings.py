"""Operator settings, read once from the environment the chart sets."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class OperatorSettings:
    namespace: str
    runner_image: str
    results_claim: str
    watch_namespaces: tuple[str, ...]
    reconcile_interval: float

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OperatorSettings:
        env = os.environ if env is None else env
        watch = tuple(ns for ns in env.get("DBBENCH_WATCH_NAMESPACES", "").split(",") if ns)
        return cls(
            namespace=env.get("DBBENCH_OPERATOR_NAMESPACE", "dbbench-system"),
            runner_image=env.get("DBBENCH_RUNNER_IMAGE", "dbbench-runner:dev"),
            results_claim=env.get("DBBENCH_RESULTS_CLAIM", "dbbench-results"),
            watch_namespaces=watch,
            reconcile_interval=float(env.get("DBBENCH_RECONCILE_INTERVAL", "5")),
        )
