"""El ejemplo de la página Probar (docs/probar.md la incluye tal cual): un agente probado con
el doble, que cuenta lo que se paga y lo que se ejecuta."""

import asyncio
from typing import Annotated

from synaptum_lite import Agent, MemoryCheckpointer, Risk, Role, Session, ToolStep, tool
from synaptum_lite.testing import ScriptedGateway, calls, says

BANCO = []  # lo que la herramienta hizo de verdad


@tool(risk=Risk.HARD_WRITE, idempotent=False)
def transferir(destino: Annotated[str, "IBAN"], importe: Annotated[float, "euros"]) -> str:
    """Transfiere un importe a una cuenta."""
    BANCO.append((destino, importe))
    return f"transferidos {importe:.2f} € a {destino}"


def responder(peticion):
    """Contesta según la petición, como un modelo: pide la transferencia hasta leer su resultado."""
    resultados = [m.content for m in peticion.messages if m.role is Role.TOOL]
    if resultados:
        return says(f"Hecho: {resultados[-1]}.")
    return calls("transferir", destino="ES12", importe=100.0)


agente = Agent(
    "tesorero", model="guionizado", instructions="Haces transferencias.", tools=[transferir]
)


async def una_vuelta(almacen, morir_tras_la_herramienta=False):
    """Conduce el run `run-1` con un doble nuevo; devuelve el doble y la respuesta."""
    doble = ScriptedGateway([responder] * 4, tools=[transferir])
    respuesta = None
    async for paso in agente.run("Manda 100 € a ES12.", session=Session("run-1", doble, almacen)):
        if isinstance(paso, ToolStep) and paso.result is not None and morir_tras_la_herramienta:
            break  # el proceso «muere»: deja de iterar
        if paso.kind == "final":
            respuesta = paso.output
    return doble, respuesta


def test_reanudar_no_repite_la_transferencia_ni_la_inferencia():
    async def probar():
        almacen = MemoryCheckpointer()
        primera, _ = await una_vuelta(almacen, morir_tras_la_herramienta=True)
        segunda, respuesta = await una_vuelta(almacen)
        return primera, segunda, respuesta

    primera, segunda, respuesta = asyncio.run(probar())

    assert (primera.model_calls, primera.tool_calls) == (1, 1)
    assert (segunda.model_calls, segunda.tool_calls) == (1, 0)  # solo el turno que faltaba
    assert BANCO == [("ES12", 100.0)]  # el efecto, una vez
    assert respuesta == "Hecho: transferidos 100.00 € a ES12."
    assert "ES12" in segunda.requests[-1].messages[-1].content  # el doble leyó el resultado
