"""Tools: `@tool` turns a typed function into a described, declared, validated tool.

A tool's JSON schema comes from its signature (each parameter's type hint, read by `schema.py`),
its description from its docstring, and its `risk` and `idempotent` from what the author
declares: nothing is deduced. A tool that declares nothing is treated as the worst case
(destructive, not idempotent).
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_args, get_type_hints

# the schema machinery lives in schema.py; these names stay importable from here
from .errors import QUOTED as QUOTED
from .errors import InvalidToolCall, ToolDefinitionError, quoted
from .messages import ToolSpec, text_problem
from .schema import Converter as Converter
from .schema import schema_of as schema_of
from .schema import type_schema


class Risk(enum.IntEnum):
    """What a tool can do to the world, ordered from harmless to irreversible."""

    READ = 0
    SOFT_WRITE = 1
    HARD_WRITE = 2
    DESTRUCTIVE = 3


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool may ask for about the step running it.

    `idempotency_key` is stable across retries and resumes of the same step
    (`run_id/step_id`): pass it to an external API that deduplicates, and at-least-once
    execution becomes effectively-once.
    """

    run_id: str
    step_id: str
    attempt: int

    @property
    def idempotency_key(self) -> str:
        return f"{self.run_id}/{self.step_id}"


@dataclass(frozen=True, slots=True, eq=False)
class Tool:
    """A function the model may call, with its description and declarations."""

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., Any]
    risk: Risk
    idempotent: bool
    context_parameter: str | None
    _converters: dict[str, Callable[[Any], Any]]

    @property
    def spec(self) -> ToolSpec:
        """How the tool is shown to the model."""
        return ToolSpec(self.name, self.description, self.parameters)

    def fingerprint(self) -> dict[str, Any]:
        """What about this tool belongs to an agent's configuration."""
        return {
            "description": self.description,
            "parameters": self.parameters,
            "risk": self.risk.name.lower(),
            "idempotent": self.idempotent,
        }

    def bind(self, arguments: Any) -> dict[str, Any]:
        """Validate the model's arguments against the schema and convert them to Python.

        Raises `InvalidToolCall` naming the first problem found.
        """
        if isinstance(arguments, str):  # the model's text, kept because it could not be read
            raise InvalidToolCall(
                self.name,
                f"arguments must be a JSON object, got {quoted(arguments)}, which is not one "
                f"({_json_problem(arguments)})",
            )
        if not isinstance(arguments, dict):
            raise InvalidToolCall(
                self.name, f"arguments must be a JSON object, got {quoted(arguments)}"
            )
        properties = self.parameters["properties"]
        unknown = sorted(set(arguments) - set(properties))
        if unknown:
            raise InvalidToolCall(
                self.name, f"unknown argument(s) {quoted(', '.join(unknown), as_repr=False)}"
            )
        missing = [name for name in self.parameters.get("required", ()) if name not in arguments]
        if missing:
            raise InvalidToolCall(self.name, f"missing required argument(s) {', '.join(missing)}")
        return {name: self._converters[name](value) for name, value in arguments.items()}

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        """Run the function with bound arguments (and the step context, if it asks)."""
        kwargs = dict(arguments)
        if self.context_parameter is not None:
            kwargs[self.context_parameter] = context
        result = self.function(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result


def tool(
    function: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    risk: Risk = Risk.DESTRUCTIVE,
    idempotent: bool = False,
) -> Any:
    """Describe a function as a tool. Use bare (`@tool`) or with declarations.

    `risk` and `idempotent` are declarations: a tool that is safe to run twice says
    `idempotent=True`; undeclared tools are treated as destructive and not idempotent.
    The tool is shown under `name` (by default the function's name), which must be one a
    model API accepts: letters A-Z, digits, `_` and `-`, 1 to 64 of them. Raises
    `ToolDefinitionError` at decoration time for such a name, a `risk` that is not a `Risk`,
    an `idempotent` that is not a bool, a parameter without a type, a type that has no JSON
    schema, or a missing docstring.
    """

    def decorate(fn: Callable[..., Any]) -> Tool:
        if not callable(fn):
            raise ToolDefinitionError(repr(fn), "it is not callable; decorate a function")
        called = _tool_name(fn, name)
        if not isinstance(risk, Risk):
            raise ToolDefinitionError(
                called,
                f"risk={risk!r} is not a Risk; declare one of "
                + ", ".join(f"Risk.{r.name}" for r in Risk),
            )
        if not isinstance(idempotent, bool):
            # a truthy "no" would let a resume run the tool again without asking
            raise ToolDefinitionError(
                called, f"idempotent={idempotent!r} is not True or False; declare a bool"
            )
        return _build(fn, called, risk, idempotent)

    return decorate(function) if function is not None else decorate


#: What a model API accepts as a tool's name (OpenAI's rule; Anthropic's is the same).
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _tool_name(fn: Callable[..., Any], name: Any) -> str:
    """The name a tool is shown under: `name`, or the function's own; one a model API takes."""
    own = getattr(fn, "__name__", None)
    own = own if isinstance(own, str) else repr(fn)
    chosen, where = (own, "its function's name") if name is None else (name, f"name={name!r}")
    if not isinstance(chosen, str) or not TOOL_NAME.fullmatch(chosen):
        raise ToolDefinitionError(
            own,
            f"{where} is not a name a model API accepts (letters A-Z, digits, '_' and '-', 1 to "
            "64 of them); pass one as @tool(name=...)",
        )
    return chosen


def _build(fn: Callable[..., Any], name: str, risk: Risk, idempotent: bool) -> Tool:
    doc = inspect.getdoc(fn)
    if not doc:
        raise ToolDefinitionError(name, "it has no docstring; the model needs a description")
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:  # NameError for an unresolvable forward reference, and kin
        raise ToolDefinitionError(name, f"its annotations cannot be resolved ({exc})") from exc
    properties: dict[str, Any] = {}
    required: list[str] = []
    converters: dict[str, Callable[[Any], Any]] = {}
    context_parameter = None
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:  # a builtin or a class without a Python signature
        raise ToolDefinitionError(
            name, f"its signature cannot be read ({exc}); wrap it in a typed function"
        ) from None
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise ToolDefinitionError(
                name, f"*{parameter.name} cannot be described; name each argument"
            )
        if parameter.name not in hints:
            raise ToolDefinitionError(name, f"parameter {parameter.name!r} has no type annotation")
        hint = hints[parameter.name]
        if hint is ToolContext or ToolContext in get_args(hint):
            context_parameter = parameter.name
            continue
        schema, convert = type_schema(hint, f"{name}.{parameter.name}")
        if parameter.default is parameter.empty:
            required.append(parameter.name)
        else:
            schema = {**schema, "default": _json_default(name, parameter)}
        properties[parameter.name] = schema
        converters[parameter.name] = convert
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    parameters["additionalProperties"] = False
    return Tool(
        name=name,
        description=doc,
        parameters=parameters,
        function=fn,
        risk=risk,
        idempotent=idempotent,
        context_parameter=context_parameter,
        _converters=converters,
    )


def _json_default(name: str, parameter: inspect.Parameter) -> Any:
    try:
        json.dumps(parameter.default)
    except TypeError:
        raise ToolDefinitionError(
            name, f"the default of {parameter.name!r} ({parameter.default!r}) is not a JSON value"
        ) from None
    return parameter.default


def to_result_text(value: Any) -> str:
    """The text a tool's return value becomes in the context window.

    Strings pass as they are; dataclasses and JSON values become compact JSON.
    Raises `TypeError` for anything else, and `ValueError` for what a journal cannot keep
    (NaN or an infinite float, nesting deeper than JSON can be written, a surrogate code point
    in the text); the caller names the step.
    """
    try:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = dataclasses.asdict(value)
        text = (
            value
            if isinstance(value, str)
            else json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        )
    except ValueError as exc:
        circular = "ircular" in str(exc)  # json's "Circular reference detected"
        raise ValueError(
            "it contains itself (a circular reference), which JSON has no form for"
            if circular
            else "it holds NaN or an infinite number, which JSON has no form for"
        ) from None
    except RecursionError:  # a value nested 100,000 deep: said, never a raw RecursionError
        raise ValueError("it nests lists or dicts deeper than JSON can be written") from None
    problem = text_problem(text)
    if problem is not None:
        raise ValueError(problem)
    return text


def _json_problem(text: str) -> str:
    """Why the model's argument text is not a JSON object, in words the model can act on."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not a JSON number")

    try:
        value = json.loads(text, parse_constant=refuse)
    except ValueError as exc:
        return str(exc)
    except RecursionError:  # it would fail every resume again: said, never raised
        return "it nests arrays or objects deeper than can be read"
    return text_problem(json.dumps(value, ensure_ascii=False)) or (
        f"it is a JSON {type(value).__name__}"
    )
