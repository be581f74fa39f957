"""The report shows each thread group (mix.by: connections): its connections,
throughput and p99, beside the weighted mix's types run on every connection.

The run is a real one (tests/support/generate.py: the operator's step files,
the runner against a real MariaDB, the results service's merge, the
operator's run summary); what the servers saw of the groups:
tests/integration/runner/test_thread_groups_at_the_server.py."""

from __future__ import annotations

import html
import json
import re

import pytest

from dbbench_report import write_report
from dbbench_report.cells import fmt
from tests.fixtures.mariadb import MariaDBServer
from tests.support.generate import generate_run
from tests.support.pages import parse

pytestmark = pytest.mark.integration

EXTERNAL = {"uriSecretRef": {"name": "targets", "key": "uri"}}
SPEC = {
    "targets": [{"name": "maria", "engine": "mariadb", "external": EXTERNAL}],
    "hardware": {"exclusive": False},
    "runner": {"threads": 4, "processes": 1},
    "dataset": {"shape": "flat45", "records": 500, "recordSize": 128, "seed": 3},
    "phases": [
        {"name": "load", "type": "insert", "batchSize": 50},
        {"name": "groups", "type": "mix", "operations": 400,
         "mix": {"read": 70, "insert": 20, "update": 10, "by": "connections"}},
        {"name": "weights", "type": "mix", "operations": 400,
         "mix": {"read": 70, "update": 30}},
    ],
    "timeout": "30m",
}  # fmt: skip


def test_each_group_has_its_connections_throughput_and_p99(
    mariadb: MariaDBServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("groups-report")
    uid = "0b7e1c2a-0000-4000-8000-0000000000a3"
    run = generate_run(root / "claim", root / "work", "groups", uid, {"maria": mariadb}, SPEC)
    text = write_report(run.path).read_text()
    page = parse(text)
    summary = json.loads((run.path / "maria" / "groups" / "1" / "summary.json").read_text())
    # 4 connections at 70:20:10: 2.8 / 0.8 / 0.4, then update's 0 takes one of read's.
    assert summary["connectionGroups"] == {"read": 2, "insert": 1, "update": 1}
    where = {"target": "maria", "phase": "groups", "repeat": 1}
    lines = re.findall(r'<p data-key="threadGroups">(.*?)</p>', text)
    assert len(lines) == 1, lines
    for kind, size in summary["connectionGroups"].items():
        figures = summary["operationsByType"][kind]
        # 400 operations over 4 connections: 100 each, whatever the group.
        assert figures["operations"] == 100 * size
        assert page.find("operations", "groupConnections", op=kind, **where).value == str(size)
        said = (f"{kind} group: {size} connections, {fmt(figures['throughput'])} ops/s, "
                f"p99 {fmt(figures['latencyMs']['p99'], 3)} ms")  # fmt: skip
        assert said in html.unescape(lines[0]), lines[0]
    # A weighted mix: every connection ran every type.
    for kind in ("read", "update"):
        cell = page.find("operations", "groupConnections", op=kind, phase="weights",
                         target="maria", repeat=1)  # fmt: skip
        assert (cell.value, cell.text) == (None, "all")
