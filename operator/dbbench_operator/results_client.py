"""The operator's side of the results service (HTTP, standard library only).

The service owns the results claim: the operator asks it to merge a step's
pods, reads the merged summary and the pods' progress, and writes the run's
summary.json. Every call is bounded in time; failures raise
``ResultsServiceError`` naming the request (never the token).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

from dbbench_operator.naming import RunRef
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.tokens import results_prefix, run_token

TIMEOUT_S = 60.0


class ResultsServiceError(Exception):
    pass


def _call(
    settings: OperatorSettings,
    run: RunRef,
    method: str,
    path: str,
    *,
    body: bytes | None = None,
    timeout: float = TIMEOUT_S,
) -> bytes:
    if not settings.results_url:
        raise ResultsServiceError(
            "DBBENCH_RESULTS_URL is not set: the operator cannot reach the results service"
        )
    url = f"{settings.results_url.rstrip('/')}/v1/runs/{quote(results_prefix(run))}/{path}"
    request = urllib.request.Request(  # noqa: S310 - the chart's own http Service
        url,
        data=body,
        method=method,
        headers={"Authorization": f"Bearer {run_token(settings.results_key, run)}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            data: bytes = response.read()
            return data
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")[:400]
        raise ResultsServiceError(f"{method} {path}: HTTP {exc.code} {detail}") from exc
    except OSError as exc:
        raise ResultsServiceError(
            f"{method} {path}: results service at {settings.results_url} unreachable "
            f"({type(exc).__name__})"
        ) from exc


def merge_step(settings: OperatorSettings, run: RunRef, step_dir: str, pods: int) -> dict[str, Any]:
    """Merge the step's pods on the claim; the merged summary.json's content."""
    data = _call(settings, run, "POST", f"steps/{quote(step_dir)}/merge?pods={pods}")
    summary: dict[str, Any] = json.loads(data)
    return summary


def step_progress(
    settings: OperatorSettings, run: RunRef, step_dir: str, pods: int
) -> dict[str, Any] | None:
    """The pods' progress added up; None when the service cannot say (not fatal)."""
    try:
        data = _call(
            settings, run, "GET", f"steps/{quote(step_dir)}/progress?pods={pods}", timeout=10
        )
    except ResultsServiceError:
        return None
    progress: dict[str, Any] = json.loads(data)
    return progress


def put_file(settings: OperatorSettings, run: RunRef, relative: str, data: bytes) -> None:
    _call(settings, run, "PUT", f"files/{quote(relative)}", body=data)


def get_json(settings: OperatorSettings, run: RunRef, relative: str) -> dict[str, Any]:
    data = _call(settings, run, "GET", f"files/{quote(relative)}")
    document: dict[str, Any] = json.loads(data)
    return document
