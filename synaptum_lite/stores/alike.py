"""What every store does alike: its `RunState`, its "never started" error, and holding a run
for one driver inside this process (the stores' own locks hold it across processes).

The core knows none of this: it asks the `Checkpointer` protocol, which each store implements
with these.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..checkpointer import RunState
from ..codec import Record, decode_final, decode_header
from ..errors import JournalError, RunBusy
from ..events import parse_step_id


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
