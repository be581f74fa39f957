"""The per-run credentials Secret: generated once, never shown in spec or status.

Randomness is injected so the builder stays pure and testable; the operator
passes ``secrets.token_urlsafe``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from dbbench_operator.naming import RunRef, adopt, credentials_secret_name, run_labels
from dbbench_operator.specs.databases.request import (
    SECRET_KEYFILE_KEY,
    SECRET_PASSWORD_KEY,
    SECRET_REPLICATION_PASSWORD_KEY,
    SECRET_USERNAME_KEY,
)

ROOT_USERNAME = "dbbench"
RESULTS_TOKEN_KEY = "results-token"  # noqa: S105 - a key name; runner pods present its value
PASSWORD_BYTES = 24
KEYFILE_BYTES = 576  # mongod keyFile: 6..1024 base64 characters; 576 bytes -> 768 chars


def build_credentials_secret(
    run: RunRef, random_token: Callable[[int], str], results_token: str
) -> dict[str, Any]:
    """A Secret with the database root user, a replication password, a MongoDB keyFile
    and the run's results token (runner pods present it to the results service)."""
    keyfile = base64.b64encode(random_token(KEYFILE_BYTES).encode())[:756].decode()
    manifest = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": credentials_secret_name(run),
            "labels": run_labels(run, "credentials"),
        },
        "stringData": {
            SECRET_USERNAME_KEY: ROOT_USERNAME,
            SECRET_PASSWORD_KEY: random_token(PASSWORD_BYTES),
            SECRET_REPLICATION_PASSWORD_KEY: random_token(PASSWORD_BYTES),
            SECRET_KEYFILE_KEY: keyfile,
            RESULTS_TOKEN_KEY: results_token,
        },
    }
    return adopt(manifest, run)
