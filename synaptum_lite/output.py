"""Typed output: an agent's final answer read into the dataclass its caller asked for.

The model is told the dataclass's JSON schema; its final text is parsed and checked against
it. An invalid answer is not an error of the library: the loop shows the problem to the model
in a new turn. The journal keeps the text as the model wrote it; the typed value is rebuilt
from it whenever a closed run is returned.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from .errors import ConfigurationError, InvalidToolCall, ToolDefinitionError
from .events import FinalStep
from .tools import schema_of


class OutputFormat:
    """What an agent's `output` asks of its answers: a dataclass's schema and its parser.

    With `output=None` every answer is text, taken as it is. Raises `ConfigurationError` for
    an `output` that is not a dataclass type, or has a field with no JSON schema.
    """

    def __init__(self, agent: str, output: type | None) -> None:
        self.schema: dict[str, Any] | None = None
        self._parse: Callable[[Any], Any] | None = None
        if output is None:
            return
        if not (dataclasses.is_dataclass(output) and isinstance(output, type)):
            raise ConfigurationError(
                f"agent {agent!r}: output must be a dataclass type, got {output!r}"
            )
        try:
            self.schema, self._parse = schema_of(output)
        except ToolDefinitionError as exc:
            raise ConfigurationError(
                f"agent {agent!r}: output={output.__name__} cannot be described: {exc.problem}"
            ) from None

    def instructions(self, instructions: str) -> str:
        """The system prompt: the agent's instructions, and the schema when there is one."""
        if self.schema is None:
            return instructions
        schema = json.dumps(self.schema, ensure_ascii=False, sort_keys=True)
        return (
            f"{instructions}\n\nAnswer with only a JSON object that matches this schema: {schema}"
        )

    def read(self, text: str | None) -> tuple[Any, str | None]:
        """The caller's output from the final text, or the problem to tell the model.

        Never raises for what the model wrote (its answer is journaled, so an exception here
        would be raised again on every resume): text that is not JSON, JSON nested too deeply
        to read, a value that does not fit the schema, or one the dataclass's own checks
        (`__post_init__`) refuse with `ValueError` or `TypeError` are all problems to tell.
        """
        if self._parse is None:
            return text, None
        body = (text or "").strip()
        if body.startswith("```"):
            body = body.strip("`").removeprefix("json").strip()
        try:
            value = json.loads(body)
        except ValueError as exc:
            problem = f"it is not JSON: {exc}"
        except RecursionError:  # a model's `[[[[...`: journaled, so it must not raise on resume
            problem = "it nests too deeply to read"
        else:
            try:
                return self._parse(value), None
            except InvalidToolCall as exc:
                problem = exc.problem
            except RecursionError:
                problem = "it nests too deeply to read"
            except (TypeError, ValueError) as exc:  # the dataclass's own checks refused it
                problem = f"{type(exc).__name__}: {exc}"
        return (
            None,
            f"Your answer is not valid ({problem}). "
            "Answer again with only a JSON object that matches the schema.",
        )

    def typed(self, final: FinalStep) -> FinalStep:
        """A closed run's final step as replayed, its output read again from its text."""
        if self._parse is None or final.text is None or final.reason is not None:
            return final.as_replayed()
        output, _ = self.read(final.text)
        return dataclasses.replace(final, output=output, replayed=True)
