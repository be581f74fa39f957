"""query: field benchmark 2's four queries on indexed4, in round-robin order.

Values are drawn from the phase's distribution over Number's range; the
default hotspot (dataFraction 0.1, operationFraction 1.0) keeps every query in
the first 10% of the range, as the original did.

A query may rightly return nothing (an equality on a Number no record has),
so an empty answer is an error only where the table the plan filled makes it
practically impossible (`must_find`): scan100 on a table with records, and the
others once the rows they can match are so many that an empty answer has a
chance below MISS_BOUND. Number and Number1 are uniform and independent per
record (datasets/indexed4), so the count of matching records is a sum of
independent draws with a mean the workload knows, and the Chernoff bound
P(X <= k) <= e^-mean (e mean / k)^k bounds the chance of k or fewer.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator

from dbbench_runner.config import StepConfig
from dbbench_runner.datasets.indexed4 import NUMBER1_RANGE, NUMBER_RANGE
from dbbench_runner.distributions import make_chooser
from dbbench_runner.operations import Operation, Query

# An empty answer counts as an error only when its chance is below this: at a
# billion queries, a false error once in a thousand runs.
MISS_BOUND = 1e-12
# sortSkip skips 100 rows: it is empty unless more than 100 records match.
SORT_SKIP = 100


def _log_chance_at_most(mean: float, rows: int) -> float:
    """log of an upper bound on P(X <= rows) for X with this mean (Chernoff)."""
    if mean <= rows:
        return 0.0
    if rows == 0:
        return -mean
    return -mean + rows * (1.0 + math.log(mean) - math.log(rows))


def must_find(name: str, number: int, number1: int, records: int) -> bool:
    """Whether `records` indexed4 records make an empty answer an error (pure)."""
    if records <= 0:
        return False
    if name == "scan100":
        return True  # no condition: empty only if the table is
    if name == "indexedEquality":
        mean, rows = records / NUMBER_RANGE, 0
    elif name == "twoFieldProjection":
        mean = records / NUMBER_RANGE * (NUMBER1_RANGE - number1) / NUMBER1_RANGE
        rows = 0
    else:  # sortSkip: Number >= number, sorted, skip 100
        mean, rows = records * (NUMBER_RANGE - number) / NUMBER_RANGE, SORT_SKIP
    return _log_chance_at_most(mean, rows) < math.log(MISS_BOUND)


def query_operations(config: StepConfig, rng: random.Random) -> Iterator[Operation]:
    phase = config.phase
    choose = make_chooser(config.key_choice, NUMBER_RANGE, rng)
    secondary = phase.read_preference != "primary"
    records = config.records_before  # what the table holds when the phase starts
    for name in itertools.cycle(config.queries):
        number = choose() - 1
        number1 = rng.randrange(NUMBER1_RANGE)
        yield Query(
            name,
            number=number,
            number1=number1,
            secondary_ok=secondary,
            must_find=must_find(name, number, number1, records),
        )
