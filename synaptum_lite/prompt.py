"""What an agent tells its model and how the model samples: a named, versioned `Template` for
its instructions, and `Sampling` parameters. Both enter the agent's configuration (the one a
journal records and a resume checks), so a changed template or temperature is refused by name.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigurationError


@dataclass(frozen=True)
class Template:
    """Instructions with a `name` and a `version`: `text` may hold `$variables`, filled from
    `values` by `string.Template`'s safe rules (`$$` is one dollar; a `$name` with no value
    stays as written). The configuration records the name and the version beside the filled
    text: bump the version when you change the text."""

    name: str
    version: str
    text: str
    values: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for what in ("name", "version"):
            if not isinstance(value := getattr(self, what), str) or not value.strip():
                raise ConfigurationError(
                    f"template {self.name!r:.80}: {what} must be a non-empty str, got {value!r:.80}"
                )
        if not isinstance(self.text, str):
            raise ConfigurationError(
                f"template {self.name!r}: text must be a str (the instructions, with "
                f"$variables), got {type(self.text).__name__} {self.text!r:.80}"
            )
        if not isinstance(self.values, Mapping) or not all(map(str.isidentifier, self.values)):
            raise ConfigurationError(
                f"template {self.name!r}: values must map variable names to values, got "
                f"{self.values!r:.80}; pass values={{'name': value}}"
            )

    def render(self) -> str:
        """The text with its variables filled."""
        values = {name: str(value) for name, value in self.values.items()}
        return string.Template(self.text).safe_substitute(values)


@dataclass(frozen=True)
class Sampling:
    """How the model samples its answers, sent with every request: `temperature` (0 to 2),
    `top_p` (above 0, up to 1), `seed` (a whole number; a server that honours it repeats an
    answer). What is left as None is the server's default, and is not sent."""

    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        number = (int, float)
        problem = (
            _bad(self.temperature, number, lambda t: 0 <= t <= 2, "temperature", "from 0 to 2")
            or _bad(self.top_p, number, lambda p: 0 < p <= 1, "top_p", "above 0, up to 1")
            or _bad(self.seed, (int,), lambda _: True, "seed", "a whole number (an int)")
        )
        if problem:
            raise ConfigurationError(f"sampling: {problem}; or None for the server's default")

    def to_json(self) -> dict[str, Any]:
        """The parameters given, as a request's body and a configuration carry them."""
        given = {"temperature": self.temperature, "top_p": self.top_p, "seed": self.seed}
        return {name: value for name, value in given.items() if value is not None}


def _bad(value: Any, kinds: tuple[type, ...], ok: Any, name: str, wanted: str) -> str | None:
    if value is None or (isinstance(value, kinds) and not isinstance(value, bool) and ok(value)):
        return None
    return f"{name} must be {wanted}, got {value!r:.80}"
