"""dbbench: check BenchmarkRun manifests before applying them, and read their results.

  dbbench list [-A]                      runs with phase and progress
  dbbench get RUN                        a run's results per target, phase and repeat
  dbbench fetch RUN --out DIR            copy the run's files from the results browser
  dbbench report DIR                     write DIR/report.html from fetched results
  dbbench compare RUN_OR_DIR... [--html F]
                                         one table: ops/s and p99 side by side, steps
                                         lined up by what they did (type, idMode, batch
                                         size...), relative differences to the first,
                                         whether repeats say it is noise, and the modes
                                         of a workload run with several idModes ranked
  dbbench wait RUN [--timeout 1h]        block until the run ends; print its phase, each
                                         expectation's outcome and the change-point
                                         verdict; exit 0 only when it Succeeded and no
                                         expectation was missed (1 failed, 2 expectation
                                         missed, 3 timed out, 4 run unreadable)
  dbbench history SERIES [-n NS]         a series' runs (label dbbench.io/series=SERIES):
                                         ops/s and p99 per run, target, phase and
                                         operation type, the change points found and
                                         the newest run's verdict
  dbbench check FILE... [--results-claim C]
                                         every admission check, offline (no cluster):
                                         the CRD's schema and CEL rules, then the
                                         operator's; OK or each refusal with its field
                                         path, exit 1 when any manifest is refused

Installed as `dbbench` and as `kubectl-dbbench` (so `kubectl dbbench ...` works).
Results are read from the chart's results browser through the Kubernetes API
server (its service proxy, with your kubeconfig and RBAC): nothing to enable or
forward. The Service is found by its label, cluster-wide when you may list
Services everywhere, else in your namespace and dbbench-system; name the chart's
namespace with --results-namespace (DBBENCH_RESULTS_NAMESPACE), or give a
browser's address with --url (DBBENCH_URL) to bypass the API server.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

from pydantic import ValidationError

from dbbench_cli import tables
from dbbench_cli.fetching import fetch, results_claim, run_prefix
from dbbench_cli.kube import Api, CliError, Run, connect, finished_run, get_run, list_runs
from dbbench_cli.results_access import Endpoint, UrlEndpoint, locate
from dbbench_cli.waiting import UNREADABLE, wait
from dbbench_contract.durations import Duration
from dbbench_contract.history import SeriesHistory
from dbbench_report import ResultsError, read_run, write_report
from dbbench_report.compare_page import compare_page
from dbbench_report.comparing import compare, table


def _common() -> argparse.ArgumentParser:
    """Options taken before or after the command: `dbbench -n x get r`, `dbbench get r -n x`."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--kubeconfig", default=argparse.SUPPRESS,
                        help="default: $KUBECONFIG, ~/.kube/config")  # fmt: skip
    common.add_argument("-n", "--namespace", default=argparse.SUPPRESS,
                        help="default: the context's")  # fmt: skip
    common.add_argument(
        "--url", default=argparse.SUPPRESS,
        help="a results browser's address (default $DBBENCH_URL; without one, the "
             "browser's Service through the Kubernetes API server)",
    )  # fmt: skip
    common.add_argument(
        "--results-namespace", default=argparse.SUPPRESS,
        help="the chart's namespace, where its results browser runs "
             "(default $DBBENCH_RESULTS_NAMESPACE; found by label otherwise)",
    )  # fmt: skip
    return common


def _parser() -> argparse.ArgumentParser:
    common = _common()
    parser = argparse.ArgumentParser(
        prog="dbbench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )  # fmt: skip
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="runs with phase and progress", parents=[common])
    listing.add_argument("-A", "--all-namespaces", action="store_true")
    commands.add_parser("get", help="a run's results", parents=[common]).add_argument("run")
    fetching = commands.add_parser("fetch", help="copy a finished run's files", parents=[common])
    fetching.add_argument("run")
    fetching.add_argument("--out", type=Path, required=True)
    reporting = commands.add_parser("report", help="write DIR/report.html", parents=[common])
    reporting.add_argument("dir", type=Path)
    comparing = commands.add_parser("compare", help="compare runs or fetched directories",
                                    parents=[common])  # fmt: skip
    comparing.add_argument("runs", nargs="+", metavar="RUN_OR_DIR")
    comparing.add_argument("--html", type=Path, metavar="FILE",
                           help="also write the comparison as a page with charts")  # fmt: skip
    waiting = commands.add_parser(
        "wait", help="block until a run ends; exit non-zero when it failed or missed an "
        "expectation", parents=[common],
    )  # fmt: skip
    waiting.add_argument("run")
    waiting.add_argument(
        "--timeout", default="24h", type=_seconds,
        help="give up after this long, e.g. 90m or 1h (default 24h): exit 3",
    )  # fmt: skip
    history = commands.add_parser("history", help="a series' runs and change points",
                                  parents=[common])  # fmt: skip
    history.add_argument("series", help="the dbbench.io/series label's value")
    checking = commands.add_parser(
        "check", help="admission checks of manifests, offline (no cluster)"
    )
    checking.add_argument("files", nargs="+", metavar="FILE", help="YAML manifests ('-': stdin)")
    checking.add_argument(
        "--results-claim", default="dbbench-results", metavar="CLAIM",
        help="the chart's results.claimName, which the operator insists on (default "
             "dbbench-results, the chart's default)",
    )  # fmt: skip
    return parser


def _seconds(text: str) -> float:
    try:
        return Duration.parse(text).seconds
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def parse(argv: list[str] | None) -> argparse.Namespace:
    args = _parser().parse_args(argv)
    args.kubeconfig = getattr(args, "kubeconfig", None)
    args.namespace = getattr(args, "namespace", None)
    args.url = getattr(args, "url", None) or os.environ.get("DBBENCH_URL") or None
    args.results_namespace = getattr(args, "results_namespace", None) or os.environ.get(
        "DBBENCH_RESULTS_NAMESPACE"
    )
    return args


def endpoint(args: argparse.Namespace, api: Api | None, run: Run | None) -> Endpoint:
    """--url when given, else the results browser's Service through the API server
    (the one holding the run's claim, when there is a run)."""
    if args.url:
        if not args.url.startswith(("http://", "https://")):
            raise CliError(f"--url {args.url!r}: give http://HOST:PORT of the results browser")
        return UrlEndpoint(args.url)
    assert api is not None
    return locate(api, None if run is None else results_claim(run), args.results_namespace)


def _history(args: argparse.Namespace) -> str:
    """The series from the results browser (it answers from the service's index)."""
    api = None
    if not (args.url and args.namespace):  # the context's namespace, or the browser's Service
        api = connect(args.kubeconfig, args.namespace)
    namespace = args.namespace or (api.namespace if api else "default")
    path = f"api/series/{quote(namespace)}/{quote(args.series)}"
    data = endpoint(args, api, None).get(path)
    try:
        return tables.history_table(SeriesHistory.from_json(data))
    except ValidationError as exc:
        raise CliError(f"{path}: the browser's answer is not a series' history: {exc}") from exc


def _fetch(args: argparse.Namespace, api: Api, name: str, out: Path) -> Path:
    run = finished_run(api, name)
    fetch(endpoint(args, api, run), run_prefix(run), out)
    return out


def _compare(args: argparse.Namespace) -> str:
    if len(args.runs) < 2:
        raise CliError("compare needs at least two runs or directories")
    api: Api | None = None
    with tempfile.TemporaryDirectory(prefix="dbbench-") as scratch:
        directories = []
        for index, item in enumerate(args.runs):
            path = Path(item)
            if path.is_dir():
                directories.append(path)
                continue
            if os.sep in item or item.startswith("."):
                raise CliError(f"{item}: no such directory")
            api = api or connect(args.kubeconfig, args.namespace)
            directories.append(_fetch(args, api, item, Path(scratch) / str(index)))
        runs = [read_run(d) for d in directories]
        rows = compare(runs)
        out = table(runs, rows)
        if args.html is not None:
            args.html.write_text(compare_page(runs, rows), encoding="utf-8")
            out += f"wrote {args.html}\n"
        return out


def run(args: argparse.Namespace) -> str:
    if args.command == "report":
        return f"wrote {write_report(args.dir)}\n"
    if args.command == "compare":
        return _compare(args)
    if args.command == "history":
        return _history(args)
    api = connect(args.kubeconfig, args.namespace)
    if args.command == "list":
        return tables.runs_table(list_runs(api, args.all_namespaces))
    if args.command == "get":
        return tables.run_table(get_run(api, args.run))
    out = _fetch(args, api, args.run, args.out)
    return f"fetched {args.run} into {out}\n"


def _wait(args: argparse.Namespace) -> int:
    """`dbbench wait`: its own exit codes (dbbench_cli.waiting)."""
    try:
        outcome = wait(connect(args.kubeconfig, args.namespace), args.run, args.timeout)
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return UNREADABLE
    sys.stdout.write(outcome.text)
    return outcome.code


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.command == "check":
        # The admission checks load a CEL evaluator no other command needs.
        from dbbench_cli.checking import check_files  # noqa: PLC0415

        out, status = check_files(args.files, args.results_claim)
        sys.stdout.write(out)
        return status
    if args.command == "wait":
        return _wait(args)
    try:
        sys.stdout.write(run(args))
    except (CliError, ResultsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
