"""A driver whose paying tool waits for a file before it returns, holding the run meanwhile.

`python -m tests.core.busy_child STORE RUN_ID RELEASE`: inside the tool it prints `paying`
(and creates `RELEASE.paying`), then waits until the file RELEASE exists (the test creates
it) and returns. Prints `busy RUN_ID` and exits with 4 when another driver holds the run,
`final TEXT` at the end. STORE is a SQLite file, or a PostgreSQL URL with the schema after
`#` (as in `agents.py`). `drive` is also called in process, by threads of the test;
`held_elsewhere` starts it in another process and holds the run while the test runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from synaptum_lite import Agent, Checkpointer, FinalStep, Risk, RunBusy, Session, tool
from synaptum_lite.testing import ScriptedGateway, calls, says

from .agents import open_store

BOUND = 300  # seconds: only ends a hang (the test releases the tool long before)
ROOT = Path(__file__).resolve().parents[2]


def agente(release: Path) -> Agent:
    @tool(risk=Risk.HARD_WRITE)
    async def pagar(importe: float) -> str:
        """Paga un importe."""
        print("paying", flush=True)
        release.with_suffix(".paying").touch()
        deadline = time.monotonic() + BOUND
        while not release.exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return f"pagados {importe:.2f} €" if release.exists() else "never released"

    return Agent("pagador", model="m", instructions="Paga.", tools=[pagar])


async def drive(store: Checkpointer, run_id: str, release: Path) -> str:
    gateway = ScriptedGateway([calls("pagar", importe=10.0), says("pagado")])
    session = Session(run_id, gateway, store)
    try:
        async for step in agente(release).run("Paga 10 €", session=session):
            if isinstance(step, FinalStep):
                return f"final {step.output}"
    except RunBusy as busy:
        return f"busy {busy.run_id}"
    raise AssertionError("the run ended without a final step")


@contextlib.contextmanager
def held_elsewhere(store: str, run_id: str, release: Path) -> Iterator[subprocess.Popen[str]]:
    """A driver of `run_id` in another process, inside its paying tool (so holding the run)
    for the whole block: it printed `paying`. On leaving, its tool is released, and the block
    ends only when that driver has finished the run (`final pagado`)."""
    command = [sys.executable, "-m", "tests.core.busy_child", store, run_id, str(release)]
    owner = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None
        assert owner.stdout.readline() == "paying\n"  # inside its tool, holding the run
        yield owner
    finally:
        release.touch()
        try:
            rest, _ = owner.communicate(timeout=BOUND)
        finally:
            owner.kill()  # a no-op once it has ended
    assert (owner.returncode, rest) == (0, "final pagado\n")


if __name__ == "__main__":
    outcome = asyncio.run(drive(open_store(sys.argv[1]), sys.argv[2], Path(sys.argv[3])))
    print(outcome, flush=True)
    sys.exit(4 if outcome.startswith("busy") else 0)
