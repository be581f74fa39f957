"""When `make scale` calls a step settled (pure parts of dbbench_scale.observing)."""

from __future__ import annotations

from typing import Any

from dbbench_scale.observing import steady


def run(name: str, phase: str | None) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"phase": phase} if phase else {}}


def test_a_run_against_the_external_target_is_steady_only_once_its_step_runs() -> None:
    assert not steady(run("r0001-external", None))
    assert not steady(run("r0001-external", "Pending"))
    assert not steady(run("r0001-external", "Provisioning"))  # a slow operator, not a steady state
    assert steady(run("r0001-external", "Running"))
    assert steady(run("r0001-external", "Failed"))  # reported apart, not waited for


def test_the_other_shapes_are_steady_once_they_have_a_phase() -> None:
    assert not steady(run("r0002-deployed", None))
    assert steady(run("r0002-deployed", "Provisioning"))  # its databases never become ready
    assert steady(run("r0003-sharer", "Pending"))  # its nodes are held
