"""Seeded key choosers over record numbers 1..n (YCSB's request distributions).

Each chooser owns a random.Random seeded by the caller, so a worker's sequence
of keys is reproducible. They are pure Python and O(1) per draw, but for a
hotspot over hashed keys (below).

- zipfian: exact Zipf ranks (rejection-inversion), mapped to records by a
  fixed bijection that spreads popular records over the range;
- latest: Zipf ranks counted down from the newest record;
- hotspot: the hot set is the lowest `dataFraction` of the *key order*, which
  is the table's clustered order. For int keys that is record numbers
  1..ceil(n x f); for hashed keys (flat45's md5, ycsb's decimal hashes) it is
  the records whose key sorts below the key space's f-quantile, drawn by
  rejection: about 1/f key hashes per hot draw (docs/decisions.md has the
  measured cost; admission and the step file refuse dataFraction below
  MIN_HASHED_FRACTION).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from dbbench_runner.config import KeyChoice
from dbbench_runner.datasets.base import HashedKeyOrder

KeyChooser = Callable[[], int]
# At or below this many records the hashed hot set is found exactly (sort the
# keys once) instead of by the quantile: a few milliseconds, and never empty.
EXACT_HOT_LIMIT = 4096
# A fixed odd multiplier (2**64 / golden ratio) for the zipfian scramble.
_SCRAMBLE = 0x9E3779B97F4A7C15


class ZipfRanks:
    """Ranks 0..n-1 with P(rank k) = (k+1)^-theta / zeta(n, theta), exactly.

    Hörmann and Derflinger's rejection-inversion (1996), as Apache Commons'
    RejectionInversionZipfSampler: O(1) per draw, no zeta(n) to compute. Gray
    et al.'s approximation (YCSB's) draws rank 2 about 19% too often.
    """

    def __init__(self, n: int, theta: float, rng: random.Random) -> None:
        if n < 1:
            raise ValueError("key space is empty")
        self._n = n
        self._theta = theta
        self._random = rng.random
        self._h_x1 = self._big_h(1.5) - 1.0
        self._h_n = self._big_h(n + 0.5)
        self._cut = 2.0 - self._big_h_inverse(self._big_h(2.5) - self._h(2.0))

    def _h(self, x: float) -> float:
        return math.exp(-self._theta * math.log(x))

    def _big_h(self, x: float) -> float:
        """The integral of h from 1: (x^(1-theta) - 1) / (1 - theta), stable near theta 1."""
        log_x = math.log(x)
        t = (1.0 - self._theta) * log_x
        return (math.expm1(t) / t if abs(t) > 1e-8 else 1.0 + t / 2) * log_x

    def _big_h_inverse(self, x: float) -> float:
        t = max(x * (1.0 - self._theta), -1.0)
        return math.exp((math.log1p(t) / t if abs(t) > 1e-8 else 1.0 - t / 2) * x)

    def rank(self) -> int:
        n, h_n = self._n, self._h_n
        span = self._h_x1 - h_n
        while True:
            u = h_n + self._random() * span
            x = self._big_h_inverse(u)
            k = min(max(int(x + 0.5), 1), n)
            if k - x <= self._cut or u >= self._big_h(k + 0.5) - self._h(k):
                return k - 1


def scramble(n: int) -> Callable[[int], int]:
    """A fixed bijection of ranks 0..n-1 onto records 1..n that spreads neighbours
    apart: rank -> (a x rank) mod n + 1 with a coprime to n. The same in every
    worker, pod and repeat (popularity belongs to the data set, as in YCSB)."""
    a = _SCRAMBLE % n or 1
    while math.gcd(a, n) != 1:
        a += 1
    return lambda rank: a * rank % n + 1


def recency_ranks(spec: KeyChoice, n: int, rng: random.Random) -> Callable[[], int]:
    """Ranks 0 (newest) .. n-1 for the latest distribution; the caller maps them to records."""
    return ZipfRanks(n, spec.zipfian_constant, rng).rank


def make_chooser(
    spec: KeyChoice,
    n: int,
    rng: random.Random,
    latest: Callable[[], int] | None = None,
    key_order: HashedKeyOrder | None = None,
) -> KeyChooser:
    """A callable returning record numbers in 1..n (latest: relative to latest());
    `key_order`: the shape's, when its keys do not sort as record numbers."""
    if n < 1:
        raise ValueError("key space is empty")
    if spec.type == "uniform":
        return lambda: rng.randint(1, n)
    if spec.type == "zipfian":
        rank = ZipfRanks(n, spec.zipfian_constant, rng).rank
        record = scramble(n)
        return lambda: record(rank())
    if spec.type == "latest":
        rank = ZipfRanks(n, spec.zipfian_constant, rng).rank
        newest = latest if latest is not None else (lambda: n)
        return lambda: max(1, newest() - rank())
    if key_order is None or spec.data_fraction >= 1:
        return _hotspot_numbers(spec, n, rng)
    if n <= EXACT_HOT_LIMIT:
        return _hotspot_exact(spec, n, rng, key_order)
    return _hotspot_hashed(spec, n, rng, key_order)


def hot_count(fraction: float, n: int) -> int:
    return max(1, min(n, math.ceil(n * fraction)))


def _hotspot_numbers(spec: KeyChoice, n: int, rng: random.Random) -> KeyChooser:
    hot = hot_count(spec.data_fraction, n)
    fraction = spec.operation_fraction

    def choose() -> int:
        if hot == n or rng.random() < fraction:
            return rng.randint(1, hot)
        return rng.randint(hot + 1, n)

    return choose


def _hotspot_exact(
    spec: KeyChoice, n: int, rng: random.Random, order: HashedKeyOrder
) -> KeyChooser:
    """Small tables: the ceil(n x f) records with the lowest keys, found by sorting."""
    ranked = sorted(range(1, n + 1), key=order.sort_value)
    count = hot_count(spec.data_fraction, n)
    hot, cold = ranked[:count], ranked[count:] or ranked[:count]
    fraction = spec.operation_fraction
    draw = rng.random

    def choose() -> int:
        pool = hot if draw() < fraction else cold
        return pool[int(draw() * len(pool))]

    return choose


def _hotspot_hashed(
    spec: KeyChoice, n: int, rng: random.Random, order: HashedKeyOrder
) -> KeyChooser:
    """Records whose key sorts below the key space's dataFraction-quantile, by
    rejection: uniform over that set, constant memory, ~1/f hashes per hot draw."""
    threshold = order.quantile(spec.data_fraction)
    value = order.sort_value
    fraction = spec.operation_fraction
    draw = rng.random

    def choose_hot() -> int:
        while True:
            number = int(draw() * n) + 1
            if value(number) < threshold:
                return number

    if fraction >= 1:
        return choose_hot

    def choose() -> int:
        hot = draw() < fraction
        while True:
            number = int(draw() * n) + 1
            if (value(number) < threshold) is hot:
                return number

    return choose
