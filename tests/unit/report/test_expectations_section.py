"""The report's Expectations section (issue 31, item 4), from the run summary's
`expectations` (what the operator judged; its judging: tests/unit/operator/status/
test_expectations_judged.py): one row per bound, exact values in data-value."""

from __future__ import annotations

from pathlib import Path

from dbbench_contract.api import parse_spec
from dbbench_contract.api.expectations import ExpectationOutcome
from dbbench_contract.run_summary import RunMeta, RunSummary
from dbbench_report import rendering
from dbbench_report.expectations import KEY, section_html
from dbbench_report.reading import Run
from tests.support.pages import parse

SPEC = {
    "targets": [{"name": "maria", "engine": "mariadb"}],
    "phases": [{"name": "load", "type": "insert"},
               {"name": "reads", "type": "pointReads", "operations": 10}],
    "expectations": [{"phase": "reads", "minOpsPerSecond": 500, "maxLatency": {"p99": "2ms"}}],
}  # fmt: skip
OUTCOMES = (
    ExpectationOutcome(expectation=0, target="maria", phase="reads", bound="minOpsPerSecond",
                       verdict="Missed", limit=500, measured=412.25, unit="ops/s", repeat=2,
                       by_percent=17.6),
    ExpectationOutcome(expectation=0, target="maria", phase="reads", bound="maxLatency.p99",
                       verdict="Held", limit=2, measured=1.234, unit="ms", repeat=1,
                       by_percent=-38.3),
)  # fmt: skip


def run_of(outcomes: tuple[ExpectationOutcome, ...], phase: str = "Failed") -> Run:
    summary = RunSummary(api_version="dbbench.io/v1alpha1", spec=parse_spec(SPEC),
                         run=RunMeta(namespace="n", name="r", uid="u", phase=phase,
                                     reason="ExpectationsMissed"),
                         expectations=outcomes)  # fmt: skip
    return Run(Path("/nowhere"), summary, (), ())


def test_each_bound_is_a_row_with_its_verdict_limit_and_measured_value() -> None:
    page = parse(section_html(run_of(OUTCOMES)))
    assert page.sections == [KEY]
    ops = {c.key: c for c in page.cells if c.row.get("bound") == "minOpsPerSecond"}
    assert (ops["verdict"].text, ops["limit"].value, ops["measured"].value) == (
        "Missed", "500.0", "412.25")  # fmt: skip
    assert (ops["repeat"].text, ops["by %"].value, ops["operation"].text) == ("2", "17.6", "all")
    assert ops["detail"].text == (
        "expectations[0] maria/reads minOpsPerSecond >= 500 ops/s: measured 412.2 ops/s "
        "(repeat 2), missed by 17.6%"
    )
    p99 = {c.key: c for c in page.cells if c.row.get("bound") == "maxLatency.p99"}
    assert (p99["verdict"].text, p99["measured"].value, p99["measured"].text) == (
        "Held", "1.234", "1.234")  # fmt: skip


def test_the_section_is_in_the_page_even_without_steps_and_absent_without_outcomes() -> None:
    html = rendering.render(run_of(OUTCOMES))
    assert KEY in parse(html).sections
    assert "1 held, 1 missed, 0 not judged" in html
    assert section_html(run_of((), "Succeeded")) == ""
    # Written only when there are outcomes: other summaries are byte for byte as before.
    assert "expectations" not in run_of((), "Succeeded").summary.to_wire()
    assert run_of(OUTCOMES).summary.to_wire()["expectations"][0]["byPercent"] == 17.6
