"""The chart's interface: documented values, a schema that rejects bad ones,
and a package without the repository's sources."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.helm import CHART, CRD_FILE, helm, template

VALUES_FILE = CHART / "values.yaml"
SCHEMA = json.loads((CHART / "values.schema.json").read_text())
DOCS = CHART / "docs" / "chart.md"
PARAM = re.compile(r"^\s*## @param (\S+) \S")


def documented_params() -> list[str]:
    return [m.group(1) for line in VALUES_FILE.read_text().splitlines() if (m := PARAM.match(line))]


def leaf_paths(node: Any, prefix: str = "") -> list[str]:
    """Dotted paths of values.yaml; maps with content are walked into."""
    if isinstance(node, dict) and node:
        return [p for k, v in node.items() for p in leaf_paths(v, f"{prefix}{k}.")]
    return [prefix.rstrip(".")]


def test_every_value_is_documented_above_its_key() -> None:
    params = documented_params()
    assert len(params) == len(set(params)), "a value is documented twice"
    values = yaml.safe_load(VALUES_FILE.read_text())
    paths = leaf_paths(values)
    for path in paths:
        parts = path.split(".")
        ancestors = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
        assert ancestors & set(params), f"{path} has no `## @param` comment"
    for param in params:
        node: Any = values
        for part in param.split("."):
            assert isinstance(node, dict), f"@param {param} names no value"
            assert part in node, f"@param {param} names no value"
            node = node[part]
    # The `## @param` line sits directly above its own key.
    lines = VALUES_FILE.read_text().splitlines()
    for i, line in enumerate(lines):
        if m := PARAM.match(line):
            key = m.group(1).rsplit(".", 1)[-1]
            following = next(x for x in lines[i + 1 :] if not x.lstrip().startswith("##"))
            assert following.strip().startswith(f"{key}:"), (m.group(1), following)


def test_docs_table_lists_every_value() -> None:
    text = DOCS.read_text()
    params = documented_params()
    assert params, f"no documented value found in {VALUES_FILE}"
    for param in params:
        assert f"| `{param}` |" in text, f"docs/chart.md does not list {param}"


def schema_gaps(values: Any, schema: dict[str, Any], path: str) -> list[str]:
    if "$ref" in schema:
        schema = SCHEMA["definitions"][schema["$ref"].rsplit("/", 1)[1]]
    gaps = [] if "type" in schema else [f"{path or '<root>'}: no type"]
    if isinstance(values, dict) and "properties" in schema:
        for key, value in values.items():
            if key not in schema["properties"]:
                gaps.append(f"{path}{key}: not in schema")
            else:
                gaps += schema_gaps(value, schema["properties"][key], f"{path}{key}.")
    return gaps


def test_schema_types_every_value() -> None:
    values = yaml.safe_load(VALUES_FILE.read_text())
    assert schema_gaps(values, SCHEMA, "") == []
    assert SCHEMA["$schema"] == "http://json-schema.org/draft-07/schema#"


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"watchNamespaces": "team-a"}, "watchNamespaces"),
        ({"watchNamespaces": ["Team_A"]}, "watchNamespaces"),
        ({"watchNamespaces": ["team-a", "team-a"]}, "watchNamespaces"),
        ({"replicaCount": -1}, "replicaCount"),
        ({"replicaCount": 2}, "replicaCount"),
        ({"image": {"pullPolicy": "Sometimes"}}, "pullPolicy"),
        ({"image": {"tag": "has space"}}, "tag"),
        ({"results": {"size": "ten gigs"}}, "size"),
        ({"results": {"accessModes": ["ReadWriteSometimes"]}}, "accessModes"),
        ({"results": {"claimName": "Results!"}}, "claimName"),
        ({"results": {"create": "yes"}}, "create"),
        ({"imagePullSecrets": ["regcred"]}, "imagePullSecrets"),
        ({"service": {"port": 0}}, "port"),
        ({"resources": {"requests": {"cpu": "lots"}}}, "cpu"),
        ({"watchNamespace": ["team-a"]}, "watchNamespace"),  # a typo is not ignored
        ({"metrics": {"port": 0}}, "port"),
        ({"metrics": {"runnerLingerSeconds": -1}}, "runnerLingerSeconds"),
        ({"metrics": {"podMonitor": {"interval": "every minute"}}}, "interval"),
        # The PodMonitor CRD takes units largest first only
        # (tests/integration/chart/test_podmonitors_crd.py).
        ({"metrics": {"podMonitor": {"interval": "30s1m"}}}, "interval"),
        ({"metrics": {"podMonitor": {"interval": ""}}}, "interval"),
        ({"metrics": {"dashboard": {"labels": {"grafana_dashboard": 1}}}}, "grafana_dashboard"),
        ({"metrics": {"prometheusRule": {"window": "6 hours"}}}, "window"),
        ({"metrics": {"prometheusRule": {"window": ""}}}, "window"),
        ({"metrics": {"prometheusRule": {"severity": "very bad"}}}, "severity"),
    ],
)
def test_schema_rejects_bad_values(values: dict[str, Any], field: str) -> None:
    result = template(values, check=False)
    assert result.returncode != 0, f"{values} was accepted"
    assert "schema" in result.stderr
    assert field in result.stderr


KEPT = (
    "Chart.yaml",
    "values.yaml",
    "values.schema.json",
    "templates/_helpers.tpl",
    "templates/NOTES.txt",
    "templates/tests/test-operator.yaml",
    f"crds/{CRD_FILE.name}",
)


def packaged_files(chart: Path, destination: Path) -> set[str]:
    """The files `helm package` puts in the chart's archive, relative to the chart."""
    helm("package", str(chart), "--destination", str(destination))
    (archive,) = destination.glob("dbbench-*.tgz")
    with tarfile.open(archive) as tar:
        return {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}


def tracked_files() -> set[str]:
    """The chart's files git tracks (the repository root is the chart)."""
    listing = subprocess.run(
        ["git", "-C", str(CHART), "ls-files", "-z"], check=True, capture_output=True
    ).stdout.decode()
    return {name for name in listing.split("\0") if name}


def strays(gitignore: str) -> list[str]:
    """A file under every .gitignore pattern (what the developer commands leave:
    .venv, .tools, .cluster, build/, demo-results/, caches, logs...): at the
    chart root, and for a pattern that matches at any depth, in the packaged
    directories too."""
    planted = []
    for line in gitignore.splitlines():
        pattern = line.strip()
        if not pattern or pattern.startswith("#"):
            continue
        name = pattern.strip("/").replace("*", "stray")
        path = f"{name}/stray" if pattern.endswith("/") else name
        planted.append(path)
        if not pattern.startswith("/"):
            planted += [f"templates/{path}", f"crds/{path}"]
    return planted


def test_package_holds_the_chart_and_not_the_sources(tmp_path: Path) -> None:
    names = packaged_files(CHART, tmp_path)
    for kept in KEPT:
        assert kept in names, kept
    # Nothing git does not track: what `make setup`, `make demo` or a test
    # run left in this checkout is not the chart.
    untracked = names - tracked_files()
    assert not untracked, f"not tracked by git, add it to .helmignore: {sorted(untracked)}"
    # Nothing else: no sources, tests, tools, caches or topology charts (which
    # helm would install as subcharts).
    top = {n.split("/", 1)[0] for n in names}
    assert top == {
        "Chart.yaml",
        "values.yaml",
        "values.schema.json",
        "templates",
        "crds",
        "README.md",
        ".helmignore",
        "dashboards",
    }, sorted(top)


def test_package_leaves_out_what_the_developer_commands_leave(tmp_path: Path) -> None:
    """A checkout where every developer command has left its files (a stray
    under each .gitignore pattern) still packages only what git tracks: a
    user who ran `make demo` does not ship their results in the chart."""
    chart = tmp_path / "dbbench"
    tracked = tracked_files()
    for name in tracked:
        source = CHART / name
        if source.is_file():  # not deleted in the working tree
            (chart / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, chart / name)
    planted = strays((CHART / ".gitignore").read_text())
    assert "demo-results/stray" in planted, planted
    for name in planted:
        (chart / name).parent.mkdir(parents=True, exist_ok=True)
        (chart / name).write_text("left by a developer command\n")
    names = packaged_files(chart, tmp_path)
    for kept in KEPT:
        assert kept in names, kept
    assert sorted(names - tracked) == [], "add these patterns to .helmignore"
