"""El proceso hijo del cuaderno 19: una agencia que delega en un agente remoto (A2A), y que
se mata sin avisar (`comun.mata`: SIGKILL; en Windows, TerminateProcess).

    python _hijo_19.py ALMACEN RUN_ID URL MODELO [--muere-tras N | --muere-al-enviar]

Recorre el run `RUN_ID` del journal `ALMACEN` (un fichero SQLite). La agencia delega en el
agente cuya tarjeta sirve `URL` (el servidor `_servidor_19.py`). Cada llamada al modelo se
apunta en `MODELO`, una línea por llamada, antes de contestar: el apunte sobrevive al kill.

Sin opciones, acaba e imprime la respuesta. Con `--muere-tras N` se mata en cuanto recibe el
evento N del run del padre. Con `--muere-al-enviar`, en cuanto el servidor contesta a
`SendMessage`: el mensaje ya salió y el id de la tarea aún no está en el journal (el hueco
más estrecho, que se provoca aquí envolviendo el envío). Para matarlo *mientras la tarea
remota trabaja*, el cuaderno mira el journal del subrun desde fuera y lo mata él.

El cuaderno y los tests importan este módulo para reanudar con el mismo agente y el mismo doble.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from synaptum_lite import Agent, FinalStep, Risk, Role, Session, SqliteCheckpointer
from synaptum_lite.integrations.a2a import RemoteAgent, remote_agent
from synaptum_lite.testing import ScriptedGateway, calls, says

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # notebooks/, donde vive comun.py
from comun import mata

TAREA = "Organízame un viaje a Oporto el viernes; prefiero salir por la mañana."
ENCARGO = "Busca vuelos a Oporto el viernes por la mañana y recomienda uno."
#: Lo que quien usa el agente remoto declara que puede hacer: solo leer. La tarjeta no lo dice.
RIESGO = Risk.READ
#: Dónde se apunta cada llamada al modelo (None: en ningún sitio).
MODELO: Path | None = None


def responder(peticion: Any) -> Any:
    """El doble de la agencia: delega la búsqueda; con su resultado, contesta."""
    if MODELO is not None:
        with MODELO.open("a", encoding="utf-8") as fichero:
            fichero.write("modelo\n")
    resultado = next((m.content for m in peticion.messages if m.role is Role.TOOL), None)
    if resultado is None:
        return calls("buscador", task=ENCARGO)
    return says(f"Viaje listo. {resultado}")


def llamadas_al_modelo(modelo: Path) -> int:
    return len(modelo.read_text(encoding="utf-8").splitlines()) if modelo.exists() else 0


async def remoto(url: str) -> RemoteAgent:
    """El agente remoto, leído de su tarjeta; el riesgo lo declara quien lo usa.

    `timeout` acota cada petición HTTP: 120 s solo cortan un cuelgue. La cota por defecto,
    10 s, es un tiempo que una petición puede superar en una máquina muy ocupada, y entonces
    el hijo acabaría con un error en vez de morir donde el cuaderno lo mata."""
    return await remote_agent(url, risk=RIESGO, name="buscador", timeout=120)


def agencia(buscador: RemoteAgent) -> Agent:
    return Agent(
        "agencia",
        model="guionizado",
        instructions="Organizas viajes. Para buscar vuelos, delegas en el buscador.",
        delegates=[buscador],
    )


def puerta() -> ScriptedGateway:
    """El doble, siempre: este cuaderno mide muertes de procesos y mensajes, no un modelo."""
    return ScriptedGateway([responder] * 6)


def journal(almacen: Path) -> SqliteCheckpointer:
    # SIGKILL mata el proceso, no el sistema: lo ya entregado al sistema operativo sobrevive
    return SqliteCheckpointer(almacen, durability="normal")


def morir_al_enviar() -> None:
    """Envuelve el envío: el proceso muere con la respuesta del servidor en la mano."""
    from synaptum_lite.integrations import a2a_wire

    enviar = a2a_wire.Rpc.send

    async def enviar_y_morir(self: Any, task: str, *, message_id: str) -> dict[str, Any]:
        await enviar(self, task, message_id=message_id)
        mata(os.getpid())  # el mensaje llegó; su tarea no está en el journal
        raise AssertionError("inalcanzable")

    a2a_wire.Rpc.send = enviar_y_morir  # type: ignore[method-assign]


async def recorrer(almacen: Path, run_id: str, url: str, muere_tras: int | None) -> None:
    sesion = Session(run_id, puerta(), journal(almacen))
    recibidos = 0
    async for paso in agencia(await remoto(url)).run(TAREA, session=sesion):
        recibidos += 1
        if recibidos == muere_tras:
            mata(os.getpid())  # el paso ya está en el journal
        if isinstance(paso, FinalStep):
            print(paso.output)


async def lanzar(almacen: Path, run_id: str, url: str, modelo: Path, *muerte: str) -> Any:
    """Lanza este fichero como un proceso hijo; devuelve el proceso (asyncio)."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(Path(__file__).resolve()),
        str(almacen),
        run_id,
        url,
        str(modelo),
        *muerte,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def esperando(almacen: Path, subrun: str, proceso: Any) -> bool:
    """Espera, leyendo el journal desde otro proceso, a que el subrun esté esperando la
    tarea remota (`GetTask` intentado). False si el hijo acabó antes."""
    from synaptum_lite import load_events

    while proceso.returncode is None:
        eventos = await load_events(journal(almacen), subrun) if almacen.exists() else []
        if any(getattr(e, "call", None) and e.call.name == "GetTask" for e in eventos):
            return True
        try:
            await asyncio.wait_for(proceso.wait(), 0.02)
        except TimeoutError:
            pass
    return False


def main(argv: list[str]) -> None:
    global MODELO
    parser = argparse.ArgumentParser(prog="_hijo_19.py")
    parser.add_argument("almacen", type=Path)
    parser.add_argument("run_id")
    parser.add_argument("url")
    parser.add_argument("modelo", type=Path)
    muerte = parser.add_mutually_exclusive_group()
    muerte.add_argument("--muere-tras", type=int, metavar="N")
    muerte.add_argument("--muere-al-enviar", action="store_true")
    opciones = parser.parse_args(argv)
    MODELO = opciones.modelo
    if opciones.muere_al_enviar:
        morir_al_enviar()
    asyncio.run(recorrer(opciones.almacen, opciones.run_id, opciones.url, opciones.muere_tras))


if __name__ == "__main__":
    main(sys.argv[1:])
