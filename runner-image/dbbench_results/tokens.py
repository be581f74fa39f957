"""Per-run tokens: HMAC-SHA256 of the run's identity under the service key.

The operator derives the same token (``dbbench_operator.tokens``) and stores it
in the run's credentials Secret; runner pods present it. A token opens only
``<namespace>/<run>/<uid>/``: one run cannot write into another run's files,
and the service needs no Kubernetes API access to check it.
"""

from __future__ import annotations

import hashlib
import hmac


def run_token(key: bytes, namespace: str, name: str, uid: str) -> str:
    return hmac.new(key, f"{namespace}/{name}/{uid}".encode(), hashlib.sha256).hexdigest()


def token_matches(key: bytes, namespace: str, name: str, uid: str, presented: str) -> bool:
    """Constant-time comparison, so the check leaks nothing about the right token."""
    return hmac.compare_digest(run_token(key, namespace, name, uid), presented)
