"""The run's results token (pure), derived as the results service checks it
(``dbbench_contract.tokens``: one definition for both)."""

from __future__ import annotations

from dbbench_contract import layout, tokens
from dbbench_operator.naming import RunRef


def run_token(key: bytes, run: RunRef) -> str:
    return tokens.run_token(key, run.namespace, run.name, run.uid)


def series_token(key: bytes, namespace: str, series: str) -> str:
    """Opens one series' history on the results service (the run's verdict)."""
    return tokens.series_token(key, namespace, series)


def results_prefix(run: RunRef) -> str:
    """Where the run's files live under the results root."""
    return layout.run_prefix(run.namespace, run.name, run.uid)
