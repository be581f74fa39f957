"""Base models of the wire formats: frozen, snake_case in Python, camelCase on the wire."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    """A document one program writes and another reads.

    Unknown keys are refused: a writer and a reader built from the same
    contract never disagree, and a typo in a hand-written file is named.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict, camelCase keys (what goes into the file)."""
        return self.model_dump(mode="json", by_alias=True)

    @classmethod
    def from_wire(cls, raw: object) -> Self:
        """Parse a decoded document; pydantic's ValidationError names the field."""
        return cls.model_validate(raw)


class StoredModel(WireModel):
    """A document kept on the results claim and read back later, maybe by a newer
    program: keys it does not know are ignored rather than refused, also in
    the API models it holds (a run summary's spec), which refuse them at
    admission. Read it with ``from_wire`` or ``from_json``."""

    model_config = ConfigDict(extra="ignore")

    @classmethod
    def from_wire(cls, raw: object) -> Self:
        return cls.model_validate(raw, extra="ignore")

    @classmethod
    def from_json(cls, data: str | bytes) -> Self:
        return cls.model_validate_json(data, extra="ignore")
