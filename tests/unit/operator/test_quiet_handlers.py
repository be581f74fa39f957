"""kopf's per-event success lines of the watch handlers are dropped (their cost grew
with nodes and runs), every other line of kopf's object logger is kept."""

from __future__ import annotations

import logging

import kopf
import pytest

from dbbench_operator import handlers


def test_configure_drops_the_watch_handlers_success_lines_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    objects = logging.getLogger("kopf.objects")
    before = list(objects.filters)
    try:
        handlers.configure(settings=kopf.OperatorSettings())
        handlers.configure(settings=kopf.OperatorSettings())  # a restart adds no second filter
        assert sum(isinstance(f, handlers.QuietWatchHandlers) for f in objects.filters) == 1
        with caplog.at_level(logging.INFO, logger="kopf.objects"):
            for name in ("run_seen", "node_seen", "child_changed", "drive_run", "run_deleted"):
                objects.info(f"Handler {name!r} succeeded.")
            objects.error("Handler 'run_seen' failed with an exception. Will retry.")
    finally:
        objects.filters[:] = before
    assert [r.getMessage() for r in caplog.records] == [
        "Handler 'drive_run' succeeded.",
        "Handler 'run_deleted' succeeded.",
        "Handler 'run_seen' failed with an exception. Will retry.",
    ]
