"""query: field benchmark 2's four queries on indexed4, in round-robin order.

Values are drawn from the phase's distribution over Number's range; the
default hotspot (dataFraction 0.1, operationFraction 1.0) keeps every query in
the first 10% of the range, as the original did.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

from dbbench_runner.config import StepConfig
from dbbench_runner.datasets.indexed4 import NUMBER1_RANGE, NUMBER_RANGE
from dbbench_runner.distributions import make_chooser
from dbbench_runner.operations import Operation, Query


def query_operations(config: StepConfig, rng: random.Random) -> Iterator[Operation]:
    phase = config.phase
    choose = make_chooser(phase.distribution, NUMBER_RANGE, rng)
    secondary = phase.read_preference != "primary"
    for name in itertools.cycle(phase.queries):
        yield Query(
            name,
            number=choose() - 1,
            number1=rng.randrange(NUMBER1_RANGE),
            secondary_ok=secondary,
        )
