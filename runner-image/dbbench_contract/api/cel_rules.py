"""The CRD's `x-kubernetes-validations` rules, evaluated offline with cel-python
as the API server evaluates them with cel-go: on every node of the (defaulted)
object that carries rules, with `self` typed by the schema (an `integer` is a
CEL int, a `number` a double even when written 1, a map's keys strings), and
each failure reported at the node's path plus the rule's `fieldPath`, with
the rule's `reason` and its `messageExpression` or `message`.

Transition rules (those reading `oldSelf`) do not run on create, so they are
skipped, as the API server skips them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from .apiserver import FieldError, Schema

# cel-python traces each evaluation at DEBUG, its whole activation (the object
# checked) formatted into the message: under an operator run with --verbose
# that was 60% of a manifest check (0.11 s of CPU, 0.04 s without). Its warnings show.
logging.getLogger("celpy").setLevel(logging.INFO)

_REASONS = {
    "FieldValueForbidden": "Forbidden",
    "FieldValueRequired": "Required",
    "FieldValueDuplicate": "Duplicate",
}


@lru_cache(maxsize=1)
def _environment() -> celpy.Environment:
    return celpy.Environment()  # builds the CEL parser: once


@lru_cache(maxsize=512)
def _program(expression: str) -> celpy.Runner:
    env = _environment()
    return env.program(env.compile(expression))


def _scalar(value: bool | str | int | float, schema: Schema) -> celtypes.Value:
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, str):
        return celtypes.StringType(value)
    if schema.get("type") == "number" or isinstance(value, float):
        return celtypes.DoubleType(float(value))
    return celtypes.IntType(value)


def cel_value(value: Any, schema: Schema) -> celtypes.Value:
    """`value` as the API server hands it to CEL: typed by its schema."""
    if schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get("properties"):
        return json_to_cel(value)
    if isinstance(value, (bool, str, int, float)):
        return _scalar(value, schema)
    if isinstance(value, list):
        items = schema.get("items") or {}
        return celtypes.ListType([cel_value(item, items) for item in value])
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        converted: dict[celtypes.Value, celtypes.Value] = {}
        for key, item in value.items():
            sub = properties.get(key, extra if isinstance(extra, Mapping) else {})
            converted[celtypes.StringType(key)] = cel_value(item, sub)
        return celtypes.MapType(converted)
    return json_to_cel(value)


def _failure(rule: Mapping[str, Any], node: Schema, path: str, self_value: Any) -> FieldError:
    field_path = str(rule.get("fieldPath") or "").lstrip(".")
    # A rule on the object itself, with no fieldPath: the API server names no field.
    where = (f"{path}.{field_path}" if field_path else path) or "<nil>"
    message = rule.get("message") or f"failed rule: {rule['rule']}"
    if rule.get("messageExpression"):
        try:
            evaluated = _program(rule["messageExpression"]).evaluate({"self": self_value})
        except CELEvalError:
            evaluated = None
        if isinstance(evaluated, str) and evaluated.strip():
            message = str(evaluated)
    kind = _REASONS.get(str(rule.get("reason") or ""), "Invalid")
    shown = node.get("type") or ""
    if kind in ("Forbidden", "Required"):
        return FieldError(kind, where, message)
    return FieldError(kind, where, "" if kind == "Duplicate" else message, shown)


def rule_errors(value: Any, schema: Schema, path: str = "") -> Iterator[FieldError]:
    """Every rule that does not hold, walking the object as the API server does."""
    rules = [r for r in schema.get("x-kubernetes-validations") or () if "oldSelf" not in r["rule"]]
    if rules and value is not None:
        self_value = cel_value(value, schema)
        for rule in rules:
            try:
                holds = _program(rule["rule"]).evaluate({"self": self_value})
            except CELEvalError as exc:
                yield FieldError("Invalid", path, f"{exc} evaluating rule: {rule['rule']}", "")
                continue
            if not (isinstance(holds, (bool, celtypes.BoolType)) and bool(holds)):
                yield _failure(rule, schema, path, self_value)
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key)
            if sub is not None:
                yield from rule_errors(item, sub, f"{path}.{key}" if path else key)
            elif isinstance(extra, Mapping):
                yield from rule_errors(item, extra, f"{path}[{key}]")
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            yield from rule_errors(item, schema["items"], f"{path}[{index}]")
