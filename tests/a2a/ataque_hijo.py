"""A driver of one remote agent's run, as its own process, for the kill tests of
tests/a2a/test_ataque_a2a.py.

    python -m tests.a2a.ataque_hijo URL STORE RUN_ID   (from the repository's root)

It runs (or resumes) the run RUN_ID of the SQLite journal STORE with the A2A server at URL,
printing each event's step and phase as it receives it.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from synaptum_lite import Risk, Session, SqliteCheckpointer
from synaptum_lite.integrations.a2a import remote_agent
from synaptum_lite.testing import ScriptedGateway


async def main(url: str, store: str, run_id: str) -> None:
    remote = await remote_agent(url, risk=Risk.READ, name="buscador", poll_interval=0.01)
    session = Session(run_id, ScriptedGateway([]), SqliteCheckpointer(Path(store)))
    async for step in remote.run("Busca un vuelo.", session=session):
        print(step.step_id, getattr(getattr(step, "phase", None), "value", "-"), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
