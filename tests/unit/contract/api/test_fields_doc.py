"""docs/fields.md accounts for every field of both CRDs: one row per leaf under
`spec` (every path `kubectl explain --recursive` prints), saying where it takes
effect and which test observes the effect. A field added to the model without
a row, a row for a field that is gone, or a row naming a test that does not
exist fails here. The BenchmarkSchedule's rows follow its own heading
(`SCHEDULE_HEADING`); its `spec.template.spec` is one leaf, the run's spec above."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[4]
CRD = REPO / "crds" / "benchmarkruns.dbbench.io.yaml"
SCHEDULE_CRD = REPO / "crds" / "benchmarkschedules.dbbench.io.yaml"
SCHEDULE_HEADING = "# Every field of a BenchmarkSchedule"
DOC = REPO / "docs" / "fields.md"
_ROW = re.compile(r"^\|\s*`(spec[^`]*)`\s*\|(.*)\|\s*$")
_TEST = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def crd_leaves(crd_file: Path = CRD, whole: frozenset[str] = frozenset()) -> list[str]:
    """Paths of the spec's leaves: `spec.a.b`, lists as `[]`, maps and free-form
    objects (settings, nodeSelector, affinity, resources) as one leaf each, and
    the paths in `whole` as one leaf each."""
    crd = yaml.safe_load(crd_file.read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    leaves: list[str] = []

    def walk(node: dict[str, Any], path: str) -> None:
        if node.get("type") == "array" and "items" in node:
            walk(node["items"], f"{path}[]")
            return
        properties = node.get("properties")
        if not properties or path in whole:
            leaves.append(path)
            return
        for name, child in properties.items():
            walk(child, f"{path}.{name}")

    walk(schema, "spec")
    return leaves


def doc_rows(schedule: bool = False) -> dict[str, str]:
    """The run's rows (before the schedule's heading), or the schedule's (after it)."""
    rows: dict[str, str] = {}
    text = DOC.read_text()
    assert SCHEDULE_HEADING in text, f"docs/fields.md: no heading {SCHEDULE_HEADING!r}"
    before, _, after = text.partition(SCHEDULE_HEADING)
    for line in (after if schedule else before).splitlines():
        match = _ROW.match(line)
        if match:
            assert match.group(1) not in rows, f"docs/fields.md: {match.group(1)} listed twice"
            rows[match.group(1)] = match.group(2)
    return rows


def test_every_crd_leaf_has_a_row_and_every_row_a_leaf() -> None:
    leaves, rows = set(crd_leaves()), doc_rows()
    missing = sorted(leaves - set(rows))
    assert not missing, f"docs/fields.md has no row for: {', '.join(missing)}"
    stale = sorted(set(rows) - leaves)
    assert not stale, f"docs/fields.md lists fields the CRD does not have: {', '.join(stale)}"


def test_every_schedule_leaf_has_a_row_and_every_row_a_leaf() -> None:
    leaves = set(crd_leaves(SCHEDULE_CRD, frozenset({"spec.template.spec"})))
    rows = doc_rows(schedule=True)
    missing, stale = sorted(leaves - set(rows)), sorted(set(rows) - leaves)
    assert not missing, f"docs/fields.md has no schedule row for: {missing}"
    assert not stale, f"docs/fields.md has schedule rows of no field: {stale}"


@pytest.mark.parametrize("schedule", [False, True], ids=["run", "schedule"])
def test_every_row_says_where_and_names_tests_that_exist(schedule: bool) -> None:
    rows = doc_rows(schedule)
    assert rows, "docs/fields.md has no field rows"
    for path, cells in rows.items():
        where, _, tests = cells.rpartition("|")
        assert where.strip(), f"{path}: say where it takes effect"
        named = _TEST.findall(tests)
        assert named, f"{path}: name the test that observes the effect (`tests/x.py::test_y`)"
        for file, name in named:
            source = REPO / file
            assert source.is_file(), f"{path}: {file} does not exist"
            assert re.search(rf"\bdef {name}\b", source.read_text()), f"{path}: no {file}::{name}"
