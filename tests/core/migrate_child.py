"""A child process that migrates a run of the cashier to `cajero_v2()`, and can be SIGKILLed at
any point of the migration.

`python -m tests.core.migrate_child STORE RUN_ID [--die-at N]` prints `migrated STEP_ID` and
`points K` (how many kill points the migration passed). A kill point is the entry and the
return of each call the migration makes to the store (`hold`, `load`, `records`, `append`)
and, on SQLite, each SQL statement the store runs from then on (`BEGIN IMMEDIATE`, each
`INSERT`, `COMMIT`: the trace callback fires as a statement starts). `--die-at N` SIGKILLs the
process at the N-th. STORE as in `agents.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

from synaptum_lite import Checkpointer, SqliteCheckpointer, Step, migrate

from .agents import cajero_v2, open_store


class KillPoints:
    """A store that counts kill points, and SIGKILLs its process at the `die_at`-th."""

    def __init__(self, store: Checkpointer, die_at: int | None) -> None:
        self.store, self.die_at, self.points = store, die_at, 0
        self.traced = False

    def point(self, _statement: object = None) -> None:
        self.points += 1
        if self.points == self.die_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def trace(self) -> None:
        """From now on, every SQL statement of the SQLite store is a kill point too."""
        if isinstance(self.store, SqliteCheckpointer) and not self.traced:
            connection = self.store._file.connection  # the test reaches inside, on purpose
            if connection is not None:
                connection.set_trace_callback(self.point)
                self.traced = True

    async def _call(self, name: str, *args: Any) -> Any:
        self.point()
        result = await getattr(self.store, name)(*args)
        self.trace()
        self.point()
        return result

    async def load(self, run_id: str) -> Any:
        return await self._call("load", run_id)

    async def records(self, run_id: str) -> Any:
        return await self._call("records", run_id)

    async def append(self, run_id: str, events: Sequence[Step]) -> int:
        next_seq: int = await self._call("append", run_id, events)
        return next_seq

    @contextlib.asynccontextmanager
    async def hold(self, run_id: str) -> AsyncIterator[None]:
        self.point()
        async with self.store.hold(run_id):
            self.point()
            yield
            self.point()
        self.point()


async def main(argv: list[str]) -> None:
    store, run_id = argv[0], argv[1]
    die_at = int(argv[argv.index("--die-at") + 1]) if "--die-at" in argv else None
    points = KillPoints(open_store(store), die_at)
    migration = await migrate(points, run_id, cajero_v2(), by="operadora")  # type: ignore[arg-type]
    print(f"migrated {migration.step_id}")
    print(f"points {points.points}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
