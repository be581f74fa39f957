"""Seeded key choosers over record numbers 1..n (YCSB's request distributions).

Each chooser owns a random.Random seeded by the caller, so a worker's sequence
of keys is reproducible. They are pure Python and O(1) per draw.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from dbbench_runner.config import Distribution
from dbbench_runner.datasets.base import splitmix64

# Above this many items zeta(n) is extended by the Euler-Maclaurin integral
# instead of summed term by term (bounded start-up time at any scale).
ZETA_EXACT_LIMIT = 200_000

KeyChooser = Callable[[], int]


def zeta(n: int, theta: float) -> float:
    """sum_{i=1..n} 1/i^theta, exact up to ZETA_EXACT_LIMIT terms, then approximated."""
    exact = min(n, ZETA_EXACT_LIMIT)
    total = math.fsum(1.0 / (i**theta) for i in range(1, exact + 1))
    if n > exact:
        a, b = float(exact), float(n)
        integral = (b ** (1 - theta) - a ** (1 - theta)) / (1 - theta)
        total += integral + 0.5 * (b**-theta - a**-theta)
    return total


class Zipfian:
    """Gray et al.'s zipfian generator over ranks 0..n-1 (rank 0 most popular)."""

    def __init__(self, n: int, theta: float, rng: random.Random) -> None:
        self._n = n
        self._theta = theta
        self._rng = rng
        self._zetan = zeta(n, theta)
        zeta2 = zeta(2, theta)
        self._alpha = 1.0 / (1.0 - theta)
        self._eta = (1 - (2.0 / n) ** (1 - theta)) / (1 - zeta2 / self._zetan) if n > 1 else 0.0

    def rank(self) -> int:
        u = self._rng.random()
        uz = u * self._zetan
        if uz < 1.0 or self._n == 1:
            return 0
        if uz < 1.0 + 0.5**self._theta:
            return 1
        value = int(self._n * (self._eta * u - self._eta + 1) ** self._alpha)
        return min(value, self._n - 1)


def recency_ranks(spec: Distribution, n: int, rng: random.Random) -> Callable[[], int]:
    """Ranks 0 (newest) .. n-1 for the latest distribution; the caller maps them to records."""
    zipf = Zipfian(n, spec.zipfian_constant, rng)
    return zipf.rank


def make_chooser(
    spec: Distribution, n: int, rng: random.Random, latest: Callable[[], int] | None = None
) -> KeyChooser:
    """A callable returning record numbers in 1..n (latest: relative to latest())."""
    if n < 1:
        raise ValueError("key space is empty")
    if spec.type == "uniform":
        return lambda: rng.randint(1, n)
    if spec.type == "zipfian":
        zipf = Zipfian(n, spec.zipfian_constant, rng)
        # Scrambled (as YCSB does) so popular keys are spread over the range.
        return lambda: splitmix64(zipf.rank()) % n + 1
    if spec.type == "latest":
        zipf = Zipfian(n, spec.zipfian_constant, rng)
        newest = latest if latest is not None else (lambda: n)
        return lambda: max(1, newest() - zipf.rank())
    return _hotspot(spec, n, rng)


def _hotspot(spec: Distribution, n: int, rng: random.Random) -> KeyChooser:
    hot = max(1, min(n, math.ceil(n * spec.data_fraction)))
    fraction = spec.operation_fraction

    def choose() -> int:
        if hot == n or rng.random() < fraction:
            return rng.randint(1, hot)
        return rng.randint(hot + 1, n)

    return choose
