"""A run's loop (`controller/run_loop`): one pass at a time, started by changes (debounced) or by
its pacing, and the timer alone when events are off. The pass itself is replaced
by a recorder here; the operator tests run the real one against an API server."""

from __future__ import annotations

import asyncio
import pickle
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from dbbench_operator.controller import run_loop as driving
from dbbench_operator.controller.alarms import Alarms
from dbbench_operator.controller.concluding import Outcome
from dbbench_operator.controller.run_loop import Written, drive, fresh_status, kept
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.targets import provisioning

UID = "uid-1"


class Stop:
    """kopf's `stopped` flag, as an async daemon sees it."""

    def __init__(self) -> None:
        self.flag = asyncio.Event()

    def __bool__(self) -> bool:
        return self.flag.is_set()

    def wait(self, timeout: float | None = None) -> Awaitable[Any]:
        return self.flag.wait()


class Passes:
    """Records when each pass ran; fails the test if two overlap."""

    def __init__(self, seconds: float = 0.0, status: Mapping[str, Any] | None = None) -> None:
        self.seconds, self.status = seconds, dict(status or {})
        self.started: list[float] = []
        self.running = 0
        self.overlapped = False
        self.lock = threading.Lock()

    def __call__(self, *_: Any) -> tuple[Outcome, Mapping[str, Any] | None]:
        with self.lock:
            self.running += 1
            self.overlapped |= self.running > 1
            self.started.append(time.monotonic())
        time.sleep(self.seconds)
        with self.lock:
            self.running -= 1
        return Outcome(), None


def run_loop(
    monkeypatch: pytest.MonkeyPatch,
    passes: Passes,
    env: dict[str, str],
    script: Callable[[Alarms, float], Awaitable[None]],
) -> float:
    """Drive one run while `script` rings its alarm; returns when the loop began."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(driving, "one_pass", passes)
    body = {"metadata": {"uid": UID, "name": "r", "namespace": "ns"}, "spec": {}, "status": {}}
    alarms = Alarms()

    async def main() -> float:
        stop = Stop()
        began = time.monotonic()
        loop = asyncio.create_task(drive(body, stop, alarms, lambda *_: None))
        await asyncio.sleep(0.05)
        await script(alarms, began)
        stop.flag.set()
        await asyncio.wait_for(loop, 5)  # a stop ends the wait at once
        return began

    return asyncio.run(main())


def among_99_others(monkeypatch: pytest.MonkeyPatch, passes: Passes) -> None:
    """Drive one run for 1.5 s while 99 other runs have loops (the budget is shared)."""
    monkeypatch.setattr(driving, "one_pass", passes)
    alarms = Alarms()
    for i in range(99):
        alarms.register(f"other-{i}")
    body = {"metadata": {"uid": UID, "name": "r", "namespace": "ns"}, "spec": {}, "status": {}}

    async def main() -> None:
        stop = Stop()
        loop = asyncio.create_task(drive(body, stop, alarms, lambda *_: None))
        await asyncio.sleep(1.5)
        stop.flag.set()
        await asyncio.wait_for(loop, 5)

    asyncio.run(main())


EVENTS = {"DBBENCH_EVENTS": "true", "DBBENCH_RECONCILE_INTERVAL": "30"}
TIMER = {"DBBENCH_EVENTS": "false", "DBBENCH_RECONCILE_INTERVAL": "0.4"}


def test_a_burst_of_changes_starts_one_pass_no_sooner_than_a_second_after_the_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    passes = Passes()

    async def burst(alarms: Alarms, _: float) -> None:
        for _ in range(5):
            assert alarms.ring(UID)
            await asyncio.sleep(0.05)
        await asyncio.sleep(2.0)

    run_loop(monkeypatch, passes, EVENTS, burst)
    assert len(passes.started) == 2  # the first pass, then one for the whole burst
    assert passes.started[1] - passes.started[0] >= 0.95


def test_a_change_during_a_pass_starts_exactly_one_more_and_passes_never_overlap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    passes = Passes(seconds=0.5)

    async def during(alarms: Alarms, _: float) -> None:
        alarms.ring(UID)
        alarms.ring(UID)
        await asyncio.sleep(3.0)

    run_loop(monkeypatch, passes, EVENTS, during)
    assert len(passes.started) == 2
    assert not passes.overlapped


def test_without_changes_a_quiet_run_waits_for_its_safety_net(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    passes = Passes()

    async def quiet(_: Alarms, __: float) -> None:
        await asyncio.sleep(1.5)

    run_loop(monkeypatch, passes, EVENTS, quiet)
    assert len(passes.started) == 1


def test_the_loop_shares_the_pass_budget_among_every_run_with_a_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Alone, a run is polled every 0.4 s; with 99 other loops and a budget of 50
    passes a second, every 100 / 50 = 2 s."""
    for key, value in {**TIMER, "DBBENCH_MAX_PASSES_PER_SECOND": "50"}.items():
        monkeypatch.setenv(key, value)
    passes = Passes()
    among_99_others(monkeypatch, passes)
    assert len(passes.started) == 1  # the next one is 2 s away, not 0.4 s


def test_a_pass_that_moved_the_run_to_another_phase_is_followed_at_once_despite_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Admitted with 99 other loops and a budget of 50 passes a second, a run still
    deploys at its next pass a second later, not 100 / 50 = 2 s later (with 1,000
    runs and the default budget: 200 s)."""
    for key, value in {**TIMER, "DBBENCH_MAX_PASSES_PER_SECOND": "50"}.items():
        monkeypatch.setenv(key, value)

    class Admitting(Passes):
        def __call__(self, *args: Any) -> tuple[Outcome, Mapping[str, Any] | None]:
            super().__call__(*args)
            return Outcome(status={"phase": "Provisioning"}), None  # from no phase, then stays

    passes = Admitting()
    among_99_others(monkeypatch, passes)
    # The first pass moved the run (no phase -> Provisioning): the second came 1 s later
    # (stretched, it would have come 2 s later, after the test's 1.5 s).
    assert len(passes.started) == 2, passes.started
    assert 0.9 <= passes.started[1] - passes.started[0] < 1.4


def test_a_pass_still_waiting_for_a_worker_thread_when_the_loop_is_stopped_is_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A deleted run's queued pass would hold its finalizer and re-apply its children."""
    passes = Passes()
    monkeypatch.setattr(driving, "one_pass", passes)
    body = {"metadata": {"uid": UID, "name": "r", "namespace": "ns"}, "spec": {}, "status": {}}
    busy = threading.Event()

    async def main() -> None:
        pool = ThreadPoolExecutor(1)
        monkeypatch.setattr(driving, "PASSES", pool)
        occupied = asyncio.get_running_loop().run_in_executor(pool, busy.wait, 5)  # its only thread
        stop = Stop()
        loop = asyncio.create_task(drive(body, stop, Alarms(), lambda *_: None))
        await asyncio.sleep(0.2)  # its first pass waits for the thread
        stop.flag.set()  # kopf stops the loop (the run was deleted)
        busy.set()
        await asyncio.wait_for(loop, 5)
        await occupied

    asyncio.run(main())
    assert passes.started == []


def test_with_events_off_the_timer_alone_paces_the_run_and_rings_are_ignored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    passes = Passes()

    async def rings(alarms: Alarms, _: float) -> None:
        for _ in range(10):
            alarms.ring(UID)
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.9)

    began = run_loop(monkeypatch, passes, TIMER, rings)
    gaps = [b - a for a, b in zip(passes.started, passes.started[1:], strict=False)]
    assert passes.started[0] - began < 0.3
    assert 4 <= len(passes.started) <= 6, gaps  # every 0.4 s over 2 s
    assert all(gap >= 0.35 for gap in gaps), gaps


def test_a_pass_that_raises_is_retried_at_the_poll_interval_and_the_loop_lives_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Broken(Passes):
        def __call__(self, *args: Any) -> tuple[Outcome, Mapping[str, Any] | None]:
            super().__call__(*args)
            raise RuntimeError("a bug")

    passes = Broken()

    async def wait(_: Alarms, __: float) -> None:
        await asyncio.sleep(1.0)

    run_loop(monkeypatch, passes, TIMER, wait)
    assert len(passes.started) >= 2


def test_the_loop_sees_its_own_last_patch_until_the_watch_has_shown_it() -> None:
    pending, provisioning, running = ({"phase": p} for p in ("Pending", "Provisioning", "Running"))
    written = Written.first(pending, provisioning)
    assert fresh_status(pending, written) == provisioning  # the watch is behind
    assert fresh_status(provisioning, written) == provisioning
    # Two patches ahead of the watch: it shows the first, then the second.
    written = written.then(pending, running)
    assert fresh_status(pending, written) == running
    assert fresh_status(provisioning, written) == running
    assert fresh_status(running, written) == running
    # Someone else's change is seen as it is.
    edited = {"phase": "Pending", "message": "by hand"}
    assert fresh_status(edited, written) == edited
    assert fresh_status(pending, None) == pending


def test_a_loop_keeps_one_status_however_many_patches_it_made() -> None:
    """Every run's loop lives as long as the run: the statuses its patches replaced
    are remembered by fingerprint, not kept (at 1,000 runs, megabytes)."""

    def big(n: int) -> dict[str, Any]:
        return {"phase": "Running", "targets": [{"name": f"t{i}", "n": n, "x": "y" * 200}
                                                for i in range(50)]}  # fmt: skip

    one = len(pickle.dumps(big(0)))
    written = Written.first(big(0), big(1))
    for n in range(2, 10):
        written = written.then(big(n - 1), big(n))
    assert len(pickle.dumps(written)) < 1.5 * one
    assert fresh_status(big(8), written) == big(9)  # the watch one patch behind
    assert fresh_status(big(7), written) == big(9)  # two
    assert fresh_status(big(0), written) == big(0)  # too old to be the loop's: as it is


def test_an_alarm_rings_only_the_loop_that_registered_it() -> None:
    async def main() -> None:
        alarms = Alarms()
        assert not alarms.ring(UID)  # no loop yet: dropped
        old = alarms.register(UID)
        new = alarms.register(UID)  # kopf restarted the run's daemon
        alarms.forget(UID, old)  # the old loop's exit keeps the new one's alarm
        assert alarms.ring(UID)
        assert new.is_set()
        assert not old.is_set()
        alarms.waiting_for_nodes(UID, waiting=True)
        new.clear()
        assert alarms.ring_waiting_for_nodes() == 1
        assert new.is_set()

    asyncio.run(main())


def test_settings_default_to_events_with_a_minute_safety_net() -> None:
    settings = OperatorSettings.from_env({})
    assert settings.events
    assert (settings.reconcile_interval, settings.resync_interval) == (5, 60)
    assert not OperatorSettings.from_env({"DBBENCH_EVENTS": "false"}).events


def test_a_loop_that_ends_drops_what_the_apply_cache_holds_for_its_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(provisioning._applied, (UID, "run"), "digest")
    monkeypatch.setitem(provisioning._applied, ("other-run", "run"), "digest")

    async def quiet(_: Alarms, __: float) -> None:
        await asyncio.sleep(0.1)

    run_loop(monkeypatch, Passes(), EVENTS, quiet)
    assert (UID, "run") not in provisioning._applied
    assert ("other-run", "run") in provisioning._applied


def test_once_the_watch_shows_the_loops_last_write_the_loop_forgets_its_writes() -> None:
    pending, provisioning = {"phase": "Pending"}, {"phase": "Provisioning"}
    written = Written.first(pending, provisioning)
    assert kept(pending, written) is written  # the watch is behind: still needed
    assert kept(provisioning, written) is None  # caught up: the live status is enough
    assert kept(pending, None) is None
