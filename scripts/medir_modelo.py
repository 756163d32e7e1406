"""Measure the real model behind SYNAPTUM_BASE_URL: tool-call validity, answers, speed, memory.

    python3 scripts/modelo_local.py start
    SYNAPTUM_BASE_URL=http://127.0.0.1:8080/v1 uv run --extra http python scripts/medir_modelo.py

Each try goes through `OpenAICompatibleGateway`, as a notebook's would. A tool call counts as
valid when it names the expected tool and its arguments pass that tool's own schema check
(`Tool.bind`); a call the server could not parse comes back as text and counts as none.
After the tool's result, the model should answer in text, in Spanish (the language of the
instructions and the task; `captura_modelo.language_of` reads it). The server's memory is
read from /proc for the PID that `modelo_local.py` recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Annotated

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.captura_modelo import language_of  # noqa: E402
from synaptum_lite import InvalidToolCall, Message, ModelRequest, Role, tool  # noqa: E402
from synaptum_lite.gateways.http import OpenAICompatibleGateway  # noqa: E402


@tool
def consultar_saldo(cuenta: Annotated[str, "IBAN de la cuenta"]) -> str:
    """Consulta el saldo de una cuenta, en euros."""
    return "4.200,00 €"


@tool
def convertir(
    importe: Annotated[float, "importe en euros"],
    moneda: Annotated[str, "código ISO de la moneda de destino"],
) -> str:
    """Convierte un importe en euros a otra moneda, al cambio del día."""
    return f"{importe * 1.08:.2f} {moneda}"


@tool
def transferir(
    origen: Annotated[str, "IBAN de origen"],
    destino: Annotated[str, "IBAN de destino"],
    importe: Annotated[float, "importe en euros"],
) -> str:
    """Transfiere dinero entre dos cuentas."""
    return f"transferencia T-0001 de {importe:.2f} € hecha"


@tool
def consultar_tiempo(ciudad: Annotated[str, "Nombre de la ciudad"]) -> str:
    """Da el tiempo que hace ahora en una ciudad."""
    return f"{ciudad}: 18 °C, despejado"


@tool
def sumar(a: Annotated[float, "Primer sumando"], b: Annotated[float, "Segundo sumando"]) -> str:
    """Suma dos números."""
    return str(a + b)


@tool
def enviar_correo(
    para: Annotated[str, "dirección del destinatario"],
    texto: Annotated[str, "el cuerpo del correo"],
) -> str:
    """Envía un correo."""
    return f"enviado a {para}"


@tool
def estado_pedido(pedido: Annotated[str, "identificador del pedido"]) -> str:
    """Consulta el estado de un pedido."""
    return f"{pedido}: pendiente de envío"


@tool
def consultar_tarifa(ciudad: Annotated[str, "ciudad del hotel"]) -> str:
    """Devuelve la tarifa por noche del hotel de una ciudad."""
    return f"{ciudad}: 95,00 € la noche"


@tool
def buscar_vuelos(
    destino: Annotated[str, "ciudad de destino"],
    franja: Annotated[str, "mañana, tarde o noche"],
) -> str:
    """Busca vuelos a un destino en una franja del día."""
    return f"TP 1943 a {destino}, 08:05"


BANCO = (
    "Consultas saldos y haces transferencias con las herramientas. "
    "Responde en español, en una frase."
)
#: (instructions, task, the tool expected, the tools offered): twelve distinct requests, in the
#: notebooks' own style. The model runs greedy (--temp 0), so rounds repeat each one.
CASES = [
    (BANCO, "¿Cuánto hay en ES91 2100 0418 45?", consultar_saldo, [consultar_saldo, transferir]),
    (BANCO, "Dime el saldo de la cuenta ES12 0049 1500 0512 3456 7892.", consultar_saldo,
     [consultar_saldo, transferir]),
    (BANCO, "Transfiere 250 € de ES91 2100 0418 45 a ES12 0081 0200 11.", transferir,
     [consultar_saldo, transferir]),
    ("Consultas saldos y conviertes divisas con las herramientas. "
     "Responde en español, en una frase.",
     "¿Cuánto son 4200 euros en dólares?", convertir, [consultar_saldo, convertir]),
    ("Eres un asistente del tiempo. Usa la herramienta.", "¿Qué tiempo hace en Valencia?",
     consultar_tiempo, [consultar_tiempo]),
    ("Eres una calculadora. Usa la herramienta para sumar.", "¿Cuánto es 1234 más 4321?",
     sumar, [sumar]),
    ("Gestionas el correo de la empresa con tus herramientas. Responde en español, en una frase.",
     "Manda el presupuesto a ana@cliente.com.", enviar_correo, [enviar_correo]),
    ("Atiendes consultas de pedidos con la herramienta. Responde en español, en una frase.",
     "¿En qué estado está el pedido A-7?", estado_pedido, [estado_pedido]),
    ("Atiendes consultas de pedidos con la herramienta. Responde en español, en una frase.",
     "Quiero saber si ya han enviado mi pedido B-1022.", estado_pedido, [estado_pedido]),
    ("Calculas presupuestos de hotel con la tarifa de la herramienta.",
     "¿Cuánto cuesta una noche en Lisboa?", consultar_tarifa, [consultar_tarifa]),
    ("Buscas vuelos con la herramienta. Responde en español, en una frase.",
     "Quiero ir a Oporto mañana por la mañana.", buscar_vuelos, [buscar_vuelos]),
    ("Eres un asistente del tiempo. Usa la herramienta.", "¿Llueve ahora en Bilbao?",
     consultar_tiempo, [consultar_tiempo]),
]  # fmt: skip


async def one_try(model: OpenAICompatibleGateway, case: tuple, name: str) -> dict:
    instructions, task, expected, offered = case
    specs = tuple(t.spec for t in offered)
    messages = (Message(Role.SYSTEM, instructions), Message(Role.USER, task))
    started = time.perf_counter()
    first = await model.complete(ModelRequest(name, messages, specs))
    seconds = [time.perf_counter() - started]
    outcome = {"called": bool(first.tool_calls), "valid": False, "text_after": None}
    outcome["seconds"] = seconds
    if len(first.tool_calls) != 1 or first.tool_calls[0].name != expected.name:
        outcome["got"] = first.text or first.tool_calls
        return outcome
    call = first.tool_calls[0]
    try:
        arguments = expected.bind(call.arguments)
    except InvalidToolCall as exc:
        outcome["got"] = str(exc)
        return outcome
    outcome["valid"] = True
    result = expected.function(**arguments)
    messages += (
        Message(Role.ASSISTANT, first.text, tool_calls=(call,)),
        Message(Role.TOOL, result, tool_call_id=call.id),
    )
    started = time.perf_counter()
    second = await model.complete(ModelRequest(name, messages, specs))
    seconds.append(time.perf_counter() - started)
    outcome["text_after"] = bool(second.text) and not second.tool_calls
    outcome["answer"] = second.text
    return outcome


async def streamed(model: OpenAICompatibleGateway, name: str) -> tuple[int, object]:
    instructions, task, _, offered = CASES[0]
    request = ModelRequest(
        name,
        (Message(Role.SYSTEM, instructions), Message(Role.USER, task)),
        tuple(t.spec for t in offered),
    )
    items = [item async for item in model.stream(request)]
    return len(items) - 1, items[-1]


def server_memory() -> str:
    pid_file = Path.home() / ".cache" / "synaptum-lite" / "llama-server.pid"
    try:
        pid = pid_file.read_text().strip()
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, OSError):
        return "unknown (no llama-server PID recorded by modelo_local.py)"
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return f"RSS {fields['VmRSS'].strip()}, peak {fields['VmHWM'].strip()}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="tries per case (12 cases)")
    options = parser.parse_args()
    model = OpenAICompatibleGateway.from_env()
    name = model.model or "modelo"
    outcomes = []
    for _ in range(options.rounds):
        for case in CASES:
            outcome = await one_try(model, case, name)
            outcomes.append(outcome)
            if not outcome["valid"]:
                print(f"  invalid: {case[1]!r} -> {outcome.get('got')!r}")
            elif not outcome["text_after"]:
                print(f"  no text after the result: {case[1]!r} -> {outcome.get('answer')!r}")
            elif language_of(outcome["answer"]) != "es":
                print(f"  not Spanish: {case[1]!r} -> {outcome['answer']!r}")
    called = sum(o["called"] for o in outcomes)
    valid = sum(o["valid"] for o in outcomes)
    answered = sum(bool(o["text_after"]) for o in outcomes)
    spanish = sum(bool(o["text_after"]) and language_of(o["answer"]) == "es" for o in outcomes)
    seconds = [s for o in outcomes for s in o["seconds"]]
    fragments, final = await streamed(model, name)
    print(f"server: {model.base_url}")
    print(f"answers that are a tool call (parsed by the server): {called}/{len(outcomes)}")
    print(f"... to the expected tool, with arguments its schema accepts: {valid}/{len(outcomes)}")
    print(f"text answer after the tool result: {answered}/{valid}")
    print(f"... of them in Spanish: {spanish}/{answered}")
    print(
        f"seconds per call: mean {statistics.mean(seconds):.2f}, "
        f"median {statistics.median(seconds):.2f}, max {max(seconds):.2f} "
        f"over {len(seconds)} calls"
    )
    print(f"streamed: {fragments} fragments, then {final!r}")
    print(f"server memory: {server_memory()}")


if __name__ == "__main__":
    asyncio.run(main())
