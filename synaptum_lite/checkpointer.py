"""The checkpointer seam: where a run's journal is remembered. It decides nothing.

A checkpointer keeps, per run, a header (the configuration that started it and the task) and
a dense sequence of events (positions from 0). `append` is idempotent per event key, and
assigns positions atomically; `hold` gives one driver at a time the right to drive a run.
Every implementation passes the same conformance suite (`tests/core/test_conformance.py`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .codec import Record, decode_all
from .events import FinalStep, Step

FORMAT_VERSION = 1
"""The journal format this version writes and the newest it reads."""


@dataclass(frozen=True, slots=True)
class RunState:
    """What a store knows about a run without reading its whole journal.

    `next_seq` is the number of events (the next position); `header` is None for a run that
    was never started; `final` is the final step of a closed run.
    """

    run_id: str
    next_seq: int
    header: dict[str, Any] | None
    final: FinalStep | None

    @property
    def closed(self) -> bool:
        return self.final is not None


@runtime_checkable
class Checkpointer(Protocol):
    """Where the journal is remembered."""

    async def load(self, run_id: str) -> RunState:
        """The run's state, reading its header and at most its final event."""
        ...

    async def start(self, run_id: str, header: dict[str, Any]) -> None:
        """Record a new run's header. A run that already exists keeps its header."""
        ...

    async def append(self, run_id: str, events: Sequence[Step]) -> int:
        """Append events in order, skipping any whose key is already journaled.

        Returns the run's `next_seq` afterwards. Raises `JournalError` for a run never started.
        """
        ...

    async def records(self, run_id: str) -> list[Record]:
        """Every stored event of the run, in position order, undecoded."""
        ...

    def hold(self, run_id: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Hold the right to drive the run; raises `RunBusy` at once if another holds it."""
        ...

    async def confirm_hold(self, run_id: str) -> None:
        """Raise `StoreUnavailable` unless this process still holds the run it holds: a store
        may lose a hold without its holder knowing (PostgreSQL: the server ended the lock's
        session). Where a hold lasts as long as its process (SQLite, memory) there is nothing
        to ask."""
        ...

    async def run_ids(self, *, open_only: bool = False) -> list[str] | None:
        """Every run in the order they were started, sub-runs included; with `open_only`,
        only those without a final step. None when the store holds no journal yet: asking
        never creates one."""
        ...

    async def is_held(self, run_id: str) -> bool:
        """Whether some driver, in this process or another, holds the run now. Asked without
        taking the run wherever the store can (a driver asking for it meanwhile gets it)."""
        ...


async def load_events(checkpointer: Checkpointer, run_id: str) -> list[Step]:
    """Every event of the run, decoded, in position order."""
    return decode_all(run_id, await checkpointer.records(run_id))
