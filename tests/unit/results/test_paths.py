"""What paths a run may name (pure): everything else is refused before any I/O."""

from __future__ import annotations

import pytest

from dbbench_contract.tokens import run_token, token_matches
from dbbench_results.paths import PathRefusedError, RunId, relative, step_dir


@pytest.mark.parametrize(
    "path",
    [
        "../other-run/summary.json",
        "a/../../b",
        "/etc/passwd",
        "a//b",
        "./a",
        ".hidden",
        "a\\b",
        "a\x00b",
        "-rf",
        "x/" * 11 + "y",
        "",
    ],
)
def test_refused_paths(path: str) -> None:
    with pytest.raises(PathRefusedError):
        relative(path)


def test_accepted_paths_keep_their_segments() -> None:
    assert str(relative("db/load/1/pod-0/histograms/insert.hlog")) == (
        "db/load/1/pod-0/histograms/insert.hlog"
    )
    assert str(step_dir("db", "load", "1")) == "db/load/1"
    with pytest.raises(PathRefusedError):
        step_dir("db", "load", "one")


@pytest.mark.parametrize(
    ("ns", "name", "uid"),
    [("Team", "run", "u1"), ("team", "Run_1", "u1"), ("team", "run", "../x"), ("..", "r", "u")],
)
def test_run_identity_is_kubernetes_names(ns: str, name: str, uid: str) -> None:
    with pytest.raises(PathRefusedError):
        RunId.parse(ns, name, uid)


def test_token_opens_exactly_one_run() -> None:
    key = b"k" * 32
    token = run_token(key, "team", "run-a", "uid-1")
    assert token_matches(key, "team", "run-a", "uid-1", token)
    assert not token_matches(key, "team", "run-b", "uid-1", token)
    assert not token_matches(key, "team", "run-a", "uid-2", token)
    assert not token_matches(key, "other", "run-a", "uid-1", token)
    assert not token_matches(b"x" * 32, "team", "run-a", "uid-1", token)
