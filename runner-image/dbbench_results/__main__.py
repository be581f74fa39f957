"""python -m dbbench_results --root DIR --key-file FILE [--host H] [--port P]
[--metrics-port M] [--significance P] [--min-runs N] [limits]

--significance and --min-runs judge each run against its series (change
points, docs/results.md): the chart values results.history.significance and
results.history.minRuns. The series index is SQLite on the claim, or the
PostgreSQL database named by the DSN in DBBENCH_RESULTS_HISTORY_DSN (the chart
sets it from results.history.postgres.existingSecret; never a flag, which `ps`
would show).

--metrics-port serves /metrics (uploads, merges, the claim's usage) apart
from the API (docs/metrics.md); 0, the default, serves none.

Each limit has a chart value (docs/results.md) and an environment variable
(DBBENCH_RESULTS_<NAME>) for running it by hand.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
from pathlib import Path
from types import FrameType

from dbbench_results.history.answer import add_judging_flags, history_index, judging_from
from dbbench_results.limits import Limits
from dbbench_results.reports import stop_rendering
from dbbench_results.server import Config, make_server
from dbbench_results.store import Store

DEFAULTS = Limits()
MIB = 1024 * 1024


# flag, type, default, the chart value that sets it
_LIMITS: tuple[tuple[str, type[int] | type[float], float, str], ...] = (
    ("max-upload-mb", int, DEFAULTS.max_upload_bytes // MIB, "results.maxUploadMB"),
    ("run-quota-mb", int, DEFAULTS.run_quota_bytes // MIB, "results.runQuotaMB"),
    ("min-free-mb", int, DEFAULTS.min_free_bytes // MIB, "results.minFreeMB"),
    ("workers", int, DEFAULTS.workers, "results.workers"),
    ("queue", int, DEFAULTS.queue, "results.queue"),
    ("request-timeout", float, DEFAULTS.request_timeout_s, "results.requestTimeoutSeconds"),
    ("min-rate-kib", int, DEFAULTS.min_rate_bytes_s // 1024, "results.minUploadKiBPerSecond"),
)


def _env_default(name: str, default: float) -> float:
    return float(os.environ.get(f"DBBENCH_RESULTS_{name}", default))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dbbench_results", description=__doc__)
    parser.add_argument("--root", type=Path, required=True, help="results root (the claim)")
    parser.add_argument("--key-file", type=Path, required=True, help="file holding the service key")
    parser.add_argument("--host", default="0.0.0.0")  # noqa: S104 - a Service fronts it
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=int(_env_default("METRICS_PORT", 0)),
        help="serve /metrics on this port (0: none)",
    )
    parser.add_argument(
        "--reports",
        choices=("upload", "view"),
        default=os.environ.get("DBBENCH_RESULTS_REPORTS", "upload"),
        help="when a run's report.html is drawn: `upload` (when its summary.json "
        "arrives, in the background) or `view` (never by this service: the browser "
        "draws it when the run is opened) (results.reports)",
    )
    add_judging_flags(parser)
    for flag, kind, default, chart_value in _LIMITS:
        env = flag.upper().replace("-", "_")
        parser.add_argument(
            f"--{flag}", type=kind, default=kind(_env_default(env, default)), help=chart_value
        )
    return parser


def limits_from(args: argparse.Namespace) -> Limits:
    for name in ("max_upload_mb", "run_quota_mb", "workers", "queue", "min_rate_kib"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')} must be at least 1")
    if args.min_free_mb < 0 or args.request_timeout <= 0:
        raise SystemExit("--min-free-mb must be >= 0 and --request-timeout > 0")
    return Limits(
        max_upload_bytes=args.max_upload_mb * MIB,
        run_quota_bytes=args.run_quota_mb * MIB,
        min_free_bytes=args.min_free_mb * MIB,
        workers=args.workers,
        queue=args.queue,
        request_timeout_s=args.request_timeout,
        min_rate_bytes_s=args.min_rate_kib * 1024,
    )


def _warm(config: Config) -> None:
    assert config.history is not None
    try:
        config.history.series("", "")
    except Exception:  # the index is a cache: uploads and the files go on without it
        logging.exception("history index not usable at start")


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args = _parser().parse_args(argv)
    key = args.key_file.read_bytes().strip()
    if len(key) < 16:
        raise SystemExit(f"{args.key_file}: the service key must be at least 16 bytes")
    store = Store(args.root)
    config = Config(store, key, limits_from(args), history=history_index(store.root),
                    judging=judging_from(args),
                    reports_at_upload=args.reports == "upload")  # fmt: skip
    server = make_server(args.host, args.port, config)
    # Check (and, missing or damaged, build) the series index now rather than in
    # the first summary's upload: on a large claim a build reads every run.
    threading.Thread(target=_warm, args=(config,), name="history-index", daemon=True).start()
    if args.metrics_port:
        config.metrics.serve(args.host, args.metrics_port)

    def stop(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    # The bound port, not the flag: with --port 0 the log is where to read it.
    logging.info("serving %s on %s:%d, %s, %s, reports at %s", config.store.root, args.host,
                 server.server_address[1], config.limits, config.judging, args.reports)  # fmt: skip
    server.serve_forever()
    server.server_close()
    stop_rendering()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
