"""A deadline on a whole reconcile pass, so that no stuck call holds a run.

Every API call and database connection has its own timeout, but a pass makes
many of them; and each run's loop runs one pass at a time (`controller/run_loop`), so a
pass that never returns would stop that run's clock (spec.timeout is checked
inside passes). `call_within` runs a pass in its own thread and stops
waiting at the deadline. Python cannot stop a thread: the abandoned pass
keeps its thread until its current call returns, but every later API call
in it refuses at once (`check`), and every API call's timeout is cut to what
is left of the pass (`remaining`), so it cannot act after the run has been
failed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
_local = threading.local()
# Once abandoned, how long to wait for the thread to notice before giving up on it.
_JOIN_SLACK_S = 0.2


class PassDeadlineError(TimeoutError):
    """A pass ran past its deadline; the message says how long it was given."""


def remaining() -> float | None:
    """Seconds left to the current thread's pass deadline (None: no deadline)."""
    deadline: float | None = getattr(_local, "deadline", None)
    return None if deadline is None else deadline - time.monotonic()


def check(what: str) -> None:
    """Refuse to start `what` once this thread's pass is past its deadline."""
    left = remaining()
    if left is not None and left <= 0:
        raise PassDeadlineError(f"pass deadline passed before {what}")


def call_within(fn: Callable[[], T], seconds: float, name: str) -> T:
    """fn() in a daemon thread with a deadline; PassDeadlineError when it is late.

    Nested calls keep the earlier of their own and the caller's deadline.
    """
    results: list[T] = []
    errors: list[BaseException] = []
    deadline = time.monotonic() + seconds
    outer = getattr(_local, "deadline", None)
    if outer is not None:
        deadline = min(deadline, outer)

    def body() -> None:
        _local.deadline = deadline
        try:
            results.append(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            errors.append(exc)

    worker = threading.Thread(target=body, name=f"pass-{name}", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()) + _JOIN_SLACK_S)
    if worker.is_alive():
        raise PassDeadlineError(f"the pass did not finish within {seconds:.0f}s")
    if errors:
        raise errors[0]
    return results[0]
