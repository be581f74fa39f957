"""One runner pod of a Kubernetes Job: run the step, hand the results over.

    python -m dbbench_runner job --config /etc/dbbench/step/step.yaml --out /work/out

The pod's index comes from JOB_COMPLETION_INDEX (an Indexed Job); where the
results go from DBBENCH_RESULTS_URL, DBBENCH_RESULTS_TOKEN (the run's token,
from its Secret), DBBENCH_RUN (<namespace>/<run>/<uid>) and DBBENCH_STEP
(<target>/<phase>/<repeat>). Progress is forwarded while the step runs; the
files are uploaded when it ends, whatever the outcome, retried until the
step file's `jobDeadline`, and the exit code is the runner's (6 when the
upload itself failed by then). A one-line reason goes to the
pod's termination message, which the operator shows in the run's condition.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from dbbench_runner.config import ConfigError, StepConfig, load_config
from dbbench_runner.drivers import DatabaseUnreachableError
from dbbench_runner.exporting import Endpoint, run_name, serving, step_labels
from dbbench_runner.live_metrics import LiveTotals
from dbbench_runner.results import read_summary
from dbbench_runner.running import (
    EXIT_CONFIG,
    EXIT_OK,
    EXIT_UNREACHABLE,
    RunFailedError,
    run_step,
)
from dbbench_runner.uploading import (
    Destination,
    ProgressForwarder,
    UploadFailedError,
    upload_results,
)

log = logging.getLogger(__name__)

EXIT_UPLOAD_FAILED = 6
TERMINATION_LOG = Path("/dev/termination-log")
_REQUIRED_ENV = ("DBBENCH_RESULTS_URL", "DBBENCH_RESULTS_TOKEN", "DBBENCH_RUN", "DBBENCH_STEP")


def destination_from(env: Mapping[str, str]) -> Destination:
    missing = [name for name in _REQUIRED_ENV if not env.get(name)]
    if missing:
        raise ConfigError(f"environment: {', '.join(missing)} must be set in a runner Job")
    return Destination(
        url=env["DBBENCH_RESULTS_URL"],
        token=env["DBBENCH_RESULTS_TOKEN"],
        run=env["DBBENCH_RUN"],
        step=env["DBBENCH_STEP"],
        pod=int(env.get("JOB_COMPLETION_INDEX", "0")),
    )


def _run(config: StepConfig, out: Path, live: LiveTotals | None) -> tuple[int, str]:
    try:
        code = run_step(config, out, live)
    except ConfigError as exc:
        return EXIT_CONFIG, f"invalid config: {exc}"
    except DatabaseUnreachableError as exc:
        return EXIT_UNREACHABLE, f"database unreachable: {exc}"
    except RunFailedError as exc:
        return exc.exit_code, str(exc)
    if code != EXIT_OK:
        return code, read_summary(out).reason or f"exit code {code}"
    return code, ""


def run_job(
    config_path: Path,
    out: Path,
    env: Mapping[str, str] | None = None,
    metrics: Endpoint | None = None,
) -> int:
    env = os.environ if env is None else env
    metrics = Endpoint() if metrics is None else metrics
    try:
        destination = destination_from(env)
        config = load_config(config_path, pod_index=destination.pod)
    except (ConfigError, ValueError) as exc:
        return _terminate(EXIT_CONFIG, f"invalid config: {exc}")
    out.mkdir(parents=True, exist_ok=True)
    # The upload runs while /metrics lingers: its time counts toward the linger.
    with serving(metrics, step_labels(config, run_name(destination.run))) as live:
        with ProgressForwarder(destination, out, config.progress_every):
            code, reason = _run(config, out, live)
        if code != EXIT_OK:
            # Whatever was written still goes up: a failed phase's errors are results too.
            (out / "failure.json").write_text(json.dumps({"exitCode": code, "reason": reason}))
        try:
            count = upload_results(destination, out, config.job_deadline)
        except UploadFailedError as exc:
            return _terminate(EXIT_UPLOAD_FAILED, f"results upload failed: {exc}")
    log.info("uploaded %d result files", count)
    return _terminate(code, reason) if code != EXIT_OK else EXIT_OK


def _terminate(code: int, reason: str) -> int:
    print(f"error: {reason}", file=sys.stderr, flush=True)
    with contextlib.suppress(OSError):  # outside Kubernetes there is no termination log
        TERMINATION_LOG.write_text(reason[:3500])
    return code
