"""docs/fields.md accounts for every field of the CRD: one row per leaf under
`spec` (every path `kubectl explain --recursive` prints), saying where it takes
effect and which test observes the effect. A field added to the model without
a row, a row for a field that is gone, or a row naming a test that does not
exist fails here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[4]
CRD = REPO / "crds" / "benchmarkruns.dbbench.io.yaml"
DOC = REPO / "docs" / "fields.md"
_ROW = re.compile(r"^\|\s*`(spec[^`]*)`\s*\|(.*)\|\s*$")
_TEST = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def crd_leaves() -> list[str]:
    """Paths of the spec's leaves: `spec.a.b`, lists as `[]`, maps and free-form
    objects (settings, nodeSelector, affinity, resources) as one leaf each."""
    crd = yaml.safe_load(CRD.read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    leaves: list[str] = []

    def walk(node: dict[str, Any], path: str) -> None:
        if node.get("type") == "array" and "items" in node:
            walk(node["items"], f"{path}[]")
            return
        properties = node.get("properties")
        if not properties:
            leaves.append(path)
            return
        for name, child in properties.items():
            walk(child, f"{path}.{name}")

    walk(schema, "spec")
    return leaves


def doc_rows() -> dict[str, str]:
    rows: dict[str, str] = {}
    for line in DOC.read_text().splitlines():
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


def test_every_row_says_where_and_names_tests_that_exist() -> None:
    rows = doc_rows()
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
