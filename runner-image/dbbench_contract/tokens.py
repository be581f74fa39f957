"""The run's results token: HMAC-SHA256 of the run's identity under the service key.

The operator derives it and stores it in the run's Secret; runner pods present
it; the results service recomputes it to check. A token opens only its own
run's directory, and the service needs no Kubernetes API access to check it.
A series token (the operator's, for a run's verdict) opens one series' history.
"""

from __future__ import annotations

import hashlib
import hmac

from dbbench_contract.layout import run_prefix


def run_token(key: bytes, namespace: str, name: str, uid: str) -> str:
    return hmac.new(key, run_prefix(namespace, name, uid).encode(), hashlib.sha256).hexdigest()


def token_matches(key: bytes, namespace: str, name: str, uid: str, presented: str) -> bool:
    """Constant-time comparison, so the check leaks nothing about the right token."""
    return hmac.compare_digest(run_token(key, namespace, name, uid), presented)


def series_token(key: bytes, namespace: str, series: str) -> str:
    """Opens one series' history (``GET /v1/series/<namespace>/<series>``): a series
    spans runs, so no run token fits. The ':' keeps it apart from every run token
    (a namespace name has none)."""
    return hmac.new(key, f"series:{namespace}/{series}".encode(), hashlib.sha256).hexdigest()


def series_token_matches(key: bytes, namespace: str, series: str, presented: str) -> bool:
    return hmac.compare_digest(series_token(key, namespace, series), presented)
