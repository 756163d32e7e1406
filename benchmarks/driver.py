"""The child side of the durable-run benchmark: one operation on one contender, in a process of
its own, under that contender's interpreter. Standard library only (besides the contender).

    python -m benchmarks.driver CONTENDER OPERATION --n N --store STORE

CONTENDER names a module of `benchmarks/contenders/`. STORE is a file path, or, for a
contender that journals in PostgreSQL, `URL#SCHEMA`. Operations (the run is always `r`):

- `run`      run the workload to its end in a fresh store; close the store; measure the bytes
             it holds; reopen it and time returning the closed run (the store is opened and
             warmed up outside the clock, as a long-lived worker would have it).
- `kill`     run the workload and block inside the model call of turn N/2 + 1, after saying
             ``paused``: the parent SIGKILLs this process there.
- `resume`   resume that run to its end; time from the resume (opening the store included)
             to the first call this process makes.
- `race`     like `resume`, but say ``ready`` first and start only when a line arrives on
             stdin, so that two racers start together; never raises, reports its outcome.
- `first`    like `resume`, but end the process at its first call, before it is answered:
             the time to it, the memory the process held just before opening the store and its
             peak from there (`workload.reset_peak_memory`), and the bytes the store held (what a
             long run needs, without running its second half).
- `floor`    the least work our format asks of a resume of `r` (`contenders.lite.resume_floor`):
             only for a contender that defines `resume_floor`.
- `bytes`    the bytes a store holds. `discard` removes what a PostgreSQL store created.

The result is one JSON object on the last line of stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import sys
import time
from typing import Any, Protocol

from benchmarks.workload import Workload, peak_memory_kb, reset_peak_memory


class Contender(Protocol):
    """What a module of `benchmarks/contenders/` provides."""

    async def open(self, store: str) -> Any: ...  # the store, opened and warmed up

    async def drive(self, handle: Any, work: Workload) -> int: ...  # run or resume `r`; steps seen

    async def close(self, handle: Any) -> None: ...

    def stored_bytes(self, store: str) -> int: ...


async def run(contender: Contender, store: str, n: int) -> dict[str, Any]:
    work = Workload(n)
    handle = await contender.open(store)
    cpu, wall = time.process_time(), time.perf_counter()
    await contender.drive(handle, work)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    await contender.close(handle)
    stored = contender.stored_bytes(store)

    again = Workload(n)
    handle = await contender.open(store)
    started = time.perf_counter()
    steps = await contender.drive(handle, again)
    closed = time.perf_counter() - started
    await contender.close(handle)
    if again.model_calls or again.tool_runs:
        raise SystemExit(
            f"the closed run called the model {again.model_calls}× and the tool {again.tool_runs}×"
        )
    return {
        "cpu_per_step_s": cpu / n,
        "wall_s": wall,
        "bytes": stored,
        "model_calls": work.model_calls,
        "tool_runs": work.tool_runs,
        "closed_run_s": closed,
        "closed_run_steps": steps,
    }


async def kill(contender: Contender, store: str, n: int) -> dict[str, Any]:
    work = Workload(n, pause_before_turn=n // 2)
    handle = await contender.open(store)
    await contender.drive(handle, work)
    raise SystemExit(f"the run ended without reaching turn {n // 2 + 1}")


async def resume(
    contender: Contender, store: str, n: int, *, racing: bool = False
) -> dict[str, Any]:
    work = Workload(n)
    if racing:
        print("ready", flush=True)
        sys.stdin.readline()
    started = time.perf_counter()
    outcome = "finished"
    try:
        handle = await contender.open(store)
        await contender.drive(handle, work)
        await contender.close(handle)
    except Exception as exc:  # a racer reports how it ended, whatever that is
        if not racing:
            raise
        outcome = type(exc).__name__
    return {
        "first_call_s": None if work.first_call_at is None else work.first_call_at - started,
        "model_calls": work.model_calls,
        "tool_runs": work.tool_runs,
        "outcome": outcome,
    }


async def first(contender: Contender, store: str, n: int) -> dict[str, Any]:
    work = Workload(n)
    journal_bytes = contender.stored_bytes(store)
    # what it holds before opening: the interpreter, the contender's imports and the workload
    before = reset_peak_memory() or peak_memory_kb()
    started = time.perf_counter()

    def report() -> None:  # at the first call, in whatever thread the contender makes it
        result = {
            "first_call_s": time.perf_counter() - started,
            "peak_memory_kb": peak_memory_kb(),
            "memory_before_kb": before,
            "journal_bytes": journal_bytes,
        }
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
        os._exit(0)  # nothing after the first call is measured, and nothing may run on

    work.at_first_call = report
    handle = await contender.open(store)
    await contender.drive(handle, work)
    raise SystemExit("the resume ended without making a call")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("contender")
    parser.add_argument(
        "operation",
        choices=["run", "kill", "resume", "race", "first", "floor", "bytes", "discard"],
    )
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--store", required=True)
    options = parser.parse_args()
    contender: Any = importlib.import_module(f"benchmarks.contenders.{options.contender}")
    if options.operation == "bytes":
        result: dict[str, Any] = {"bytes": contender.stored_bytes(options.store)}
    elif options.operation == "floor":
        result = {"floor_s": contender.resume_floor(options.store)}
    elif options.operation == "discard":
        contender.discard(options.store)
        result = {}
    elif options.operation == "run":
        result = asyncio.run(run(contender, options.store, options.n))
    elif options.operation == "kill":
        result = asyncio.run(kill(contender, options.store, options.n))
    elif options.operation == "first":
        result = asyncio.run(first(contender, options.store, options.n))
    else:
        result = asyncio.run(
            resume(contender, options.store, options.n, racing=options.operation == "race")
        )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
