"""The run's results token: HMAC-SHA256 of the run's directory under the service
key, checked in constant time; a token opens its own run's directory only."""

from __future__ import annotations

import hashlib
import hmac

from dbbench_contract.layout import run_prefix
from dbbench_contract.tokens import run_token, series_token, series_token_matches, token_matches

KEY = b"k" * 32


def test_the_token_is_the_hmac_of_the_runs_directory() -> None:
    token = run_token(KEY, "team-a", "nightly", "0b6f-uid")
    expected = hmac.new(KEY, b"team-a/nightly/0b6f-uid", hashlib.sha256).hexdigest()
    assert token == expected
    assert run_prefix("team-a", "nightly", "0b6f-uid") == "team-a/nightly/0b6f-uid"
    assert run_token(KEY, "team-a", "nightly", "0b6f-uid") == token  # the service recomputes it


def test_a_token_matches_its_own_run_only() -> None:
    token = run_token(KEY, "team-a", "nightly", "uid-1")
    assert token_matches(KEY, "team-a", "nightly", "uid-1", token)
    others = [
        ("team-b", "nightly", "uid-1"),  # another namespace
        ("team-a", "nightly-2", "uid-1"),  # another run
        ("team-a", "nightly", "uid-2"),  # the same name, re-created
    ]
    for namespace, name, uid in others:
        assert not token_matches(KEY, namespace, name, uid, token), (namespace, name, uid)
    assert not token_matches(b"another key" * 3, "team-a", "nightly", "uid-1", token)
    assert not token_matches(KEY, "team-a", "nightly", "uid-1", token[:-1])
    assert not token_matches(KEY, "team-a", "nightly", "uid-1", "")


def test_a_series_token_opens_its_series_only_and_no_run() -> None:
    token = series_token(KEY, "team-a", "nightly")
    assert series_token_matches(KEY, "team-a", "nightly", token)
    assert not series_token_matches(KEY, "team-b", "nightly", token)
    assert not series_token_matches(KEY, "team-a", "weekly", token)
    # The run whose directory would spell the same text ("series" namespace).
    assert token != run_token(KEY, "series", "team-a", "nightly")
    assert not token_matches(KEY, "series:team-a", "nightly", "x", token)
