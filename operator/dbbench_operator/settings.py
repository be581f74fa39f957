"""Operator settings, read once from the environment the chart sets.

The chart also sets DBBENCH_RUNNER_IMAGE, DBBENCH_RESULTS_CLAIM and
DBBENCH_WATCH_NAMESPACES for runner orchestration; they are read here when
that code exists, not before.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class OperatorSettings:
    reconcile_interval: float

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OperatorSettings:
        env = os.environ if env is None else env
        return cls(reconcile_interval=float(env.get("DBBENCH_RECONCILE_INTERVAL", "5")))
