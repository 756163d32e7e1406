"""A journal on a file system mounted read-only: run by `test_storage_errors.py` inside a
mount namespace of its own.

`python -m tests.core.read_only_child FOLDER write` leaves a closed run and an open one in
FOLDER/runs.db; `... FOLDER read` (after FOLDER is remounted read-only) drives both again and
prints what each answered.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from synaptum_lite import Agent, FinalStep, Session, SqliteCheckpointer, SynaptumError
from synaptum_lite.testing import ScriptedGateway, calls, says
from synaptum_lite.tools import tool


@tool
def consultar(cuenta: str) -> str:
    """Consulta una cuenta."""
    return f"{cuenta}: 4.200,00 €"


def agente() -> Agent:
    return Agent("a", model="m", instructions="i", tools=[consultar])


async def write(store: SqliteCheckpointer) -> None:
    gateway = ScriptedGateway([says("hecho")])
    async for _ in agente().run("t", session=Session("cerrado", gateway, store)):
        pass
    gateway = ScriptedGateway([calls("consultar", cuenta="ES91"), says("fin")])
    async for _ in agente().run("t", session=Session("abierto", gateway, store)):
        break  # the model step is journaled; the run stays open
    await store.close()


async def read(store: SqliteCheckpointer) -> None:
    for run_id in ("cerrado", "abierto"):
        gateway = ScriptedGateway([calls("consultar", cuenta="ES91"), says("fin")])
        try:
            async for step in agente().run("t", session=Session(run_id, gateway, store)):
                if isinstance(step, FinalStep):
                    print(f"{run_id}: final {step.output}, model_calls {gateway.model_calls}")
        except (SynaptumError, OSError) as exc:
            print(f"{run_id}: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    folder, action = Path(sys.argv[1]), sys.argv[2]
    asyncio.run({"write": write, "read": read}[action](SqliteCheckpointer(folder / "runs.db")))
