"""The `examples/field/*small*.yaml` that need no MongoDB run to Succeeded on the
real node: MariaDB, and benchmark 1's MySQL side on the
node's Oracle MySQL (`1-insert-modes-*-small.yaml`, no `image`: the chart's
engines values). Each does what its manifest says (operation counts, ordered
percentiles, exact records in the phase's own table) and leaves a
report.html next to its results; then it is deleted and nothing of it stays.

Each run is applied under its example's name plus this session's token, so
a run of the same name from elsewhere is never touched.

The examples share the node with other tests' runs, the warm-cache one too
(its `exclusive: true` is for a fair comparison with the cold one; shared here,
its counts and report are what is checked). The cold-cache example holds the
node exclusively (`cache: cold` needs it): its checks are `disruptive` and read
the session's one run of it in a namespace enforcing baseline (`cold_baseline`,
also checked by test_tenant.py), instead of running it twice more. Benchmark
5's restart once (`cache: coldOnce`) needs the node to itself too: the example
with the tags index runs as written but at a quarter of its size
(tests/e2e/sizes.py), alone, once (`news_once`, also read by
test_cold_once.py); its twin without the index (the same manifest but
`tagsIndex`) shares the node with `cache: warm`, one repeat and the same
quarter size, its counts and report checked like the warm-cache example's, its
restart and repeats being its twin's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_contract.durations import parse_duration
from dbbench_local.install import Kube
from tests.e2e.conftest import (
    FIELD,
    NEWS_ONCE,
    apply_run,
    delete_run,
    results_json,
    results_text,
    session_name,
    wait_for_report,
    wait_phase,
)
from tests.e2e.expectations import check_results
from tests.e2e.sizes import NEWS_DIVISOR, divided, timed_at

pytestmark = pytest.mark.e2e

# MongoDB cannot run here (no mongod image); their small variants are checked by
# server-side dry run in tests/integration/contract/api. cache: cold runs: the e2e chart install
# sets coldCache.allowPrivilegedPods (conftest).
RUNNABLE_SMALL = sorted(p for p in FIELD.glob("*small*.yaml") if "mongodb" not in p.read_text())
COLD = FIELD / "3-cold-cache-small.yaml"
# Examples whose one exclusive run of the session is a fixture's (conftest).
SESSION_RUNS = {COLD: "cold_baseline", NEWS_ONCE: "news_once"}
# The cold example's first test waits for the run (about 5 minutes on 2 cores).
COLD_TIMEOUT = pytest.mark.timeout(2400)


def _example(path: Path) -> Any:
    """The session's exclusive runs (cache: cold, coldOnce) are read alone."""
    marks = [pytest.mark.disruptive, COLD_TIMEOUT] if path in SESSION_RUNS else []
    return pytest.param(path, marks=marks, id=path.name)


# A timed phase of a shared example measures this long: the warm-cache
# example's two 30 s phases of unpaced reads were a minute of both cores taken
# from the tests beside it, and its counts and report are what is checked here.
SHARED_PHASE_S = "10s"


def shared(spec: dict[str, Any]) -> dict[str, Any]:
    """The example on a shared node: not exclusive, so not restarting either
    (cache: cold and coldOnce need the node to themselves). A restarting
    example's shared twin runs its phases once: its repeats are its twin's to
    show (news_once: three, on one restarted server), and each is 20,000
    single-row operations on one connection (about 2 minutes of the shared
    cores). Timed phases last SHARED_PHASE_S; benchmark 5's examples run at
    the suite's size (tests/e2e/sizes.py), as `news_once` does."""
    shared_spec = {**spec, "phases": timed_at(spec["phases"], SHARED_PHASE_S),
                   "hardware": {**spec["hardware"], "exclusive": False}}  # fmt: skip
    if spec.get("cache", "warm") != "warm":
        shared_spec.update(cache="warm", repeats=1)
    if spec["dataset"]["shape"] == "news":
        shared_spec = divided(shared_spec, NEWS_DIVISOR)
    return shared_spec


@pytest.mark.parametrize("path", [_example(p) for p in RUNNABLE_SMALL])
def test_small_field_example_succeeds(
    kube: Kube, path: Path, request: pytest.FixtureRequest
) -> None:
    body: dict[str, Any] = yaml.safe_load(path.read_text())
    spec = body["spec"]
    if path in SESSION_RUNS:
        # The session's run, at the size it ran (`news_once`: the suite's).
        session_run = request.getfixturevalue(SESSION_RUNS[path])
        status = session_run["status"]
        check_results(path.name, session_run["spec"], status)
        assert "report.html" in wait_for_report(kube, status)
        return
    name = session_name(body["metadata"]["name"])
    spec = shared(spec)
    apply_run(kube, name, spec)
    try:
        # The run's own timeout ends it (Failed); a minute more for the operator.
        status = wait_phase(kube, name, ("Succeeded", "Failed"),
                            timeout=parse_duration(spec["timeout"]) + 60)  # fmt: skip
        check_results(path.name, spec, status)
        # The results service renders report.html in the background once the
        # run's summary.json arrives (dbbench_results.reports): allow it a minute.
        files = wait_for_report(kube, status)
        assert "summary.json" in files
        assert "report.html" in files
    finally:
        delete_run(kube, name)


@pytest.mark.disruptive
@COLD_TIMEOUT
def test_cold_cache_hot_range_reads_fewer_pages_from_disk(
    kube: Kube, cold_baseline: dict[str, Any]
) -> None:
    """Field benchmark 3 on the node: after a restart and a page-cache drop, the hot
    tenth of the md5 order fits the 16 MiB pool and the whole table does not."""
    status = cold_baseline["status"]
    assert status["phase"] == "Succeeded", status.get("conditions")
    per_op = {}
    for phase in ("reads-hot-range", "reads-whole-range"):
        summary = results_json(kube, status, f"maria/{phase}/1/summary.json")
        counters = summary["serverCounters"]
        assert counters["diskReadsCounter"] == "Innodb_buffer_pool_reads"
        per_op[phase] = counters["diskReadsPerOperation"]
    print(f"disk reads per operation on the node: {per_op}")
    assert per_op["reads-hot-range"] < per_op["reads-whole-range"] / 2, per_op
    assert "report.html" in wait_for_report(kube, status)
    html = results_text(kube, status, "report.html")
    assert 'data-section="disk-reads"' in html
    assert "<b data-key='cache' data-value='cold'>" in html
