"""El ejemplo de la página Conceptos (docs/conceptos.md incluye la sección `bucle` tal cual):
un run es un flujo de pasos, uno en cada frontera del bucle."""

import asyncio
from typing import Annotated

from synaptum_lite import Agent, Role, Session, SqliteCheckpointer, tool
from synaptum_lite.testing import ScriptedGateway, calls, says


@tool
def consultar_saldo(cuenta: Annotated[str, "IBAN de la cuenta"]) -> str:
    """Consulta el saldo de una cuenta."""
    return f"{cuenta}: 4.200,00 €"


def responder(peticion):
    if any(m.role is Role.TOOL for m in peticion.messages):
        return says("El saldo es de 4.200,00 €.")
    return calls("consultar_saldo", cuenta="ES91 2100 0418 45")


def test_un_run_entrega_un_paso_en_cada_frontera_del_bucle(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # runs.db se crea aquí
    gateway = ScriptedGateway([responder] * 2, tools=[consultar_saldo])

    async def correr():
        # --8<-- [start:bucle]
        agente = Agent("cajero", model="...", instructions="...", tools=[consultar_saldo])
        sesion = Session("pedido-42", gateway, SqliteCheckpointer("runs.db"))

        async for paso in agente.run("¿Cuánto hay en ES91 2100 0418 45?", session=sesion):
            print(paso.step_id, paso.kind, paso.phase.value)
        # --8<-- [end:bucle]

    asyncio.run(correr())

    assert capsys.readouterr().out.splitlines() == [
        "000000-model model attempted",
        "000000-model model completed",
        "000001-tool tool attempted",
        "000001-tool tool completed",
        "000002-model model attempted",
        "000002-model model completed",
        "000003-final final completed",
    ]
    assert (tmp_path / "runs.db").exists()
