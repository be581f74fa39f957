"""The chart's PrometheusRule: rendered only when asked for and where the API
exists, and its two alerts checked by Prometheus's own rule tester (`promtool
test rules`, Debian's prometheus package from `make tools`): each fires for the
window after a series' counter rises (a counter that first appears at 1
included), not for improvements, and resolves after the window."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.support.helm import by_kind, render

MONITORING = ["--api-versions", "monitoring.coreos.com/v1"]
ENABLED = {"metrics": {"prometheusRule": {"enabled": True}}}
CHANGES = "dbbench_operator_change_points_total"
MISSED = "dbbench_operator_expectations_missed_total"


def rule(values: dict[str, Any]) -> dict[str, Any]:
    (manifest,) = by_kind(render(values, extra=MONITORING), "PrometheusRule")
    return manifest


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("promtool")
    assert binary is not None, "promtool not found: run `make tools` (Debian's prometheus)"
    return subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True, check=False)


def test_rendered_only_when_enabled_and_the_api_exists() -> None:
    assert not by_kind(render(extra=MONITORING), "PrometheusRule")
    assert not by_kind(render(ENABLED), "PrometheusRule"), "rendered without the CRD's API"
    chosen = {"enabled": True, "labels": {"release": "prom"}, "severity": "page", "window": "2h"}
    manifest = rule({"metrics": {"prometheusRule": chosen}})
    assert manifest["metadata"]["labels"]["release"] == "prom"
    alerts = manifest["spec"]["groups"][0]["rules"]
    assert [a["alert"] for a in alerts] == ["DbbenchRegression", "DbbenchExpectationsMissed"]
    for alert in alerts:
        assert alert["labels"] == {"severity": "page"}
        assert "[2h]" in alert["expr"]
        assert "offset 2h" in alert["expr"]


def _series(metric: str, series: str, values: str, **labels: str) -> dict[str, str]:
    all_labels = {"series_namespace": "team-a", "series": series, "pod": "op-1", **labels}
    text = ", ".join(f'{k}="{v}"' for k, v in all_labels.items())
    return {"series": f"{metric}{{{text}}}", "values": values}


def _annotations(name: str, series: str) -> dict[str, str]:
    """What each alert says, its labels filled in (the window is the default, 6h)."""
    where = f"series {series} (namespace team-a)"
    if name == "DbbenchRegression":
        return {"summary": f"A run of {where} regressed",
                "description": "Change-point detection found a regression at the series' latest "
                f"run within the last 6h. The run's ChangePoint condition names the metric, "
                f"target and phase: dbbench history {series} -n team-a"}  # fmt: skip
    return {"summary": f"A run of {where} missed its expectations",
            "description": "A run ended within the last 6h with an expectation missed; its "
            "Expectations condition says which, by how much (kubectl get benchmarkruns -n "
            f"team-a -l dbbench.io/series={series})"}  # fmt: skip


def _fires(name: str, at: str, *series: str) -> dict[str, Any]:
    labels = {"severity": "warning", "series_namespace": "team-a"}
    expected = [
        {"exp_labels": {**labels, "series": one}, "exp_annotations": _annotations(name, one)}
        for one in series
    ]
    return {"eval_time": at, "alertname": name, "exp_alerts": expected}


def _rule_test(
    workdir: Path, inputs: list[dict[str, str]], cases: list[dict[str, Any]]
) -> subprocess.CompletedProcess[str]:
    """`promtool test rules` on rules.yaml in `workdir`, one sample a minute."""
    test = {"interval": "1m", "input_series": inputs, "alert_rule_test": cases}
    tests = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [test]}
    (workdir / "tests.yaml").write_text(yaml.safe_dump(tests))
    return promtool("test", "rules", "tests.yaml", cwd=workdir)


def test_promtool_checks_the_rules_and_their_alerts_fire_and_resolve(tmp_path: Path) -> None:
    groups = rule(ENABLED)["spec"]["groups"]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    checked = promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 2 rules found" in checked.stdout
    # One sample a minute. "nightly": its first regression judged at 10m (the
    # counter appears at 1), an improvement from the start. "weekly": a regression
    # counted before Prometheus's first sample, steady for hours, then another at
    # 400m. An existing counter is new to a Prometheus that starts scraping it, so
    # "weekly" alerts for the first window too (docs/chart.md says so).
    inputs = [
        _series(CHANGES, "nightly", "_x10 1x500", direction="Regression"),
        _series(CHANGES, "nightly", "1x500", direction="Improvement"),
        _series(CHANGES, "weekly", "2x399 3x100", direction="Regression"),
        _series(MISSED, "nightly", "_x20 1x500"),
    ]
    regression, missed = "DbbenchRegression", "DbbenchExpectationsMissed"
    cases = [
        _fires(regression, "9m", "weekly"),
        _fires(regression, "10m", "nightly", "weekly"),
        _fires(regression, "369m", "nightly"),  # the window (6h) after 10m; weekly's over
        _fires(regression, "380m"),  # resolved: nothing rose in the last 6h
        _fires(regression, "401m", "weekly"),  # weekly's counter rose at 400m
        _fires(missed, "19m"),
        _fires(missed, "20m", "nightly"),
        _fires(missed, "390m"),
    ]
    tested = _rule_test(tmp_path, inputs, cases)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_the_rule_tester_can_fail(tmp_path: Path) -> None:
    """The check above can fail: an improvement alone raises no regression alert."""
    groups = rule(ENABLED)["spec"]["groups"]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    inputs = [_series(CHANGES, "nightly", "1x100", direction="Improvement")]
    tested = _rule_test(tmp_path, inputs, [_fires("DbbenchRegression", "10m", "nightly")])
    assert tested.returncode != 0, tested.stdout
    assert "DbbenchRegression" in tested.stdout + tested.stderr
