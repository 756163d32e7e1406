"""El servidor MCP del cuaderno 17: un gestor de incidencias que no escribimos nosotros.

    python _servidor_17.py EFECTOS [--muere-dentro HERRAMIENTA | --calla-dentro HERRAMIENTA]
        [--esquema-nuevo]

Un proceso que habla MCP por stdio (el SDK oficial, `mcp`, de PyPI) y ofrece cuatro
herramientas. Tres dicen de sí mismas lo que hacen con anotaciones (`readOnlyHint`,
`idempotentHint`, `destructiveHint`); la cuarta, `avisar_cliente`, no dice nada.

Cada vez que arranca (con su pid) y cada efecto que hace (con la clave de idempotencia que
trajo la llamada en su `_meta`) se apuntan en `EFECTOS`, una línea JSON por vez, antes de
contestar: el apunte sobrevive a un SIGKILL y lo lee otro proceso. Es
el registro del propio efecto, el que mira una persona cuando el runtime no sabe si ocurrió.

Con `--muere-dentro HERRAMIENTA`, el servidor se mata (`comun.mata`: SIGKILL; en Windows,
TerminateProcess) dentro de esa herramienta, con el efecto hecho y apuntado y sin haber
contestado; con `--calla-dentro HERRAMIENTA`, se queda ahí sin contestar nunca (un servidor
colgado). Con `--esquema-nuevo`, `comentar` pide un argumento más: el mismo servidor, otra
versión, con otro esquema.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # notebooks/, donde vive comun.py
from comun import mata  # noqa: E402  (SIGKILL; en Windows, TerminateProcess)

#: Dónde se apunta cada arranque y cada efecto.
EFECTOS: Path | None = None
#: La herramienta dentro de la cual este proceso se mata, después de su efecto.
MUERE_DENTRO: str | None = None
#: La herramienta dentro de la cual este proceso se queda callado, después de su efecto.
CALLA_DENTRO: str | None = None

#: Dónde trae cada llamada, en su `_meta`, la clave de idempotencia del paso que la hace.
CLAVE = "synaptum-lite/idempotency-key"

#: Las incidencias que el servidor conoce.
INCIDENCIAS = {"INC-7": "La impresora de la planta 2 no imprime."}


def apuntar(
    que: str,
    argumentos: dict | None = None,
    resultado: str | None = None,
    ctx: Context | None = None,
) -> None:
    """Apunta un arranque o un efecto (con la clave de idempotencia que trajo la llamada, si
    trajo una), de forma que sobreviva a un SIGKILL."""
    clave = (ctx.request_context.meta or {}).get(CLAVE) if ctx is not None else None
    if EFECTOS is not None:
        apunte = {"que": que, "argumentos": argumentos, "resultado": resultado, "clave": clave}
        linea = json.dumps(apunte, ensure_ascii=False)
        with EFECTOS.open("a", encoding="utf-8") as fichero:
            fichero.write(linea + "\n")  # al cerrarse, llega al sistema operativo
    if que == MUERE_DENTRO:
        mata(os.getpid())  # el efecto ya ocurrió; no se contesta
    if que == CALLA_DENTRO:
        time.sleep(3600)  # el efecto ya ocurrió; la respuesta no llega


def leer_apuntes(efectos: Path) -> list[dict]:
    """Lo apuntado en `efectos`, en orden."""
    if not efectos.exists():
        return []
    return [json.loads(linea) for linea in efectos.read_text(encoding="utf-8").splitlines()]


Incidencia = Annotated[str, Field(description="El identificador de la incidencia, INC-7")]


def servidor(esquema_nuevo: bool = False) -> MCPServer:
    """El servidor con sus cuatro herramientas; `esquema_nuevo` cambia el de `comentar`.

    Cada una contesta con un texto, sin esquema de salida (`structured_output=False`): el
    cliente no tiene nada que validar contra uno (validarlo le haría importar jsonschema).
    """
    app = MCPServer("incidencias")

    @app.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
    def consultar(incidencia: Incidencia) -> str:
        """Lee una incidencia."""
        if incidencia not in INCIDENCIAS:
            raise ToolError(f"no existe la incidencia {incidencia}")  # isError, para el modelo
        return f"{incidencia}: {INCIDENCIAS[incidencia]}"

    @app.tool(
        annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True),
        structured_output=False,
    )
    def asignar(
        incidencia: Incidencia,
        persona: Annotated[str, Field(description="Quién se ocupa")],
        ctx: Context,
    ) -> str:
        """Asigna la incidencia a una persona (asignarla dos veces a la misma no cambia nada)."""
        resultado = f"{incidencia} asignada a {persona}"
        apuntar("asignar", {"incidencia": incidencia, "persona": persona}, resultado, ctx)
        return resultado

    if esquema_nuevo:

        @app.tool(
            annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=False),
            structured_output=False,
        )
        def comentar(
            incidencia: Incidencia,
            texto: Annotated[str, Field(description="El comentario")],
            ctx: Context,
            visible: Annotated[bool, Field(description="Si lo ve el cliente")] = False,
        ) -> str:
            """Añade un comentario a la incidencia."""
            resultado = f"comentario añadido a {incidencia}"
            apuntar("comentar", {"incidencia": incidencia, "texto": texto}, resultado, ctx)
            return resultado

    else:

        @app.tool(
            annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=False),
            structured_output=False,
        )
        def comentar(
            incidencia: Incidencia,
            texto: Annotated[str, Field(description="El comentario")],
            ctx: Context,
        ) -> str:
            """Añade un comentario a la incidencia."""
            resultado = f"comentario añadido a {incidencia}"
            apuntar("comentar", {"incidencia": incidencia, "texto": texto}, resultado, ctx)
            return resultado

    @app.tool(structured_output=False)
    def avisar_cliente(
        incidencia: Incidencia,
        mensaje: Annotated[str, Field(description="Lo que se le dice al cliente")],
        ctx: Context,
    ) -> str:
        """Envía un aviso al cliente de la incidencia."""
        resultado = f"aviso enviado al cliente de {incidencia}"
        apuntar("avisar_cliente", {"incidencia": incidencia, "mensaje": mensaje}, resultado, ctx)
        return resultado

    return app


def main(argv: list[str]) -> None:
    global EFECTOS, MUERE_DENTRO, CALLA_DENTRO
    parser = argparse.ArgumentParser(prog="_servidor_17.py")
    parser.add_argument("efectos", type=Path)
    parser.add_argument("--muere-dentro", metavar="HERRAMIENTA")
    parser.add_argument("--calla-dentro", metavar="HERRAMIENTA")
    parser.add_argument("--esquema-nuevo", action="store_true")
    opciones = parser.parse_args(argv)
    EFECTOS, MUERE_DENTRO = opciones.efectos, opciones.muere_dentro
    CALLA_DENTRO = opciones.calla_dentro
    apuntar("arranque", {"pid": os.getpid()})  # quién es: el cuaderno comprueba que muere
    servidor(opciones.esquema_nuevo).run("stdio")
    # El cliente cerró stdin: se ha ido. Cada apunte está ya en disco y cada respuesta
    # enviada (el SDK vacía stdout tras cada mensaje), así que el proceso sale ya, sin
    # deshacer uno a uno los módulos del SDK: 0,2 s de CPU que el cuaderno esperaba al
    # salir de cada bloque de `connect`.
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
