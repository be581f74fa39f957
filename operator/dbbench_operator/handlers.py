"""kopf registrations: the operator's thin public front.

Run with ``kopf run --module=dbbench_operator.handlers --standalone``. Each
handler hands what kopf gives it to the module that acts (``controller/run_loop`` for a
run's passes, ``controller/admission`` and ``controller/alarms`` for what the watches show,
``controller/reconciling`` for a deleted run); no decisions are made here.
"""

from __future__ import annotations

import asyncio
import logging
import os
from datetime import UTC, datetime
from typing import Any

import kopf

from dbbench_contract.api.schedule_crd import PLURAL as SCHEDULE_PLURAL
from dbbench_operator.controller import admission, heap
from dbbench_operator.controller.alarms import ALARMS
from dbbench_operator.controller.inventory import INVENTORY
from dbbench_operator.controller.kept_bodies import drop_managed_fields
from dbbench_operator.controller.metrics import METRICS
from dbbench_operator.controller.reconciling import deleted, needs_pass
from dbbench_operator.controller.run_loop import drive
from dbbench_operator.naming import GROUP, PLURAL, RUN_UID_LABEL, VERSION, RunRef
from dbbench_operator.schedules import ticking
from dbbench_operator.settings import OperatorSettings

# Whether the children's watches exist is decided when kopf loads this module
# (the chart's DBBENCH_EVENTS); without them each run is polled on its timer
# alone (`controller/pass_timing`), which every pass re-reads from the environment.
EVENTS = OperatorSettings.from_env().events
# Watch handlers that run for every event of every run, child and node: kopf logs
# "Handler '<id>' succeeded." at INFO for each (a line per node heartbeat and per
# status patch, a tenth of the operator's CPU at 100 runs on 100 nodes).
QUIET_HANDLERS = frozenset({"run_seen", "node_seen", "child_changed"})


class QuietWatchHandlers(logging.Filter):
    """Drops kopf's success line of the watch handlers; their failures still show."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or not isinstance(record.msg, str):
            return True
        return not any(record.msg == f"Handler {name!r} succeeded." for name in QUIET_HANDLERS)


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
    objects = logging.getLogger("kopf.objects")
    if not any(isinstance(f, QuietWatchHandlers) for f in objects.filters):
        objects.addFilter(QuietWatchHandlers())
    for children in (("v1", "pods"), ("batch/v1", "jobs"), ("apps/v1", "statefulsets")):
        # The API server sends only the runs' own children, not every pod of the cluster.
        settings.watching.label_selectors[children] = RUN_UID_LABEL
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    # kopf's own calls (status patches, events): bounded like ours, not 5 minutes.
    timeout = OperatorSettings.from_env().api_timeout
    settings.networking.request_timeout = timeout
    settings.networking.connect_timeout = min(10.0, timeout)
    INVENTORY.clear()  # the watches are about to show every run and node again
    operator = OperatorSettings.from_env()
    if operator.metrics_port:
        METRICS.runs.clear()  # the watch is about to list every run
        METRICS.serve(operator.metrics_port, operator.metrics_address)


_TRIMMER: asyncio.Task[None] | None = None


@kopf.on.startup()
async def start_trimming(**_: Any) -> None:
    """Freed heap memory goes back to the system every 30 s (`controller/heap`)."""
    global _TRIMMER  # noqa: PLW0603 - one task for the operator's life, kept from the GC
    if _TRIMMER is None or _TRIMMER.done():
        _TRIMMER = asyncio.get_running_loop().create_task(heap.trim_forever())


@kopf.on.cleanup()
async def stop_trimming(**_: Any) -> None:
    if _TRIMMER is not None:
        _TRIMMER.cancel()


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


# A deleted run: kopf asks its loop to stop and looks again for the loop's exit
# (then runs `run_deleted` and releases the finalizer) after this many seconds,
# each look a patch of the run. An idle loop, and one whose pass still waits for
# a worker thread (`controller/run_loop`), exits at once, so every deletion waited the full
# interval: 1 s instead of the poll interval (5 s) or kopf's default minute.
DELETION_POLL_S = 1.0


@kopf.daemon(GROUP, VERSION, PLURAL, initial_delay=0, when=_needs_pass,
             cancellation_polling=DELETION_POLL_S)  # fmt: skip
async def drive_run(
    *, body: kopf.Body, stopped: kopf.DaemonStopped, logger: kopf.Logger, **_: Any
) -> None:
    """Advance the run pass by pass, each started by a change of its children or by
    its pacing (`controller/run_loop`); kopf stops it once the run needs no more passes."""

    def post(kind: str, reason: str, message: str) -> None:
        kopf.event(body, type=kind, reason=reason, message=message)
        logger.info("%s: %s", reason, message)

    await drive(body, stopped, ALARMS, post)


if EVENTS:
    # Only the runs' own children (label dbbench.io/run-uid, filtered by the API
    # server: `configure`) are watched; a change rings the owning run's alarm.
    @kopf.on.event("v1", "pods", labels={RUN_UID_LABEL: kopf.PRESENT})
    @kopf.on.event("batch/v1", "jobs", labels={RUN_UID_LABEL: kopf.PRESENT})
    @kopf.on.event("apps/v1", "statefulsets", labels={RUN_UID_LABEL: kopf.PRESENT})
    async def child_changed(*, labels: kopf.Labels, **_: Any) -> None:
        """A Pod, Job or StatefulSet of a run changed: the run looks at it now."""
        ALARMS.ring(labels[RUN_UID_LABEL])


@kopf.on.event(GROUP, VERSION, PLURAL)
async def run_seen(
    *, event: kopf.RawEvent, body: kopf.Body, meta: kopf.Meta, status: kopf.Status, **_: Any
) -> None:
    """Every run the watch shows, ended ones too: /metrics counts runs by phase,
    admission keeps what it needs in memory, and a run that released its nodes
    (cleaned up, or deleted) lets waiting runs look again."""
    # In place: kopf keeps this very object as the run's live body (`controller/kept_bodies`).
    drop_managed_fields(event["object"])
    gone = event.get("type") == "DELETED"
    METRICS.runs.seen(str(meta.get("uid")), status, deleted=gone)
    admission.run_seen(body, deleted=gone)
    if gone or not needs_pass(status):
        ALARMS.ring_waiting_for_nodes()


@kopf.on.event("v1", "nodes")
async def node_seen(*, event: kopf.RawEvent, body: kopf.Body, **_: Any) -> None:
    """Nodes for admission, in memory; a change of labels or capacity lets waiting
    runs look again."""
    if admission.node_seen(body, deleted=event.get("type") == "DELETED"):
        ALARMS.ring_waiting_for_nodes()


@kopf.on.delete(GROUP, VERSION, PLURAL)
def run_deleted(*, meta: kopf.Meta, spec: kopf.Spec, **_: Any) -> None:
    """Remove what no owner reference reaches (cache-drop Jobs in the operator's
    namespace); kopf keeps the run's finalizer, and retries, until this returns."""
    deleted(RunRef.from_meta(meta), spec, OperatorSettings.from_env())


# A schedule is looked at this often: a run starts at most this many seconds after
# its time (it is named after the time itself), and history limits and the status
# follow its runs as quickly.
SCHEDULE_TICK_S = 10.0


@kopf.timer(GROUP, VERSION, SCHEDULE_PLURAL, interval=SCHEDULE_TICK_S, initial_delay=0)
def schedule_tick(*, body: kopf.Body, logger: kopf.Logger, **_: Any) -> None:
    """Start the schedule's due run, apply its concurrency policy and history limits,
    and report its status (`schedules/ticking`)."""

    def post(kind: str, reason: str, message: str) -> None:
        kopf.event(body, type=kind, reason=reason, message=message)
        logger.info("%s: %s", reason, message)

    ticking.tick(body, datetime.now(UTC), OperatorSettings.from_env(), post)
