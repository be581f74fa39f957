"""The operator's side of the results service (HTTP, standard library only).

The service owns the results claim: the operator asks it to merge a step's
pods, reads the merged summary and the pods' progress, and writes the run's
summary.json, and asks for the run's verdict against its series. Every call is
bounded in time; failures raise
``ResultsServiceError`` naming the request (never the token).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import TypeVar
from urllib.parse import quote

from pydantic import ValidationError

from dbbench_contract.history import SeriesHistory, Verdict
from dbbench_contract.layout import SUMMARY
from dbbench_contract.progress import StepProgress
from dbbench_contract.summary import StepSummary
from dbbench_contract.wire import StoredModel
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.specs.tokens import results_prefix, run_token, series_token

TIMEOUT_S = 60.0
# The verdict is asked for in the pass that ends the run: it must not hold it long.
VERDICT_TIMEOUT_S = 20.0
M = TypeVar("M", bound=StoredModel)


class ResultsServiceError(Exception):
    pass


class NotStoredError(ResultsServiceError):
    """The service answered 404: no such file (a step that never finished)."""


def _call(
    settings: OperatorSettings,
    run: RunRef,
    method: str,
    path: str,
    *,
    body: bytes | None = None,
    timeout: float = TIMEOUT_S,
) -> bytes:
    """A call on the run's own results (its run token)."""
    where = f"runs/{quote(results_prefix(run))}/{path}"
    token = run_token(settings.results_key, run)
    return _request(settings, method, where, token, path, body=body, timeout=timeout)


def _request(
    settings: OperatorSettings,
    method: str,
    where: str,
    token: str,
    path: str,
    *,
    body: bytes | None = None,
    timeout: float = TIMEOUT_S,
) -> bytes:
    if not settings.results_url:
        raise ResultsServiceError(
            "DBBENCH_RESULTS_URL is not set: the operator cannot reach the results service"
        )
    url = f"{settings.results_url.rstrip('/')}/v1/{where}"
    request = urllib.request.Request(  # noqa: S310 - the chart's own http Service
        url,
        data=body,
        method=method,
        headers={"Authorization": f"Bearer {token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            data: bytes = response.read()
            return data
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")[:400]
        kind = NotStoredError if exc.code == 404 else ResultsServiceError
        raise kind(f"{method} {path}: HTTP {exc.code} {detail}") from exc
    except OSError as exc:
        raise ResultsServiceError(
            f"{method} {path}: results service at {settings.results_url} unreachable "
            f"({type(exc).__name__})"
        ) from exc


def _parsed(model: type[M], what: str, data: bytes) -> M:
    try:
        return model.from_json(data)
    except ValidationError as exc:
        raise ResultsServiceError(f"{what}: not a {model.__name__}: {exc.errors()[0]}") from exc


def merge_step(settings: OperatorSettings, run: RunRef, step_dir: str, pods: int) -> StepSummary:
    """Merge the step's pods on the claim; the merged summary."""
    path = f"steps/{quote(step_dir)}/merge?pods={pods}"
    return _parsed(StepSummary, path, _call(settings, run, "POST", path))


def step_progress(
    settings: OperatorSettings, run: RunRef, step_dir: str, pods: int
) -> StepProgress | None:
    """The pods' progress added up; None when the service cannot say (not fatal)."""
    path = f"steps/{quote(step_dir)}/progress?pods={pods}"
    try:
        return _parsed(StepProgress, path, _call(settings, run, "GET", path, timeout=10))
    except ResultsServiceError:
        return None


def put_file(settings: OperatorSettings, run: RunRef, relative: str, data: bytes) -> None:
    _call(settings, run, "PUT", f"files/{quote(relative)}", body=data)


def step_summary(settings: OperatorSettings, run: RunRef, step_dir: str) -> StepSummary:
    """A merged step's summary.json as stored on the claim."""
    path = f"{step_dir}/{SUMMARY}"
    return _parsed(StepSummary, path, _call(settings, run, "GET", f"files/{quote(path)}"))


def stored_step_summary(
    settings: OperatorSettings, run: RunRef, step_dir: str
) -> StepSummary | None:
    """A merged step's summary.json, or None when the step was never merged."""
    try:
        return step_summary(settings, run, step_dir)
    except NotStoredError:
        return None


def series_verdict(settings: OperatorSettings, run: RunRef, series: str) -> Verdict | None:
    """The verdict on the run against its series (the service's index as it is
    now); None when the service's answer has none (the run is not indexed)."""
    where = f"series/{quote(run.namespace)}/{quote(series)}?run={quote(run.name)}"
    token = series_token(settings.results_key, run.namespace, series)
    path = f"series {series}"
    answer = _parsed(SeriesHistory, path, _request(settings, "GET", where, token, path,
                                                   timeout=VERDICT_TIMEOUT_S))  # fmt: skip
    return answer.verdict


def series_history(settings: OperatorSettings, namespace: str, series: str) -> SeriesHistory:
    """The series' index as it is now (its points in run order), not asking for a
    verdict: what a tolerance compares a run with before its summary is stored."""
    where = f"series/{quote(namespace)}/{quote(series)}"
    token = series_token(settings.results_key, namespace, series)
    path = f"series {series}"
    return _parsed(SeriesHistory, path, _request(settings, "GET", where, token, path,
                                                 timeout=VERDICT_TIMEOUT_S))  # fmt: skip
