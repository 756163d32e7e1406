"""JSON schemas from type hints: what a tool's parameters (and a typed answer) accept.

`type_schema` reads one type hint into a JSON schema and a converter: a function that checks
a JSON value the model sent against the hint and turns it into Python, raising
`InvalidToolCall` naming the first problem found (`convertir.importe must be number, got
'diez'`); the path in it (`convertir.importe[]`) starts with the tool's name. Hints with a
schema: `str`, `bool`, `int`, `float`, `None`, `Literal[...]`, an `Enum`, unions, `list[X]`,
`dict[str, X]`, dataclasses (fields by their own hints), and `Annotated[X, "description"]`.
Any other hint raises `ToolDefinitionError` when the tool is defined, not when it is called.
`schema_of` does the same for a whole dataclass (a typed answer, `output.py`).

A value the model sent is quoted back in errors, cut (`errors.quoted`).
"""

from __future__ import annotations

import dataclasses
import enum
import types
from collections.abc import Callable
from typing import (
    Annotated,
    Any,
    Literal,
    SupportsFloat,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
)

from .errors import InvalidToolCall, ToolDefinitionError, quoted

Converter = Callable[[Any], Any]

_SCALARS: dict[type, tuple[str, tuple[type, ...]]] = {
    str: ("string", (str,)),
    bool: ("boolean", (bool,)),
    int: ("integer", (int,)),
    float: ("number", (int, float)),
}


def _tool_of(where: str) -> str:
    """The tool a schema path names: `convertir.importe[]` → `convertir`."""
    return where.partition(".")[0]


def type_schema(hint: Any, where: str) -> tuple[dict[str, Any], Converter]:
    """The JSON schema of a type hint, and a function that checks and converts a value."""
    origin = get_origin(hint)
    if origin is Annotated:
        inner, *extras = get_args(hint)
        schema, convert = type_schema(inner, where)
        descriptions = [extra for extra in extras if isinstance(extra, str)]
        if descriptions:
            schema = {**schema, "description": " ".join(descriptions)}
        return schema, convert
    if hint in _SCALARS:
        kind, accepted = _SCALARS[hint]
        return {"type": kind}, _check_scalar(where, kind, accepted, hint)
    if hint is type(None) or hint is None:
        return {"type": "null"}, _check_scalar(where, "null", (type(None),), None)
    if origin is Literal:
        values = list(get_args(hint))
        return {"enum": values}, _check_enum(where, values)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        values = [member.value for member in hint]
        check = _check_enum(where, values)
        return {"enum": values}, lambda value: hint(check(value))
    if origin in (Union, types.UnionType):
        options = [type_schema(arg, where) for arg in get_args(hint)]
        return {"anyOf": [schema for schema, _ in options]}, _check_union(where, options)
    if origin is list or hint is list:
        (item,) = get_args(hint) or (Any,)
        if item is Any:
            raise ToolDefinitionError(
                _tool_of(where), f"{where}: say what the list holds (list[str], …)"
            )
        item_schema, item_convert = type_schema(item, f"{where}[]")
        return {"type": "array", "items": item_schema}, _check_list(where, item_convert)
    if origin is dict:
        key, value = get_args(hint) or (None, None)
        if key is not str:
            raise ToolDefinitionError(
                _tool_of(where), f"{where}: only dict[str, …] has a JSON schema"
            )
        value_schema, value_convert = type_schema(value, f"{where}{{}}")
        return {"type": "object", "additionalProperties": value_schema}, _check_dict(
            where, value_convert
        )
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _dataclass_schema(hint, where)
    raise ToolDefinitionError(_tool_of(where), f"{where}: type {hint!r} has no JSON schema")


def _dataclass_schema(cls: type, where: str) -> tuple[dict[str, Any], Converter]:
    hints = get_type_hints(cls, include_extras=True)
    properties: dict[str, Any] = {}
    required: list[str] = []
    converters: dict[str, Converter] = {}
    for item in dataclasses.fields(cls):
        field_schema, field_convert = type_schema(hints[item.name], f"{where}.{item.name}")
        properties[item.name] = field_schema
        converters[item.name] = field_convert
        if item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
            required.append(item.name)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required

    def convert(value: Any) -> Any:
        if not isinstance(value, dict):
            raise InvalidToolCall(
                _tool_of(where), f"{where} must be an object, got {quoted(value)}"
            )
        unknown = sorted(set(value) - set(properties))
        missing = [name for name in required if name not in value]
        if unknown or missing:
            problem = (
                f"unknown field(s) {quoted(unknown)}" if unknown else f"missing field(s) {missing}"
            )
            raise InvalidToolCall(_tool_of(where), f"{where}: {problem}")
        return cls(**{name: converters[name](v) for name, v in value.items()})

    return schema, convert


def _check_scalar(where: str, kind: str, accepted: tuple[type, ...], hint: Any) -> Converter:
    def check(value: Any) -> Any:
        # bool is an int in Python but not in JSON schema
        if isinstance(value, bool) and bool not in accepted or not isinstance(value, accepted):
            raise InvalidToolCall(_tool_of(where), f"{where} must be {kind}, got {quoted(value)}")
        return float(cast(SupportsFloat, value)) if hint is float else value

    return check


def _check_enum(where: str, values: list[Any]) -> Converter:
    def check(value: Any) -> Any:
        if value not in values:
            raise InvalidToolCall(
                _tool_of(where), f"{where} must be one of {values}, got {quoted(value)}"
            )
        return value

    return check


def _check_union(where: str, options: list[tuple[dict[str, Any], Converter]]) -> Converter:
    def check(value: Any) -> Any:
        for _, convert in options:
            try:
                return convert(value)
            except InvalidToolCall:
                continue
        raise InvalidToolCall(
            _tool_of(where), f"{where} got {quoted(value)}, which fits none of its types"
        )

    return check


def _check_list(where: str, item: Converter) -> Converter:
    def check(value: Any) -> Any:
        if not isinstance(value, list):
            raise InvalidToolCall(_tool_of(where), f"{where} must be an array, got {quoted(value)}")
        return [item(v) for v in value]

    return check


def _check_dict(where: str, item: Converter) -> Converter:
    def check(value: Any) -> Any:
        if not isinstance(value, dict):
            raise InvalidToolCall(
                _tool_of(where), f"{where} must be an object, got {quoted(value)}"
            )
        return {k: item(v) for k, v in value.items()}

    return check


def schema_of(cls: type) -> tuple[dict[str, Any], Callable[[Any], Any]]:
    """The JSON schema of a dataclass and a function that checks a JSON value into an instance.

    The function raises `InvalidToolCall` naming the first problem found; building raises
    `ToolDefinitionError` for a field whose type has no JSON schema.
    """
    return _dataclass_schema(cls, "output")
