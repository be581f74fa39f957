"""The report's arithmetic on hand-picked values (pure): spread, cost, noise."""

from __future__ import annotations

import pytest

from dbbench_contract.api import Target
from dbbench_report.comparing import Cell, Row, Workload
from dbbench_report.figures import Spread, cost_per_million, database_pods


def test_spread_of_repeats() -> None:
    s = Spread((90.0, 100.0, 110.0))
    assert (s.n, s.mean, s.low, s.high) == (3, 100.0, 90.0, 110.0)
    assert s.stdev == pytest.approx(10.0)
    assert s.spread_percent == pytest.approx(20.0)
    assert Spread((5.0,)).stdev is None
    assert Spread((5.0,)).spread_percent is None


def test_cost_per_million_operations() -> None:
    # 1,000 ops/s: a million takes 1,000 s; 3 pods at 0.36/h cost 3 * 0.36 * 1000/3600
    assert cost_per_million(0.36, 3, 1000.0) == pytest.approx(0.3)
    assert cost_per_million(1.0, 1, 0.0) is None
    secret = {"uriSecretRef": {"name": "s", "key": "uri"}}
    assert database_pods(Target(name="x", engine="mongodb", external=secret)) == 1
    assert database_pods(Target(name="x", engine="mongodb", topology="replicaSet")) == 3
    sharded = Target(name="x", engine="mongodb", topology="sharded", shards=3, members=1)
    assert database_pods(sharded) == 3
    assert database_pods(Target(name="x", engine="mysql", topology="primaryReplica")) == 2


def _row(a: tuple[float, ...], b: tuple[float, ...]) -> Row:
    workload = Workload("mix", "client", ())
    cells = (Cell("p", Spread(a), Spread((1.0,))), Cell("p", Spread(b), Spread((2.0,))))
    return Row("t", workload, cells)


def test_noise_flag_from_overlapping_repeats() -> None:
    assert _row((100.0, 110.0), (105.0, 120.0)).noise(1) == "noise"
    assert _row((100.0, 110.0), (111.0, 120.0)).noise(1) == "significant"
    assert _row((100.0,), (150.0, 160.0)).noise(1) == "1 repeat"
    row = _row((100.0, 110.0), (126.0, 105.0))
    assert row.relative(1) == pytest.approx((115.5 - 105.0) / 105.0 * 100)
    assert row.relative(1, "p99") == pytest.approx(100.0)
    missing = (None, Cell("p", Spread((1.0,)), Spread((1.0,))))
    assert Row("t", Workload("mix", "client", ()), missing).noise(1) == "missing"
