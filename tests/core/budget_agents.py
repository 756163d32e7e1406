"""The agent the budget tests drive: a counter that calls one read-only tool five times, then
answers; six model calls in all, each one measured by the double.

Also run as a child process by the budget's kill test:
`python -m tests.core.budget_agents STORE RUN_ID CALLS LIMIT --die-after-model N`
drives the run under `Budget(total_tokens=LIMIT)` and SIGKILLs itself right after it receives
its N-th completed model step; with `--die-in-model N`, inside its N-th model call instead,
once the double has answered and before the answer is journaled. Each model call the double
answers is written first to the file CALLS (one line each, fsync'ed), so the calls a killed
process paid can be counted by another.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Annotated

from synaptum_lite import Agent, Budget, ModelStep, Phase, Risk, Role, Session, tool
from synaptum_lite.testing import ScriptedGateway, calls, says

from .agents import open_store

TASK = "Cuenta hasta cinco, de uno en uno."
ANSWER = "Contado hasta cinco."
COUNTS = 5
CALLS: Path | None = None
DIE_IN_MODEL: int | None = None


@tool(risk=Risk.READ, idempotent=True)
def contar(numero: Annotated[int, "el número que toca"]) -> str:
    """Cuenta un número."""
    return f"contado el {numero}"


def responder(request):
    """Count the next number until five are counted in the context; then answer."""
    if CALLS is not None:
        with CALLS.open("a") as file:
            file.write("model\n")
            file.flush()
            os.fsync(file.fileno())
        if DIE_IN_MODEL is not None and len(CALLS.read_text().splitlines()) == DIE_IN_MODEL:
            os.kill(os.getpid(), signal.SIGKILL)  # answered, and never journaled
    done = sum(1 for m in request.messages if m.role is Role.TOOL)
    return calls("contar", numero=done + 1) if done < COUNTS else says(ANSWER)


def contador(model: str = "guionizado", delegates=()) -> Agent:
    return Agent(
        "contador",
        model=model,
        instructions="Cuentas con la herramienta, un número cada vez.",
        tools=[contar],
        delegates=delegates,
    )


def double() -> ScriptedGateway:
    return ScriptedGateway([responder] * 20, tools=[contar])


async def drive(store: str, run_id: str, limit: int, die_after_model: int | None) -> None:
    session = Session(run_id, double(), open_store(store), budget=Budget(total_tokens=limit))
    answered = 0
    async for step in contador().run(TASK, session=session):
        if isinstance(step, ModelStep) and step.phase is Phase.COMPLETED:
            answered += 1
            if answered == die_after_model:
                os.kill(os.getpid(), signal.SIGKILL)  # the step is journaled already
    print("finished without dying")


def main(argv: list[str]) -> None:
    global CALLS, DIE_IN_MODEL
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("run_id")
    parser.add_argument("calls", type=Path)
    parser.add_argument("limit", type=int)
    death = parser.add_mutually_exclusive_group(required=True)
    death.add_argument("--die-after-model", type=int)
    death.add_argument("--die-in-model", type=int)
    args = parser.parse_args(argv)
    CALLS, DIE_IN_MODEL = args.calls, args.die_in_model
    asyncio.run(drive(args.store, args.run_id, args.limit, args.die_after_model))


if __name__ == "__main__":
    main(sys.argv[1:])
