from __future__ import annotations

import collections
import random

import pytest

from dbbench_runner.config import Distribution
from dbbench_runner.distributions import ZETA_EXACT_LIMIT, Zipfian, make_chooser, zeta

CHI2_9_999 = 27.88


def draw(spec: Distribution, n: int, count: int, seed: int = 3) -> list[int]:
    choose = make_chooser(spec, n, random.Random(seed))
    return [choose() for _ in range(count)]


def test_uniform_covers_the_range_evenly() -> None:
    values = draw(Distribution(type="uniform"), 1000, 50_000)
    assert min(values) == 1
    assert max(values) == 1000
    bins = [0] * 10
    for value in values:
        bins[(value - 1) // 100] += 1
    expected = len(values) / 10
    assert sum((b - expected) ** 2 / expected for b in bins) < CHI2_9_999


def test_same_seed_same_keys() -> None:
    for kind in ("uniform", "zipfian", "latest", "hotspot"):
        spec = Distribution.model_validate({"type": kind})
        assert draw(spec, 5000, 500, seed=9) == draw(spec, 5000, 500, seed=9)
        assert draw(spec, 5000, 500, seed=9) != draw(spec, 5000, 500, seed=10)


def test_zipfian_rank_frequencies_follow_the_law() -> None:
    n, theta, count = 1000, 0.99, 200_000
    zipf = Zipfian(n, theta, random.Random(5))
    ranks = collections.Counter(zipf.rank() for _ in range(count))
    z = zeta(n, theta)
    for rank in (0, 1):  # exact in Gray's algorithm
        expected = count / ((rank + 1) ** theta * z)
        assert abs(ranks[rank] - expected) < 4 * expected**0.5
    assert all(0 <= r < n for r in ranks)
    # heavy head: the top 10% of ranks get far more than 10% of the draws
    head = sum(c for r, c in ranks.items() if r < n // 10)
    assert head / count > 0.6


def test_zipfian_keys_are_scrambled_but_skewed() -> None:
    values = draw(Distribution(type="zipfian"), 10_000, 50_000)
    top = collections.Counter(values).most_common(10)
    assert top[0][1] > 50 * (50_000 / 10_000)  # the hottest key is far above uniform
    assert max(v for v, _ in top) > 1000  # popular keys are spread, not all at the start


def test_zeta_approximation_above_the_exact_limit() -> None:
    n = ZETA_EXACT_LIMIT * 2
    exact = sum(1.0 / i**0.99 for i in range(1, n + 1))
    assert abs(zeta(n, 0.99) - exact) / exact < 1e-9


def test_latest_favours_the_newest_records() -> None:
    newest = 5000
    choose = make_chooser(
        Distribution(type="latest"), 5000, random.Random(1), latest=lambda: newest
    )
    values = [choose() for _ in range(20_000)]
    assert max(values) == newest
    assert sum(v > newest - 500 for v in values) / len(values) > 0.6
    assert min(values) >= 1


@pytest.mark.parametrize(("data", "ops"), [(0.1, 1.0), (0.2, 0.8)])
def test_hotspot_sends_the_operation_fraction_to_the_hot_set(data: float, ops: float) -> None:
    n = 10_000
    spec = Distribution(type="hotspot", data_fraction=data, operation_fraction=ops)
    values = draw(spec, n, 40_000)
    hot = sum(v <= n * data for v in values) / len(values)
    assert abs(hot - ops) < 0.01
    assert min(values) >= 1
    assert max(values) <= (n * data if ops == 1.0 else n)
