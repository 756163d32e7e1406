"""DBOS with its SQLite system database: the workload as one workflow whose every model call
and every tool call is a step (`@DBOS.step()`), so each step's output is checkpointed before
the next step starts, the guarantee our journal gives. Runs in an environment of its own
(`benchmarks.anchors`).

The run is the workflow id `r`. A fresh store starts it with that id; a store that holds it
unfinished is resumed the way DBOS resumes one: `DBOS.launch()` recovers the workflows this
executor left pending (as a restarted process does), and `drive` waits for its result. A
finished workflow returns its recorded result. The steps wait for `drive` to hand them the
workload, so a workflow recovered at launch calls nothing before the clock of `drive` runs.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from dbos import DBOS, SetWorkflowID

from benchmarks.workload import Workload, sqlite_bytes

_work: Workload | None = None
_ready = threading.Event()


def _workload() -> Workload:
    _ready.wait()  # a workflow recovered at launch starts before `drive` hands it the workload
    assert _work is not None
    return _work


@DBOS.step()
def model(done: int) -> list[Any]:
    return list(_workload().answer(done))


@DBOS.step()
def tool(n: int) -> str:
    return _workload().result(n)


@DBOS.workflow()
def agent(n: int) -> str:
    done = 0
    while True:
        text, argument = model(done)
        if argument is None:
            return text
        tool(argument)
        done += 1


async def open(store: str) -> str:
    _ready.clear()
    DBOS(
        config={
            "name": "bench",
            "system_database_url": f"sqlite:///{store}",
            "run_admin_server": False,
        }
    )
    DBOS.launch()  # recovers a workflow left pending here: a resume
    return store


async def drive(handle: str, work: Workload) -> int:
    # DBOS's synchronous calls refuse to run beside an event loop: they run in a thread
    return await asyncio.to_thread(_drive, work)


def _drive(work: Workload) -> int:
    global _work
    _work = work
    _ready.set()
    if DBOS.get_workflow_status("r") is None:
        with SetWorkflowID("r"):
            started = DBOS.start_workflow(agent, work.n)
    else:
        started = DBOS.retrieve_workflow("r")
    started.get_result()
    return max(work.model_calls + work.tool_runs, 1)  # a finished workflow returns its result


async def close(handle: str) -> None:
    DBOS.destroy()


stored_bytes = sqlite_bytes
