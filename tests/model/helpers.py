"""Paths and loaders shared by the model tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
INVALID = sorted((REPO / "tests" / "data" / "invalid").glob("*.yaml"))
CRD_FILE = REPO / "crds" / "benchmarkruns.dbbench.io.yaml"


def load(path: Path) -> dict[str, Any]:
    body = yaml.safe_load(path.read_text())
    assert isinstance(body, dict)
    return body


def expected_message(path: Path) -> str:
    """The substring after ``# expect:`` on an invalid manifest's first line."""
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect: "), f"{path.name}: first line must be '# expect: ...'"
    return first.removeprefix("# expect: ").strip()


def gen_crd_module() -> ModuleType:
    """hack/gen_crd.py, imported from its path (hack/ is not a package)."""
    spec = importlib.util.spec_from_file_location("gen_crd", REPO / "hack" / "gen_crd.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
