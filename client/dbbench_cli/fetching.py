"""Copy a run's files from the results browser (read-only, `kubectl port-forward`)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path, PurePosixPath
from typing import Any

from dbbench_cli.kube import CliError
from dbbench_contract.layout import SUMMARY

TIMEOUT_S = 60


def _get(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as answer:  # noqa: S310 - http(s) only
            data: bytes = answer.read()
            return data
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace").strip()
        raise CliError(f"{url}: {exc.code} {detail}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise CliError(
            f"cannot reach the results browser at {url}: {exc}. Forward it first: "
            "kubectl -n <release namespace> port-forward svc/<release>-dbbench-browser 8081"
        ) from exc


def run_prefix(run: dict[str, Any]) -> str:
    meta = run["metadata"]
    return f"{meta['namespace']}/{meta['name']}/{meta['uid']}"


def fetch(base_url: str, prefix: str, out: Path) -> list[str]:
    """Download every file of the run `prefix` (<ns>/<run>/<uid>) into `out`."""
    if not base_url.startswith(("http://", "https://")):
        raise CliError(f"--url {base_url!r}: give http://HOST:PORT of the results browser")
    base = base_url.rstrip("/")
    files = json.loads(_get(f"{base}/api/runs/{prefix}/files"))
    if SUMMARY not in files:
        raise CliError(f"run {prefix} has no summary.json yet: it has not finished")
    out.mkdir(parents=True, exist_ok=True)
    for name in files:
        relative = PurePosixPath(name)
        if relative.is_absolute() or ".." in relative.parts:
            raise CliError(f"the browser listed an unsafe path {name!r}; refusing")
        target = out.joinpath(*relative.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(_get(f"{base}/runs/{prefix}/files/{name}"))
    return list(files)
