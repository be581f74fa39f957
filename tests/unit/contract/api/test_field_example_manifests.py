"""examples/field/: one BenchmarkRun per field experiment (docs/field-benchmarks.md),
each with a header comment saying what it reproduces, a small variant, and a spec
the model admits. On the real control plane:
tests/integration/contract/api/test_field_examples_admitted.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbbench_contract.api import check, parse_spec
from tests.support.manifests import REPO, load

FIELD = sorted((REPO / "examples" / "field").glob("*.yaml"))
SMALL = [p for p in FIELD if "small" in p.name]


def test_every_experiment_has_a_manifest_and_a_small_variant() -> None:
    experiments = {p.name.split("-", 1)[0] for p in FIELD}
    assert experiments == {"1", "2", "3", "4", "5"}
    for path in FIELD:
        if "small" not in path.name:
            assert path.with_name(path.stem + "-small.yaml") in SMALL, path.name


@pytest.mark.parametrize("path", FIELD, ids=lambda p: p.name)
def test_header_says_what_it_reproduces_and_the_spec_is_sound(path: Path) -> None:
    header = [line for line in path.read_text().splitlines() if line.startswith("#")]
    assert len(header) >= 3, f"{path.name}: a header comment says what it reproduces"
    text = " ".join(header)
    if "small" in path.name:
        full = path.name.replace("-small", "")
        assert f"Small variant of {full}" in text, f"{path.name}: name the full experiment"
    else:
        assert "real hardware" in text, f"{path.name}: say the scale to use on real hardware"
        assert path.stem + "-small.yaml" in text, f"{path.name}: name the small variant"
    assert check(parse_spec(load(path)["spec"])) == []
