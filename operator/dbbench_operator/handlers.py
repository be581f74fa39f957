"""kopf registrations: the operator's thin public front.

Run with ``kopf run --module=dbbench_operator.handlers --standalone``. Each
handler parses what kopf hands it, delegates to ``reconciling`` and records the
outcome; no decisions are made here.
"""

from __future__ import annotations

import logging
import os
import time
from datetime import UTC, datetime
from typing import Any

import kopf

from dbbench_operator.monitoring import METRICS
from dbbench_operator.naming import GROUP, PLURAL, VERSION, RunRef
from dbbench_operator.reconciling import deleted, needs_pass, reconcile_within
from dbbench_operator.settings import OperatorSettings

INTERVAL = OperatorSettings.from_env().reconcile_interval


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    # Progress and diff-base in our own annotations, not kopf's defaults, so
    # that `kubectl get br -o yaml` reads as dbbench's.
    settings.persistence.finalizer = f"{GROUP}/finalizer"
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=GROUP, key="last-handled-configuration"
    )
    settings.posting.level = logging.INFO
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    # kopf's own calls (status patches, events): bounded like ours, not 5 minutes.
    timeout = OperatorSettings.from_env().api_timeout
    settings.networking.request_timeout = timeout
    settings.networking.connect_timeout = min(10.0, timeout)
    operator = OperatorSettings.from_env()
    if operator.metrics_port:
        METRICS.runs.clear()  # the watch is about to list every run
        METRICS.serve(operator.metrics_port, operator.metrics_address)


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """In a pod, the ServiceAccount; elsewhere ``$KUBECONFIG`` as it is now.

    kopf's default piggybacks on the kubernetes client, which reads
    ``$KUBECONFIG`` once at import time; reading it at login is what a user
    who exports a different KUBECONFIG expects.
    """
    if os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
        return kopf.login_with_service_account(**kwargs)
    return kopf.login_with_kubeconfig(**kwargs)


def _needs_pass(status: kopf.Status, **_: Any) -> bool:
    return needs_pass(status)


@kopf.timer(GROUP, VERSION, PLURAL, interval=INTERVAL, initial_delay=0, when=_needs_pass)
def reconcile_run(
    *,
    body: kopf.Body, meta: kopf.Meta, spec: kopf.Spec, status: kopf.Status,
    patch: kopf.Patch, logger: kopf.Logger, **_: Any,
) -> None:  # fmt: skip
    """Advance the run by one idempotent pass and record what happened."""
    settings = OperatorSettings.from_env()
    started = time.monotonic()
    outcome = reconcile_within(RunRef.from_meta(meta), spec, status, datetime.now(UTC), settings)
    METRICS.passed(time.monotonic() - started, outcome.failed)
    patch.status.update(outcome.status)
    for kind, reason, message in outcome.events:
        kopf.event(body, type=kind, reason=reason, message=message)
        logger.info("%s: %s", reason, message)


@kopf.on.event(GROUP, VERSION, PLURAL)
def run_seen(*, event: kopf.RawEvent, meta: kopf.Meta, status: kopf.Status, **_: Any) -> None:
    """Every run the watch shows, ended ones too: /metrics counts runs by phase."""
    METRICS.runs.seen(str(meta.get("uid")), status, deleted=event.get("type") == "DELETED")


@kopf.on.delete(GROUP, VERSION, PLURAL)
def run_deleted(*, meta: kopf.Meta, spec: kopf.Spec, **_: Any) -> None:
    """Remove what no owner reference reaches (cache-drop Jobs in the operator's
    namespace); kopf keeps the run's finalizer, and retries, until this returns."""
    deleted(RunRef.from_meta(meta), spec, OperatorSettings.from_env())
