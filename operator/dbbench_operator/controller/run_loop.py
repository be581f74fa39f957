"""A run's loop: the kopf daemon of each run that needs passes.

One pass at a time (so never two passes of one run at once), in a worker
thread; its status patch is written straight to the API server (kopf would
apply a daemon's `patch` only when the daemon returns), and its events are
posted. Then the loop waits as `controller/pass_timing` says: a change of one of the run's
children (`controller/alarms`) cuts a wakeable wait short, but never to less than
`controller/pass_timing.MIN_GAP_S` after the last pass began, so a burst of changes costs one
pass. kopf stops the loop when the run no longer needs passes (ended and
cleaned up) or is deleted.

The live body kopf hands a daemon follows the watch, which may not have shown
this loop's own last patches yet when the next pass starts: the status the
loop wrote last is used while the watch still shows a status that one of its
patches replaced (`fresh_status`).
"""

from __future__ import annotations

import asyncio
import copy
import functools
import hashlib
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from dbbench_contract.api import API_VERSION, KIND
from dbbench_operator.controller import pass_timing
from dbbench_operator.controller.alarms import Alarms
from dbbench_operator.controller.concluding import Outcome
from dbbench_operator.controller.metrics import METRICS
from dbbench_operator.controller.reconciling import reconcile_within, seconds_left
from dbbench_operator.k8s import api
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.status import expectations
from dbbench_operator.status.recording import read_status
from dbbench_operator.targets import provisioning

log = logging.getLogger(__name__)
Post = Callable[[str, str, str], None]  # (Normal|Warning, reason, message)


class Stopped(Protocol):
    """kopf's `stopped` flag of an async daemon."""

    def __bool__(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> Awaitable[Any]: ...


# Worker threads for passes. A pass spends most of its time waiting on the API
# server (~0.6 s a pass on a busy 2-core control plane, ~10 ms of it CPU), so
# asyncio's default pool (cpu count + 4 = 6 threads here) capped the operator at
# ~10 passes a second: 100 runs applied at once waited a minute for their first
# pass behind the timed passes of the others. More threads cost little memory
# (each holds only its pass's reads); the pass budget, not the pool, bounds
# the steady rate.
PASS_WORKERS = 16
PASSES = ThreadPoolExecutor(max_workers=PASS_WORKERS, thread_name_prefix="pass")

# A stretched wait lasts its length times a draw from 1 +- JITTER (`pass_timing.stretched`).
JITTER = 0.25

# Statuses the loop remembers having replaced: the watch may lag a few patches.
_SUPERSEDED = 4


def fingerprint(status: Mapping[str, Any]) -> str:
    """A digest that tells statuses apart: a loop keeps these of the statuses its
    patches replaced, not the statuses (kilobytes each, times every run)."""
    text = json.dumps(status, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


@dataclass(frozen=True)
class Written:
    """The status this loop last wrote, and the fingerprints of the ones its patches
    replaced."""

    after: Mapping[str, Any]
    superseded: tuple[str, ...] = ()

    @classmethod
    def first(cls, live: Mapping[str, Any], after: Mapping[str, Any]) -> Written:
        """After the loop's first patch, made while the watch showed `live`."""
        return cls(after, (fingerprint(live),))

    def then(self, live: Mapping[str, Any], after: Mapping[str, Any]) -> Written:
        """After another patch, made while the watch showed `live`."""
        replaced = (*self.superseded, fingerprint(live), fingerprint(self.after))
        return Written(after, tuple(dict.fromkeys(replaced))[-_SUPERSEDED:])


def fresh_status(live: Mapping[str, Any], written: Written | None) -> Mapping[str, Any]:
    """The status the next pass must see: the loop's own last patch while the watch
    still shows a status one of its patches replaced (it lags)."""
    if written is None or live == written.after:
        return live
    return written.after if fingerprint(live) in written.superseded else live


def kept(live: Mapping[str, Any], written: Written | None) -> Written | None:
    """What the loop must remember of its writes after a pass that wrote nothing:
    nothing once the watch shows its last write (the watch is ordered: the statuses
    that write replaced cannot come back), so a quiet run's loop holds no second
    copy of its status (~5 KB a run)."""
    if written is not None and live == written.after:
        return None
    return written


def one_pass(
    meta: Mapping[str, Any],
    spec: Mapping[str, Any],
    status: Mapping[str, Any],
    settings: OperatorSettings,
) -> tuple[Outcome, Mapping[str, Any] | None]:
    """A pass, and the status after its patch (None: nothing was written)."""
    run = RunRef.from_meta(meta)
    began = time.monotonic()
    outcome = reconcile_within(run, spec, status, datetime.now(UTC), settings)
    METRICS.passed(time.monotonic() - began, outcome.failed)
    if not outcome.status:
        return outcome, None
    try:
        patched = api.patch_status(API_VERSION, KIND, run.namespace, run.name, outcome.status)
    except api.KubeError as exc:
        # The pass's work is idempotent: the next pass does it again and writes it.
        log.warning("status of %s/%s not written: %s", run.namespace, run.name, exc)
        busy = exc.transient or outcome.busy
        return replace(outcome, events=(), busy=busy, retry_after=exc.retry_after), None
    written = dict(patched.get("status") or {})
    if outcome.change_point is not None:
        METRICS.change_point(run.namespace, run.series or "", outcome.change_point)
    if expectations.newly_missed(status, written):
        METRICS.expectation_missed(run.namespace, run.series or "")
    return outcome, written


def _pass_unless_stopped(
    stopped: Stopped,
    meta: Mapping[str, Any],
    spec: Mapping[str, Any],
    status: Mapping[str, Any],
    settings: OperatorSettings,
) -> tuple[Outcome, Mapping[str, Any] | None]:
    """`one_pass`, unless kopf stopped the loop while the pass waited for a worker
    thread: with hundreds of runs passes queue for the pool, and a deleted run's
    pass would only delay its finalizer (and re-apply children its deletion is
    removing)."""
    if stopped:
        return Outcome(), None
    return one_pass(meta, spec, status, settings)


async def _stop(stopped: Stopped) -> None:
    await stopped.wait()


async def pause(
    alarm: asyncio.Event, stopped: Stopped, wait: pass_timing.Wait, not_before: float
) -> None:
    """Wait as `controller/pass_timing` says, never past a stop. A ring cuts a wakeable wait short,
    but not to before `not_before` (loop time): a burst of rings costs one pass."""
    loop = asyncio.get_running_loop()
    stop = asyncio.ensure_future(_stop(stopped))
    waiters: set[asyncio.Future[Any]] = {stop}
    if wait.wakeable:
        waiters.add(asyncio.ensure_future(alarm.wait()))
    try:
        await asyncio.wait(waiters, timeout=wait.seconds, return_when=asyncio.FIRST_COMPLETED)
        gap = not_before - loop.time()
        if wait.wakeable and alarm.is_set() and gap > 0 and not stop.done():
            await asyncio.wait({stop}, timeout=gap)
    finally:
        for waiter in waiters:
            waiter.cancel()


def _snapshot(body: Mapping[str, Any], key: str) -> dict[str, Any]:
    """A copy the worker thread may read while kopf updates the live body."""
    return copy.deepcopy(dict(body.get(key) or {}))


@dataclass(frozen=True)
class _Round:
    """What a loop keeps from one pass to the next (only this: the pass's copies of
    the run's metadata, spec and status go with `_one_round`'s frame, not held by
    every waiting run's loop, ~10 KB a run)."""

    written: Written | None
    busy: int
    wait: pass_timing.Wait


async def _one_round(
    body: Mapping[str, Any], stopped: Stopped, alarms: Alarms, post: Post, last: _Round
) -> _Round:
    """One pass in a worker thread, its status and Events out, and the next wait."""
    loop = asyncio.get_running_loop()
    uid = str(body["metadata"]["uid"])
    settings = OperatorSettings.from_env()
    meta, spec = _snapshot(body, "metadata"), _snapshot(body, "spec")
    live = _snapshot(body, "status")
    status = fresh_status(live, last.written)
    try:
        outcome, after = await loop.run_in_executor(PASSES, functools.partial(
            _pass_unless_stopped, stopped, meta, spec, status, settings))  # fmt: skip
    except Exception:  # a bug: kopf would restart the daemon after a minute; retry sooner
        log.exception("pass of %s/%s failed", meta.get("namespace"), meta.get("name"))
        outcome, after = Outcome(), None
    written = last.written
    if after is not None:
        written = Written.first(live, after) if written is None else written.then(live, after)
    else:
        written = kept(live, written)
    for kind, reason, message in outcome.events:
        post(kind, reason, message)
    busy = last.busy + 1 if outcome.busy else 0
    now_status = after if after is not None else {**status, **outcome.status}
    alarms.waiting_for_nodes(uid, waiting=pass_timing.waits_for_nodes(now_status))
    wait = pass_timing.next_wait(
        now_status, settings, busy_passes=busy, retry_after=outcome.retry_after,
        seconds_left=seconds_left(spec, now_status, datetime.now(UTC)),
        active_runs=len(alarms),
        moved=read_status(now_status).phase != read_status(status).phase,
        jitter=random.uniform(1 - JITTER, 1 + JITTER),  # noqa: S311 - not a secret
    )  # fmt: skip
    return _Round(written, busy, wait)


async def drive(body: Mapping[str, Any], stopped: Stopped, alarms: Alarms, post: Post) -> None:
    """Pass after pass until kopf stops the run's loop."""
    uid = str(body["metadata"]["uid"])
    alarm = alarms.register(uid)
    loop = asyncio.get_running_loop()
    last = _Round(None, 0, pass_timing.Wait(0.0, wakeable=False))
    try:
        while not stopped:
            alarm.clear()  # a change from now on starts another pass
            began = loop.time()
            last = await _one_round(body, stopped, alarms, post, last)
            await pause(alarm, stopped, last.wait, began + pass_timing.MIN_GAP_S)
    finally:
        alarms.forget(uid, alarm)
        provisioning.forget(uid)
