"""A child process that forks a run, and can be SIGKILLed at any point of the fork's writes.

`python -m tests.core.fork_child STORE RUN NEW AT [--die WHERE:N]` forks RUN at step AT into
NEW (`synaptum_lite.fork`) and prints `forked NEW EVENTS`. A fork writes each run it makes
(the delegations' sub-runs, then the fork) with one `start_with`; `--die` SIGKILLs the process
`before:N` the N-th of them begins, `inside:N` it (its events inserted, its transaction not
yet committed), or `after:N` it returned. STORE is a SQLite file, or a PostgreSQL URL with the
schema after `#` (as in `agents.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from synaptum_lite import Checkpointer, Step, fork
from synaptum_lite.stores import postgres_schema, sqlite

from .agents import open_store


class DiesDuringAFork:
    """The store, SIGKILLing its process at `where` of the `number`-th `start_with`."""

    def __init__(self, store: Checkpointer, where: str, number: int) -> None:
        self.store, self.where, self.number, self.writes = store, where, number, 0

    async def start_with(self, run_id: str, header: dict[str, Any], events: Sequence[Step]) -> int:
        self.writes += 1
        self._maybe_die("before")
        next_seq = await self.store.start_with(run_id, header, events)  # type: ignore[attr-defined]
        self._maybe_die("after")
        return next_seq

    def _maybe_die(self, where: str) -> None:
        if (where, self.writes) == (self.where, self.number):
            os.kill(os.getpid(), signal.SIGKILL)

    def inside(self, real: Any) -> Any:
        """`real` (what a store's `start_with` calls inside its transaction, after inserting
        the header), dying inside the transaction when told to."""

        def call(*args: Any) -> Any:
            result = real(*args)
            self._maybe_die("inside")
            return result

        async def acall(*args: Any) -> Any:
            result = await real(*args)
            self._maybe_die("inside")
            return result

        return acall if asyncio.iscoroutinefunction(real) else call

    async def load(self, run_id: str) -> Any:
        return await self.store.load(run_id)

    async def records(self, run_id: str) -> Any:
        return await self.store.records(run_id)

    def hold(self, run_id: str) -> contextlib.AbstractAsyncContextManager[None]:
        return self.store.hold(run_id)


def main(argv: list[str]) -> None:
    location, run_id, new_run_id, at = argv[:4]
    where, number = argv[argv.index("--die") + 1].split(":") if "--die" in argv else ("", "0")
    store = DiesDuringAFork(open_store(location), where, int(number))
    # only `start_with` appends inside its transaction here: `fork` calls nothing else that writes
    sqlite._append = store.inside(sqlite._append)  # type: ignore[attr-defined]
    postgres_schema._append_one_by_one = store.inside(postgres_schema._append_one_by_one)
    step: int | str = int(at) if at.isdigit() else at
    forked = asyncio.run(fork(store, run_id, at=step, new_run_id=new_run_id))  # type: ignore[arg-type]
    print(f"forked {forked.run_id} {forked.events}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
