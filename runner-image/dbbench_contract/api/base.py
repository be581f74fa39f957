"""Shared building blocks of the API models: the frozen camelCase base class,
cross-field rules that are enforced twice (CEL in the CRD, Python in
``parse_spec``), and the ``Problem`` a user is shown."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

# The pydantic error type of a repeated list item; `parse_spec` appends the
# item's index to the field path, as the API server reports it.
DUPLICATE_VALUE = "duplicate_value"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a spec: ``field`` is a path such as
    ``spec.targets[0].shards``; ``message`` says what to change."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class SpecError(ValueError):
    """The spec could not be parsed; ``problems`` lists every offending field."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(str(p) for p in problems))


@dataclass(frozen=True)
class Rule:
    """A cross-field rule of one API object.

    ``cel`` is evaluated by the API server with ``self`` bound to the object;
    ``holds`` is the same predicate in Python, so the operator rejects what the
    API server would (an old CRD, or a spec written around admission).
    ``field`` is the offending field relative to the object (``shards``) and
    becomes the CEL ``fieldPath``; empty means the object itself.
    ``message_expression`` is an optional CEL expression that names values;
    ``describe`` is its Python twin (required with it), so that both enforcers
    show the user the same text.
    """

    cel: str
    message: str
    holds: Callable[[Any], bool]
    field: str = ""
    reason: str = "FieldValueInvalid"
    message_expression: str | None = None
    describe: Callable[[Any], str] | None = None

    def __post_init__(self) -> None:
        if (self.message_expression is None) != (self.describe is None):
            raise ValueError(f"rule {self.cel!r}: message_expression and describe go together")

    def message_for(self, model: Any) -> str:
        """What the API server says when the rule fails on this object."""
        return self.describe(model) if self.describe is not None else self.message

    def to_cel(self) -> dict[str, str]:
        rule = {"rule": self.cel, "message": self.message, "reason": self.reason}
        if self.field:
            rule["fieldPath"] = "." + self.field
        if self.message_expression is not None:
            rule["messageExpression"] = self.message_expression
        return rule


def _schema_extra(schema: dict[str, Any], cls: type[Any]) -> None:
    # Only the class's own rules: a subclass must not inherit its parent's.
    rules: tuple[Rule, ...] = cls.__dict__.get("RULES", ())
    if rules:
        schema["x-kubernetes-validations"] = [r.to_cel() for r in rules]


class ApiModel(BaseModel):
    """Frozen, camelCase on the wire, snake_case in Python, unknown keys refused."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        # camelCase however it is dumped, also inside a file's model (a run
        # summary's spec and results, a step file's phase).
        serialize_by_alias=True,
        frozen=True,
        extra="forbid",
        json_schema_extra=_schema_extra,
    )

    RULES: ClassVar[tuple[Rule, ...]] = ()


class StatusModel(ApiModel):
    """A part of the status: written by the operator, read back by it, by the CLI
    and from the run's summary.json (phase results), maybe by a newer program:
    keys it does not know are ignored rather than refused, as in every stored
    file (``dbbench_contract.wire.StoredModel``)."""

    model_config = ConfigDict(extra="ignore")


def wire_default(model: type[ApiModel]) -> dict[str, Any]:
    """The model's all-defaults instance as the CRD ``default`` of a field.

    Kubernetes validates a default as written (nested defaults are not applied
    to it first), so ``default: {}`` would fail rules that read defaulted keys.
    """
    return {"default": model().model_dump(by_alias=True, exclude_none=True, mode="json")}


def refuse_duplicates(keys: list[Any], shown: Callable[[Any], str]) -> None:
    """Raise for the first repeated key, naming it as the API server does
    for `x-kubernetes-list-type: set/map`: `<list>[i]: Duplicate value: ...`."""
    seen: set[Any] = set()
    for index, key in enumerate(keys):
        if key in seen:
            raise PydanticCustomError(
                DUPLICATE_VALUE, "Duplicate value: {value}", {"index": index, "value": shown(key)}
            )
        seen.add(key)
