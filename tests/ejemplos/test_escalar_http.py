# ruff: noqa: B007  (the page shows `async for paso in …: ...`, as a reader writes it)
"""El ejemplo de la sección «Un almacén detrás de HTTP» de la página Escalar (docs/escalar.md
incluye su sección tal cual), corrido contra un servidor de almacén de verdad: un proceso
aparte sobre un fichero SQLite (tests/core/http_store.py)."""

import asyncio
import sqlite3
from typing import Annotated

from synaptum_lite import Agent, Role, tool
from synaptum_lite.testing import ScriptedGateway, calls, says
from tests.core.http_store import StoreServer

EJECUCIONES = []


@tool
def consultar_saldo(cuenta: Annotated[str, "IBAN de la cuenta"]) -> str:
    """Consulta el saldo de una cuenta."""
    EJECUCIONES.append(cuenta)
    return f"{cuenta}: 4.200,00 €"


def responder(peticion):
    if any(m.role is Role.TOOL for m in peticion.messages):
        return says("El saldo es de 4.200,00 €.")
    return calls("consultar_saldo", cuenta="ES91 2100 0418 45")


agente = Agent("cajero", model="guionizado", instructions="...", tools=[consultar_saldo])
tarea = "¿Cuánto hay en ES91 2100 0418 45?"


def test_un_run_conducido_a_traves_del_servidor_queda_en_su_fichero(tmp_path, monkeypatch):
    servidor = StoreServer(tmp_path / "runs.db", log=tmp_path / "servidor.log")
    monkeypatch.setenv("SYNAPTUM_STORE_TOKEN", servidor.token)
    URL = servidor.url  # noqa: N806 (the page's name)
    gateway = ScriptedGateway([responder] * 4, tools=[consultar_saldo])
    try:

        async def conducir():
            # --8<-- [start:conectar]
            import os

            from synaptum_lite import Session
            from synaptum_lite.stores.http_client import HttpCheckpointer

            almacen = HttpCheckpointer(URL, token=os.environ["SYNAPTUM_STORE_TOKEN"])
            sesion = Session("pedido-42", gateway, almacen)
            async for paso in agente.run(tarea, session=sesion):
                ...
            # --8<-- [end:conectar]
            return paso

        final = asyncio.run(conducir())
        otra_vez = asyncio.run(conducir())  # cerrado: devuelve su paso final, no paga nada
    finally:
        servidor.stop()
    assert final.output == otra_vez.output == "El saldo es de 4.200,00 €."
    assert gateway.model_calls == 2 and EJECUCIONES == ["ES91 2100 0418 45"]
    with sqlite3.connect(tmp_path / "runs.db") as fichero:  # el servidor lo escribió
        assert fichero.execute("SELECT count(*) FROM events").fetchone()[0] == 7
