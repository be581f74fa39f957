"""Logging: the runner's own INFO lines; other libraries' only from WARNING.

Connectors log at INFO on every connection (mysql.connector names its
plugins); mixed into the progress lines they hide what the runner says.
--debug or DBBENCH_DEBUG=1 shows everything, in worker processes too (they
get the switch in their plan: workers.WorkerPlan.debug).
"""

from __future__ import annotations

import logging
import os

DEBUG_ENV = "DBBENCH_DEBUG"


def debug_requested() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def configure_logging(*, debug: bool = False) -> None:
    if debug:
        os.environ[DEBUG_ENV] = "1"  # what debug_requested() tells worker plans
    debug = debug or debug_requested()
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logging.getLogger("dbbench_runner").setLevel(logging.DEBUG if debug else logging.INFO)
