"""A child process that imports an exported run into a SQLite journal, and can be SIGKILLed
right after any write of the import.

`python -m tests.core.ataque_almacen_import_hijo EXPORT DATABASE [--die-after N] [--piecewise]`
imports the JSON lines in EXPORT (`synaptum_lite.stores.transfer.import_run`) into DATABASE; with
`--die-after N` it SIGKILLs itself as soon as the N-th write of the import (a `start_with`, a
`start` or an `append`, in the order the import makes them) has returned, before the import
goes on. `--piecewise` hides `start_with`, as a store without it (PostgreSQL) is imported:
the header, then the events.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from synaptum_lite import SqliteCheckpointer, Step
from synaptum_lite.stores.transfer import import_run


class DiesAfterWrites:
    """A SQLite journal that SIGKILLs its process right after its `die_after`-th write."""

    def __init__(self, database: str, die_after: int | None) -> None:
        self.store = SqliteCheckpointer(database)
        self.die_after = die_after
        self.writes = 0

    async def start_with(self, run_id: str, header: dict[str, Any], events: Sequence[Step]) -> int:
        next_seq = await self.store.start_with(run_id, header, events)
        self._wrote()
        return next_seq

    def _wrote(self) -> None:
        self.writes += 1
        if self.writes == self.die_after:
            os.kill(os.getpid(), signal.SIGKILL)

    async def load(self, run_id: str) -> Any:
        return await self.store.load(run_id)

    async def records(self, run_id: str) -> Any:
        return await self.store.records(run_id)

    async def start(self, run_id: str, header: dict[str, Any]) -> None:
        await self.store.start(run_id, header)
        self._wrote()

    async def append(self, run_id: str, events: Sequence[Step]) -> int:
        next_seq = await self.store.append(run_id, events)
        self._wrote()
        return next_seq

    def hold(self, run_id: str) -> contextlib.AbstractAsyncContextManager[None]:
        return self.store.hold(run_id)


class Piecewise(DiesAfterWrites):
    start_with = None  # type: ignore[assignment]


def main(argv: list[str]) -> None:
    export, database = argv[0], argv[1]
    die_after = int(argv[argv.index("--die-after") + 1]) if "--die-after" in argv else None
    kind = Piecewise if "--piecewise" in argv else DiesAfterWrites
    lines = Path(export).read_text(encoding="utf-8").splitlines()
    print(asyncio.run(import_run(kind(database, die_after), lines)))


if __name__ == "__main__":
    main(sys.argv[1:])
