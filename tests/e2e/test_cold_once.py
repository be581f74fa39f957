"""cache: coldOnce on the real node (issue 30, item 4; field benchmark 5's
protocol): the database is restarted and its node's page cache dropped once,
after the load and before the first measured step, and every later phase and
repeat runs on that same server.

What says so is the server itself: each step's environment.json records when
the MariaDB it measured started (its `Uptime`, read by the runner at the
step's start). The load's server is gone before the first read began; the six
steps after it (two phases, three repeats) share one start, and their uptimes
grow. A restart per repeat (cache: cold) or none (warm) would fail here.

The run read is field benchmark 5's small example with its tags index, as
written (`news_once`, conftest): test_field_examples.py checks the same run's
counts and report, so the node is held alone for one such run, not two.

Disruptive: coldOnce needs an exclusive node (it drops the node's page cache).
"""

from __future__ import annotations

from typing import Any

import pytest

from dbbench_local.install import Kube
from tests.e2e.conftest import results_json, results_text, wait_for_report
from tests.support.pages import parse

pytestmark = pytest.mark.e2e

# A server started in the same second reads one start apart by up to 1 s
# (MariaDB counts Uptime in whole seconds).
SAME_START_S = 1.5


def step_record(kube: Kube, status: dict[str, Any], path: str) -> tuple[dict[str, Any], Any]:
    """(the server block of the step's first pod's environment, its merged summary)."""
    environment = results_json(kube, status, f"{path}/environment.json")
    return environment["pods"][0]["server"], results_json(kube, status, f"{path}/summary.json")


@pytest.mark.disruptive
@pytest.mark.timeout(2400)  # the first user of news_once waits for its run
def test_a_cold_once_run_restarts_the_database_once_not_per_repeat(
    kube: Kube, news_once: dict[str, Any]
) -> None:
    status = news_once["status"]
    assert news_once["spec"]["cache"] == "coldOnce"
    assert status["phase"] == "Succeeded", status.get("message")
    assert status["progress"]["coldStep"] == 2  # the last (and only) restart: before get-by-id/1
    steps = results_json(kube, status, "summary.json")["steps"]
    measured = [(p, r) for p in ("get-by-id", "update-by-id") for r in (1, 2, 3)]
    assert [(s["phase"], s["repeat"]) for s in steps] == [("insert", 1), *measured]
    records = [step_record(kube, status, s["path"]) for s in steps]
    (load, load_summary), (first, first_summary), *later = records
    starts = [server["startedAt"] for server, _ in records]
    uptimes = [server["uptimeSeconds"] for server, _ in records]
    print(f"server starts per step: {starts}; uptimes: {uptimes}")
    # Restarted once: the server deployed for the load ran it; another, started
    # after the load ended, served the first read ...
    assert load["startedAt"] < load_summary["startedAt"]
    assert load_summary["endedAt"] < first["startedAt"] < first_summary["startedAt"]
    # ... and never again: the repeats and the next phase ran on that same server.
    for server, summary in later:
        assert abs(server["startedAt"] - first["startedAt"]) < SAME_START_S, starts
        assert summary["startedAt"] > server["startedAt"]
    assert uptimes[1:] == sorted(uptimes[1:]), uptimes
    # The report says the same, from the same records.
    assert "report.html" in wait_for_report(kube, status)
    html = results_text(kube, status, "report.html")
    assert "<b data-key='cache' data-value='coldOnce'>" in html
    page = parse(html)
    shown = [page.find("disk-reads", "restarted", target="maria", phase=s["phase"],
                       repeat=s["repeat"]).text for s in steps]  # fmt: skip
    assert shown == ["—", "yes", *["no"] * 5], shown
