"""The chart's results.history.* values reach the results service and the browser:
the same judging flags in both, and the PostgreSQL DSN from the Secret named."""

from __future__ import annotations

from typing import Any

import yaml

from tests.support.helm import template


def _containers(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(template(values).stdout) if d]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"
                     and d["metadata"]["name"].endswith("-results")]  # fmt: skip
    return {c["name"]: c for c in deployment["spec"]["template"]["spec"]["containers"]}


def test_the_judging_values_reach_the_service_and_the_browser() -> None:
    history = {"significance": 0.01, "minRuns": 6}
    containers = _containers({"results": {"history": history}})
    for name in ("results", "browser"):
        command = containers[name]["command"]
        assert "--significance=0.01" in command
        assert "--min-runs=6" in command
        env = {e["name"] for e in containers[name].get("env") or []}
        assert "DBBENCH_RESULTS_HISTORY_DSN" not in env  # SQLite on the claim by default


def test_a_postgres_secret_gives_both_the_dsn() -> None:
    postgres = {"existingSecret": "history-pg", "existingSecretKey": "uri"}
    containers = _containers({"results": {"history": {"postgres": postgres}}})
    for name in ("results", "browser"):
        env = {e["name"]: e for e in containers[name]["env"]}
        ref = env["DBBENCH_RESULTS_HISTORY_DSN"]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": "history-pg", "key": "uri"}
