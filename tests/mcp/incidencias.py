"""A support agent over notebook 17's MCP server, shared by the MCP tests and their child.

    python -m tests.mcp.incidencias ALMACEN RUN_ID EFECTOS [--muere-tras N | --muere-dentro TOOL]

As a program it drives the run `RUN_ID` of the SQLite journal `ALMACEN` with the server
started on `EFECTOS` (the server's own record of its effects, which survives a kill). With
`--muere-tras N` it SIGKILLs itself as soon as it receives event N; with `--muere-dentro TOOL`,
as soon as the server answers a call to TOOL (the effect done, its step not completed).
Without either it prints the answer.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from synaptum_lite import Agent, FinalStep, Role, Session, SqliteCheckpointer
from synaptum_lite.integrations.mcp import McpServer, connect
from synaptum_lite.testing import ScriptedGateway, calls, says

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "notebooks" / "propiedades" / "_servidor_17.py"
sys.path.insert(0, str(SERVER.parent))
import _servidor_17 as servidor  # noqa: E402  (the server's own reader of its effects)

PREFIX = "incidencias"
TASK = "Atiende la incidencia INC-7."
PLAN = [
    ("consultar", {"incidencia": "INC-7"}),
    ("asignar", {"incidencia": "INC-7", "persona": "Marta"}),
    ("comentar", {"incidencia": "INC-7", "texto": "Cambiado el tóner."}),
    ("avisar_cliente", {"incidencia": "INC-7", "mensaje": "Resuelta."}),
]
EFFECTS = ["asignar", "comentar", "avisar_cliente"]  # consultar only reads
ANSWER = (
    "INC-7: La impresora de la planta 2 no imprime.; INC-7 asignada a Marta; "
    "comentario añadido a INC-7; aviso enviado al cliente de INC-7"
)


def responder(request: Any) -> Any:
    """The double: the next tool of the plan without a result in the request; then the results."""
    results = [m.content for m in request.messages if m.role is Role.TOOL]
    if len(results) < len(PLAN):
        name, arguments = PLAN[len(results)]
        return calls(f"{PREFIX}__{name}", **arguments)
    return says("; ".join(results))


@asynccontextmanager
async def server(effects: Path, *flags: str) -> AsyncIterator[McpServer]:
    """Notebook 17's server as a real child process, its stderr in a file beside `effects`."""
    with open(effects.with_suffix(".log"), "a", encoding="utf-8") as log:
        async with connect(
            sys.executable, str(SERVER), str(effects), *flags, prefix=PREFIX, errlog=log
        ) as connected:
            yield connected


def session(run_id: str, tools: list[Any], store: Path) -> Session:
    return Session(
        run_id, ScriptedGateway([responder] * 10, tools=tools), SqliteCheckpointer(store)
    )


def agent(tools: list[Any]) -> Agent:
    return Agent("soporte", model="guionizado", instructions="Atiende incidencias.", tools=tools)


def effects_of(effects: Path) -> Counter[str]:
    """How many times the server did each effect (and started), over every process."""
    return Counter(entry["que"] for entry in servidor.leer_apuntes(effects))


class DiesInside(ScriptedGateway):
    """The double, SIGKILLing this process when the server has answered a call to `tool`."""

    def __init__(self, tool: str, tools: list[Any]) -> None:
        super().__init__([responder] * 10, tools=tools)
        self.tool = f"{PREFIX}__{tool}"

    async def call_tool(self, tool: Any, arguments: Any, context: Any) -> Any:
        answer = await super().call_tool(tool, arguments, context)
        if tool.name == self.tool:
            os.kill(os.getpid(), signal.SIGKILL)  # the effect is done; the step never completes
        return answer


async def drive(
    store: Path, run_id: str, effects: Path, die_after: int | None, die_inside: str | None
) -> str | None:
    async with server(effects) as connected:
        received = 0
        sesion = session(run_id, connected.tools, store)
        if die_inside:
            sesion = Session(run_id, DiesInside(die_inside, connected.tools), sesion.checkpointer)
        async for step in agent(connected.tools).run(TASK, session=sesion):
            received += 1
            if received == die_after:
                os.kill(os.getpid(), signal.SIGKILL)  # the event is in the journal
            if isinstance(step, FinalStep):
                return step.output
    return None


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="tests.mcp.incidencias")
    parser.add_argument("store", type=Path)
    parser.add_argument("run_id")
    parser.add_argument("effects", type=Path)
    death = parser.add_mutually_exclusive_group()
    death.add_argument("--muere-tras", type=int, metavar="N")
    death.add_argument("--muere-dentro", metavar="TOOL")
    o = parser.parse_args(argv)
    print(asyncio.run(drive(o.store, o.run_id, o.effects, o.muere_tras, o.muere_dentro)))


if __name__ == "__main__":
    main(sys.argv[1:])
