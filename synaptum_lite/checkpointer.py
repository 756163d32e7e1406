"""The checkpointer seam: where a run's journal is remembered. It decides nothing.

A checkpointer keeps, per run, a header (the configuration that started it and the task) and
a dense sequence of events (positions from 0). `append` is idempotent per event key, and
assigns positions atomically; `hold` gives one driver at a time the right to drive a run.
Every implementation passes the same conformance suite (`tests/core/test_conformance.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .codec import Record, decode_all, decode_final, decode_header
from .errors import JournalError, RunBusy
from .events import FinalStep, Step, parse_step_id

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


# ── what every store does alike: the stores only move records ───────────────────────────────


def run_state(run_id: str, header: str | None, next_seq: int, final: Record | None) -> RunState:
    """A run's state from what a store keeps: its stored header (None: never started), its
    number of events and its final event's record (None: still open)."""
    return RunState(
        run_id=run_id,
        next_seq=next_seq,
        header=decode_header(run_id, header) if header is not None else None,
        final=decode_final(run_id, final) if final is not None else None,
    )


def is_final(step_id: str) -> bool:
    """Whether an appended event closes its run (a store keeps where its final event is)."""
    return parse_step_id(step_id)[1] == "final"


def never_started(run_id: str) -> JournalError:
    """What `append` raises for a run whose header was never recorded."""
    return JournalError(f"run {run_id!r} was never started; call start() first")


async def load_events(checkpointer: Checkpointer, run_id: str) -> list[Step]:
    """Every event of the run, decoded, in position order."""
    return decode_all(run_id, await checkpointer.records(run_id))


# ── one driver per run, inside this process ────────────────────────────────────────────────
#
# A generator abandoned mid-iteration (`break`, an exception in the consumer) still holds its
# run until Python finalizes it, which its event loop does a few iterations later. Before
# answering "busy" for a run held by *the same event loop*, give those finalizers their turns,
# and wait for a release that has already begun (a server-side lock needs a round trip). A
# run held by another thread's loop is simply busy: an event loop can only wait for what its
# own thread will wake it for, so nothing here is ever awaited across loops.


@dataclass(eq=False)
class _Holder:
    """Who holds a run in this process: the event loop driving it, and, once its release has
    begun, an event of that loop set when the release is done."""

    loop: asyncio.AbstractEventLoop
    released: asyncio.Event | None = None  # awaited only from `loop`


_HELD_HERE: dict[tuple[str, str], _Holder] = {}
_HELD_HERE_LOCK = threading.Lock()  # event loops in several threads may share these runs
_FINALIZER_TURNS = 4

Release = Callable[[], Awaitable[None] | None]


@contextlib.asynccontextmanager
async def holding(
    store: str,
    label: str,
    run_id: str,
    try_acquire: Callable[[], Awaitable[Release | None] | Release | None],
) -> AsyncIterator[None]:
    """Hold `run_id` in `store` (a stable identity of the storage; `label` names it for people).

    `try_acquire` (plain or async) returns a release function (plain or async), or None when
    another driver holds the run. Raises `RunBusy` when the run stays held.
    """
    loop = asyncio.get_running_loop()
    key = (store, run_id)
    release = await _settled(try_acquire())
    turns = 0
    while release is None and turns < _FINALIZER_TURNS:
        holder = _HELD_HERE.get(key)
        if holder is None or holder.loop is not loop:
            break  # held by another process, or another thread's event loop: busy
        if holder.released is not None:
            await holder.released.wait()
        else:
            await asyncio.sleep(0)
            turns += 1
        release = await _settled(try_acquire())
    if release is None:
        raise RunBusy(run_id, label)
    holder = _Holder(loop)
    with _HELD_HERE_LOCK:
        _HELD_HERE[key] = holder
    try:
        yield
    finally:
        holder.released = asyncio.Event()
        try:
            await _settled(release())
        finally:
            with _HELD_HERE_LOCK:
                if _HELD_HERE.get(key) is holder:
                    del _HELD_HERE[key]
            holder.released.set()


async def _settled(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value
