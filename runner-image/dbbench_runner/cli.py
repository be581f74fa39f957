"""python -m dbbench_runner run --config step.yaml --out DIR | merge --out DIR IN_DIR...
| job --config step.yaml --out DIR   (a pod of a Kubernetes Job; see dbbench_runner.job)

--debug (or DBBENCH_DEBUG=1) also shows third-party libraries' log lines
(the database connectors'); without it they show warnings and errors only.
--metrics-port (or DBBENCH_RUNNER_METRICS_PORT, set by the operator in a Job) serves
live metrics in the Prometheus text format at /metrics while the step runs,
and --metrics-linger (DBBENCH_RUNNER_METRICS_LINGER) seconds after it (docs/metrics.md).

Exit codes: 0 ok, 2 invalid config, 3 error rate above maxErrorRate,
4 database unreachable, 5 a worker crashed, 6 results upload failed (job),
7 bad input in dataset.source (a missing file, a row that does not load).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from dbbench_runner.config import ConfigError, load_config
from dbbench_runner.drivers import DatabaseUnreachableError
from dbbench_runner.exporting import (
    METRICS_ADDRESS_ENV,
    METRICS_LINGER_ENV,
    METRICS_PORT_ENV,
    Endpoint,
    serving,
    step_labels,
)
from dbbench_runner.logs import DEBUG_ENV, configure_logging
from dbbench_runner.merge import merge
from dbbench_runner.running import EXIT_CONFIG, EXIT_UNREACHABLE, RunFailedError, run_step


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dbbench_runner", description=__doc__)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug", action="store_true", help=f"log every library's lines too (or {DEBUG_ENV}=1)"
    )
    metrics = argparse.ArgumentParser(add_help=False)
    metrics.add_argument(
        "--metrics-port",
        type=int,
        default=int(os.environ.get(METRICS_PORT_ENV) or 0),
        help=f"serve /metrics on this port (0: none; or {METRICS_PORT_ENV})",
    )
    metrics.add_argument(
        "--metrics-linger",
        type=float,
        default=float(os.environ.get(METRICS_LINGER_ENV) or 0),
        help="keep serving this many seconds after the phase, for a last scrape "
        f"(or {METRICS_LINGER_ENV})",
    )
    metrics.add_argument(
        "--metrics-address",
        default=os.environ.get(METRICS_ADDRESS_ENV) or "0.0.0.0",  # noqa: S104 - the pod's port
        help=f"address /metrics binds (default: all; or {METRICS_ADDRESS_ENV})",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "run", help="run one step against one target", parents=[common, metrics]
    )
    run.add_argument("--config", type=Path, required=True)
    run.add_argument("--out", type=Path, required=True)
    job = commands.add_parser(
        "job", help="run one step as a pod of a Kubernetes Job", parents=[common, metrics]
    )
    job.add_argument("--config", type=Path, required=True)
    job.add_argument("--out", type=Path, required=True)
    combine = commands.add_parser("merge", help="merge pods' result directories", parents=[common])
    combine.add_argument("--out", type=Path, required=True)
    combine.add_argument("inputs", type=Path, nargs="+")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging(debug=args.debug)
    if args.command == "merge":
        summary = merge(args.out, list(args.inputs))
        print(f"merged {len(args.inputs)} result directories: {summary.operations} ops")
        return 0
    endpoint = Endpoint(args.metrics_port, args.metrics_linger, args.metrics_address)
    if args.command == "job":
        from dbbench_runner.job import run_job  # noqa: PLC0415 - only pods in a Job need it

        return run_job(args.config, args.out, metrics=endpoint)
    return _run(args.config, args.out, endpoint)


def _run(config_path: Path, out: Path, endpoint: Endpoint) -> int:
    try:
        config = load_config(config_path)
        with serving(endpoint, step_labels(config)) as live:
            return run_step(config, out, live)
    except ConfigError as exc:  # also found when running, e.g. a driver not installed
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except DatabaseUnreachableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except RunFailedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
