"""`@tool`: schemas from signatures, declarations, and errors at decoration time."""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Literal

import pytest

from synaptum_lite import InvalidToolCall, Risk, ToolContext, ToolDefinitionError, tool


@dataclasses.dataclass
class Direccion:
    calle: str
    numero: int = 1


class Moneda(enum.Enum):
    EUR = "EUR"
    USD = "USD"


def test_the_schema_comes_from_the_signature_and_the_docstring():
    @tool(risk=Risk.SOFT_WRITE, idempotent=True)
    def enviar(
        destino: Annotated[str, "IBAN de destino"],
        importe: float,
        moneda: Moneda,
        urgencia: Literal["normal", "alta"] = "normal",
        etiquetas: list[str] = [],  # noqa: B006 - a JSON default, never mutated
        nota: str | None = None,
        direccion: Direccion | None = None,
        contexto: ToolContext | None = None,
    ) -> str:
        """Envía dinero."""
        return "ok"

    assert enviar.name == "enviar" and enviar.description == "Envía dinero."
    assert (enviar.risk, enviar.idempotent) == (Risk.SOFT_WRITE, True)
    properties = enviar.parameters["properties"]
    assert properties["destino"] == {"type": "string", "description": "IBAN de destino"}
    assert properties["importe"] == {"type": "number"}
    assert properties["moneda"] == {"enum": ["EUR", "USD"]}
    assert properties["urgencia"] == {"enum": ["normal", "alta"], "default": "normal"}
    assert properties["etiquetas"] == {"type": "array", "items": {"type": "string"}, "default": []}
    assert properties["nota"] == {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    assert properties["direccion"]["anyOf"][0] == {
        "type": "object",
        "properties": {"calle": {"type": "string"}, "numero": {"type": "integer"}},
        "required": ["calle"],
        "additionalProperties": False,
    }
    assert enviar.parameters["required"] == ["destino", "importe", "moneda"]
    assert "contexto" not in properties


def test_a_bare_tool_declares_the_worst_case():
    @tool
    def borrar(ruta: str) -> str:
        """Borra un fichero."""
        return ruta

    assert (borrar.risk, borrar.idempotent) == (Risk.DESTRUCTIVE, False)


def test_arguments_are_validated_and_converted():
    @tool
    def mover(direccion: Direccion, veces: int, moneda: Moneda) -> str:
        """Mueve."""
        return ""

    bound = mover.bind({"direccion": {"calle": "Mayor"}, "veces": 2, "moneda": "USD"})
    assert bound == {"direccion": Direccion("Mayor"), "veces": 2, "moneda": Moneda.USD}
    for bad, problem in [
        (
            {"direccion": {"calle": "Mayor"}, "veces": True, "moneda": "EUR"},
            "mover.veces must be integer, got True",
        ),
        (
            {"direccion": {"calle": 1}, "veces": 1, "moneda": "EUR"},
            "mover.direccion.calle must be string",
        ),
        ({"direccion": {}, "veces": 1, "moneda": "EUR"}, "missing field(s) ['calle']"),
        (
            {"veces": 1, "moneda": "EUR", "direccion": {"calle": "x"}, "extra": 1},
            "unknown argument(s) extra",
        ),
        ('{"veces": 1', "arguments must be a JSON object"),
    ]:
        with pytest.raises(InvalidToolCall) as error:
            mover.bind(bad)
        assert problem in str(error.value)


@pytest.mark.parametrize(
    "source, problem",
    [
        ("def f(x) -> str:\n    '''Doc.'''", "parameter 'x' has no type annotation"),
        ("def f(x: int) -> str:\n    pass", "it has no docstring"),
        ("def f(x: set[int]) -> str:\n    '''Doc.'''", "f.x: type set[int] has no JSON schema"),
        ("def f(x: list) -> str:\n    '''Doc.'''", "say what the list holds"),
        ("def f(*xs: int) -> str:\n    '''Doc.'''", "*xs cannot be described"),
        ("def f(x: dict[int, str]) -> str:\n    '''Doc.'''", "only dict[str, …] has a JSON schema"),
    ],
)
def test_what_cannot_be_described_fails_at_decoration_time(source, problem):
    namespace: dict = {}
    exec(source, namespace)
    with pytest.raises(ToolDefinitionError) as error:
        tool(namespace["f"])
    assert problem in str(error.value)
    assert str(error.value).startswith("tool 'f' cannot be described to a model")
