"""The wire's base models: snake_case in Python, camelCase in the files; a document
one program writes and another reads refuses unknown keys, a stored one (read back
later, maybe by a newer program) ignores them; both are frozen."""

from __future__ import annotations

import pydantic
import pytest

from dbbench_contract.wire import StoredModel, WireModel


class Handed(WireModel):
    records_per_second: float
    pod_index: int = 0


class Kept(StoredModel):
    records_per_second: float


def test_python_names_are_snake_case_and_the_wire_camel_case() -> None:
    sent = Handed(records_per_second=2.5, pod_index=3)
    assert sent.to_wire() == {"recordsPerSecond": 2.5, "podIndex": 3}
    assert Handed.from_wire(sent.to_wire()) == sent
    # Written by hand with the Python names: read alike.
    assert Handed.from_wire({"records_per_second": 2.5, "pod_index": 3}) == sent


def test_a_handed_document_refuses_an_unknown_key_naming_it() -> None:
    with pytest.raises(pydantic.ValidationError, match="recordsPerSecnd"):
        Handed.from_wire({"recordsPerSecond": 1.0, "recordsPerSecnd": 2.0})


def test_a_stored_document_ignores_keys_a_newer_program_added() -> None:
    kept = Kept.from_wire({"recordsPerSecond": 1.0, "addedLater": {"x": 1}})
    assert kept.to_wire() == {"recordsPerSecond": 1.0}


def test_documents_are_frozen() -> None:
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        Handed(records_per_second=1.0).records_per_second = 2.0  # type: ignore[misc]
