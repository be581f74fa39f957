from __future__ import annotations

import bisect
import collections
import math
import random

import pytest

from dbbench_contract.api.phases import DistributionType
from dbbench_runner.config import Dataset, KeyChoice
from dbbench_runner.datasets import generator_for
from dbbench_runner.datasets.base import HashedKeyOrder
from dbbench_runner.datasets.ycsb import count_below, decimal_quantile
from dbbench_runner.distributions import (
    EXACT_HOT_LIMIT,
    ZipfRanks,
    make_chooser,
    scramble,
)

# chi-square critical values at p = 0.001, by degrees of freedom
CHI2_999 = {9: 27.88, 19: 43.82, 20: 45.31}


def draw(spec: KeyChoice, n: int, count: int, seed: int = 3) -> list[int]:
    choose = make_chooser(spec, n, random.Random(seed))
    return [choose() for _ in range(count)]


def zipf_probabilities(n: int, theta: float) -> list[float]:
    weights = [1.0 / (k**theta) for k in range(1, n + 1)]
    total = math.fsum(weights)
    return [w / total for w in weights]


def chi_square(observed: list[int], expected: list[float]) -> float:
    return sum((o - e) ** 2 / e for o, e in zip(observed, expected, strict=True))


def test_uniform_covers_the_range_evenly() -> None:
    values = draw(KeyChoice(type="uniform"), 1000, 50_000)
    assert min(values) == 1
    assert max(values) == 1000
    bins = [0] * 10
    for value in values:
        bins[(value - 1) // 100] += 1
    expected = len(values) / 10
    assert chi_square(bins, [expected] * 10) < CHI2_999[9]


def test_same_seed_same_keys() -> None:
    kinds: tuple[DistributionType, ...] = ("uniform", "zipfian", "latest", "hotspot")
    for kind in kinds:
        spec = KeyChoice(type=kind)
        assert draw(spec, 5000, 500, seed=9) == draw(spec, 5000, 500, seed=9)
        assert draw(spec, 5000, 500, seed=9) != draw(spec, 5000, 500, seed=10)


@pytest.mark.parametrize(("n", "theta"), [(10_000, 0.99), (1000, 0.5), (100_000, 0.9), (2, 0.99)])
def test_zipf_ranks_follow_the_law_exactly(n: int, theta: float) -> None:
    """Chi-square of the 19 most popular ranks and the rest, against 1/k^theta / zeta."""
    count = 200_000
    zipf = ZipfRanks(n, theta, random.Random(5))
    ranks = collections.Counter(zipf.rank() for _ in range(count))
    assert all(0 <= r < n for r in ranks)
    p = zipf_probabilities(n, theta)
    head = min(n, 19)
    observed = [ranks[k] for k in range(head)]
    expected = [count * p[k] for k in range(head)]
    if n > head:
        observed.append(count - sum(observed))
        expected.append(count * math.fsum(p[head:]))
    assert chi_square(observed, expected) < CHI2_999.get(len(observed) - 1, 45.31)


def test_scramble_is_a_bijection_that_spreads_neighbours() -> None:
    for n in (1, 2, 10, 999, 1000, 4096, 65_537):
        record = scramble(n)
        assert sorted(record(r) for r in range(n)) == list(range(1, n + 1))
    record = scramble(10_000)
    top = [record(r) for r in range(10)]
    assert max(top) - min(top) > 1000  # the most popular records are not neighbours


def test_zipfian_keys_follow_the_ranks_through_the_scramble() -> None:
    n, count = 10_000, 100_000
    values = draw(KeyChoice(type="zipfian"), n, count)
    by_rank = {scramble(n)(r): r for r in range(n)}
    frequencies = collections.Counter(by_rank[v] for v in values)
    p = zipf_probabilities(n, 0.99)
    observed = [frequencies[k] for k in range(19)]
    observed.append(count - sum(observed))
    expected = [count * p[k] for k in range(19)] + [count * math.fsum(p[19:])]
    assert chi_square(observed, expected) < CHI2_999[19]


def test_latest_favours_the_newest_records() -> None:
    newest = 5000
    choose = make_chooser(KeyChoice(type="latest"), 5000, random.Random(1), latest=lambda: newest)
    values = [choose() for _ in range(20_000)]
    assert max(values) == newest
    assert sum(v > newest - 500 for v in values) / len(values) > 0.6
    assert min(values) >= 1


@pytest.mark.parametrize(("data", "ops"), [(0.1, 1.0), (0.2, 0.8)])
def test_hotspot_sends_the_operation_fraction_to_the_hot_set(data: float, ops: float) -> None:
    n = 10_000
    spec = KeyChoice(type="hotspot", data_fraction=data, operation_fraction=ops)
    values = draw(spec, n, 40_000)
    hot = sum(v <= n * data for v in values) / len(values)
    assert abs(hot - ops) < 0.01
    assert min(values) >= 1
    assert max(values) <= (n * data if ops == 1.0 else n)


def key_ranks(order: HashedKeyOrder, n: int) -> dict[int, int]:
    """Record number -> its rank (0-based) in the key order of records 1..n."""
    ranked = sorted(range(1, n + 1), key=order.sort_value)
    return {number: rank for rank, number in enumerate(ranked)}


@pytest.mark.parametrize("shape", ["flat45", "ycsb"])
@pytest.mark.parametrize("n", [EXACT_HOT_LIMIT // 2, 30_000])
def test_hashed_hotspot_is_the_lowest_keys(shape: str, n: int) -> None:
    """The hot set is a prefix of the key order (what the table is clustered by),
    read uniformly; with operationFraction < 1 the rest goes to the other keys."""
    order = generator_for(Dataset(shape=shape, records=1)).key_order
    assert order is not None
    ranks = key_ranks(order, n)
    spec = KeyChoice(type="hotspot", data_fraction=0.1)
    choose = make_chooser(spec, n, random.Random(4), key_order=order)
    drawn = [ranks[choose()] for _ in range(20_000)]
    hot = 0.1 * n
    # the quantile of the key space, not of these n keys: within a few standard deviations
    top = max(drawn)
    assert top < hot + 4 * math.sqrt(hot)
    size = top + 1  # every hot record was drawn: the hot set is ranks 0..size-1
    bins, widths = [0] * 10, [0] * 10
    for rank in range(size):
        widths[rank * 10 // size] += 1
    for rank in drawn:
        bins[rank * 10 // size] += 1
    assert chi_square(bins, [len(drawn) * w / size for w in widths]) < CHI2_999[9]
    mixed = KeyChoice(type="hotspot", data_fraction=0.1, operation_fraction=0.7)
    choose = make_chooser(mixed, n, random.Random(4), key_order=order)
    share = sum(ranks[choose()] <= top for _ in range(10_000)) / 10_000
    assert abs(share - 0.7) < 0.02


def test_key_orders_sort_as_the_keys_do() -> None:
    for shape in ("flat45", "ycsb"):
        generator = generator_for(Dataset(shape=shape, records=1))
        order = generator.key_order
        assert order is not None
        numbers = list(range(1, 3000))
        by_value = sorted(numbers, key=order.sort_value)
        assert by_value == sorted(numbers, key=lambda n: str(generator.key(n)))
    for shape in ("indexed4", "news", "vehicle"):
        assert generator_for(Dataset(shape=shape, records=1)).key_order is None


def test_decimal_quantile_splits_the_64_bit_strings() -> None:
    # count_below against a brute count on a sample; the quantile against random hashes
    rng = random.Random(8)
    sample = [rng.getrandbits(64) for _ in range(200_000)]
    for threshold in ("1", "18", "2", "5000", "99"):
        share = sum(str(u) < threshold for u in sample) / len(sample)
        assert abs(count_below(threshold) / 2**64 - share) < 0.005
    strings = sorted(str(u) for u in sample)
    for fraction in (0.05, 0.1, 0.5, 0.9):
        below = bisect.bisect_left(strings, decimal_quantile(fraction)) / len(strings)
        assert abs(below - fraction) < 0.005
