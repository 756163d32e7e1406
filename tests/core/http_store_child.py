"""A client of a store server in a process of its own, for the tests that kill one side.

`python -m tests.core.http_store_child URL RUN_ID hold`: holds the run, prints `held`, and
waits for its stdin to close (the test SIGKILLs it first).

`python -m tests.core.http_store_child URL RUN_ID append FROM`: appends one model step at a
time from position FROM on, printing `acked N` (the run's next_seq) after each answer, until
the store fails; then prints `failed ERROR` and exits with 5.

The token comes from SYNAPTUM_STORE_TOKEN, as the server's does.
"""

from __future__ import annotations

import asyncio
import os
import sys

from synaptum_lite import JournalError, ModelResponse, ModelStep, Phase, Usage
from synaptum_lite.stores.http_client import HttpCheckpointer
from synaptum_lite.stores.http_server import ENV_TOKEN

HEADER = {"format": 1, "agent": {"model": "m"}, "task": "t"}


def model_step(run_id: str, position: int) -> ModelStep:
    return ModelStep(
        run_id=run_id,
        step_id=f"{position // 2:06d}-model",
        phase=Phase.COMPLETED if position % 2 else Phase.ATTEMPTED,
        fingerprint="f" * 24,
        response=ModelResponse(text=f"respuesta {position}", usage=Usage(3, 1))
        if position % 2
        else None,
    )


async def hold(store: HttpCheckpointer, run_id: str) -> None:
    async with store.hold(run_id):
        print("held", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


async def append(store: HttpCheckpointer, run_id: str, start: int) -> int:
    await store.start(run_id, HEADER)
    position = start
    while True:
        # a ModelStep's completed event needs its attempted one: two positions share a step
        step = model_step(run_id, position)
        try:
            next_seq = await store.append(run_id, [step])
        except JournalError as exc:
            print(f"failed {type(exc).__name__}", flush=True)
            return 5
        print(f"acked {next_seq}", flush=True)
        position += 1


if __name__ == "__main__":
    checkpointer = HttpCheckpointer(sys.argv[1], token=os.environ[ENV_TOKEN])
    if sys.argv[3] == "hold":
        asyncio.run(hold(checkpointer, sys.argv[2]))
        sys.exit(0)
    sys.exit(asyncio.run(append(checkpointer, sys.argv[2], int(sys.argv[4]))))
