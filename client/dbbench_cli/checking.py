"""`dbbench check FILE...`: every admission check of BenchmarkRun (and BenchmarkSchedule)
manifests, with
no cluster: what `kubectl apply` (the CRD's schema and CEL rules) and then the
operator (its semantic checks) would refuse, with their messages and field
paths. Made for a user's own CI, before applying.

The checks themselves are the API model's (`dbbench_contract.api.admission.
check_manifest`, the one import the CLI makes of the operator's package, see
.importlinter); this module reads files and prints.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from dbbench_contract.api.admission import DEFAULT_RESULTS_CLAIM, check_manifest

KIND = "BenchmarkRun"
KINDS = (KIND, "BenchmarkSchedule")


def _documents(path: str) -> list[Any]:
    text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    return [doc for doc in yaml.safe_load_all(text) if doc is not None]


def check_file(path: str, results_claim: str = DEFAULT_RESULTS_CLAIM) -> tuple[list[str], bool]:
    """(lines to print, whether every BenchmarkRun and BenchmarkSchedule in the file
    would be admitted)."""
    try:
        docs = _documents(path)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return [f"{path}: error: {' '.join(str(exc).split())}"], False
    runs = [(i, d) for i, d in enumerate(docs) if not isinstance(d, dict) or d.get("kind") in KINDS]
    if not runs:
        return [f"{path}: error: no {KIND} in the file"], False
    lines, ok = [], True
    for index, doc in runs:
        label = path if len(docs) == 1 else f"{path}#{index + 1}"
        problems = check_manifest(doc, results_claim)
        if not problems:
            lines.append(f"{label}: OK")
        ok = ok and not problems
        lines.extend(f"{label}: {problem.field}: {problem.message}" for problem in problems)
    return lines, ok


def check_files(
    paths: Iterable[str], results_claim: str = DEFAULT_RESULTS_CLAIM
) -> tuple[str, int]:
    """The report of every file and the exit status: 0 when all would be admitted."""
    out, refused, files = [], 0, 0
    for path in paths:
        lines, ok = check_file(path, results_claim)
        out.extend(lines)
        files += 1
        refused += not ok
    out.append(f"checked {files} file(s): {files - refused} OK, {refused} refused")
    return "\n".join(out) + "\n", 1 if refused else 0
