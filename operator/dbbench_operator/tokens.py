"""The run's results token (pure): HMAC-SHA256 of the run's identity.

The results service computes the same (``dbbench_results.tokens``; a test
checks both agree) and accepts the token only under ``<ns>/<run>/<uid>/``.
"""

from __future__ import annotations

import hashlib
import hmac

from dbbench_operator.naming import RunRef


def run_token(key: bytes, run: RunRef) -> str:
    return hmac.new(
        key, f"{run.namespace}/{run.name}/{run.uid}".encode(), hashlib.sha256
    ).hexdigest()


def results_prefix(run: RunRef) -> str:
    """Where the run's files live under the results root."""
    return f"{run.namespace}/{run.name}/{run.uid}"
