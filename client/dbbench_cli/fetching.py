"""Copy a finished run's files from the results browser: its file list, then
every file in one tar.gz stream (`GET /api/runs/<prefix>/archive`)."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path, PurePosixPath
from typing import Any

from dbbench_cli.kube import CliError, Run
from dbbench_cli.results_access import Endpoint
from dbbench_contract.layout import SUMMARY


def run_prefix(run: Run) -> str:
    return f"{run.namespace}/{run.name}/{run.uid}"


def results_claim(run: Run) -> str | None:
    """The claim a run's results are on: the first segment of status.resultsPath."""
    path = run.status.results_path or ""
    return path.split("/", 1)[0] or None


def _safe(name: str) -> PurePosixPath:
    relative = PurePosixPath(name)
    if not name or relative.is_absolute() or ".." in relative.parts:
        raise CliError(f"the browser sent an unsafe path {name!r}; refusing")
    return relative


def _extract(stream: Any, out: Path) -> set[str]:
    """Regular files only, each under `out`; anything else is refused."""
    written: set[str] = set()
    try:
        with tarfile.open(fileobj=stream, mode="r|gz") as archive:
            for member in archive:
                if not member.isfile():
                    raise CliError(f"the browser's archive holds {member.name!r}, not a file")
                target = out.joinpath(*_safe(member.name).parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                source = archive.extractfile(member)
                assert source is not None  # a regular file
                with target.open("wb") as sink:
                    shutil.copyfileobj(source, sink)
                written.add(member.name)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise CliError(f"the results archive broke off: {exc}; fetch again") from exc
    return written


def fetch(endpoint: Endpoint, prefix: str, out: Path) -> list[str]:
    """Download every file of the run `prefix` (<ns>/<run>/<uid>) into `out`."""
    files = json.loads(endpoint.get(f"api/runs/{prefix}/files"))
    if SUMMARY not in files:
        raise CliError(f"run {prefix} has no summary.json yet: it has not finished")
    for name in files:
        _safe(name)
    out.mkdir(parents=True, exist_ok=True)
    with endpoint.stream(f"api/runs/{prefix}/archive") as stream:
        written = _extract(stream, out)
    missing = sorted(set(files) - written)
    if missing:
        raise CliError(f"{endpoint.description} sent no {', '.join(missing[:5])}; fetch again")
    return sorted(written)
