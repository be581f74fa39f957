"""A manifest check under a DEBUG root logger (the operator run with --verbose)
formats none of cel-python's per-evaluation traces, each of which holds the
whole object checked: they were 60% of the check's CPU."""

from __future__ import annotations

import logging

import pytest

from dbbench_contract.api.admission import check_manifest
from tests.support.manifests import REPO, load


def test_a_check_at_debug_level_logs_no_cel_evaluation_trace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    manifest = load(REPO / "examples" / "quickstart.yaml")
    with caplog.at_level(logging.DEBUG):
        assert not check_manifest(manifest)
    assert not [r.name for r in caplog.records if r.name.startswith("celpy")]
