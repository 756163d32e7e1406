"""A journal in this process's memory: for tests, the browser, and moving runs between stores."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..checkpointer import RunState
from ..codec import Record, check_run_id, encode_events, encode_header
from ..events import Step
from .alike import holding, is_final, never_started, run_state


class MemoryCheckpointer:
    """A journal in this process's memory: for tests and for moving runs between stores.

    Events are stored encoded, exactly as a file would keep them, so what survives here is
    what would survive on disk.
    """

    def __init__(self) -> None:
        self._headers: dict[str, str] = {}
        self._records: dict[str, list[Record]] = {}
        self._keys: dict[str, set[tuple[str, str, int]]] = {}
        self._final: dict[str, Record] = {}
        self._held: set[str] = set()
        self._holding = threading.Lock()  # event loops in several threads may share the store

    def __repr__(self) -> str:
        return "MemoryCheckpointer()"

    async def load(self, run_id: str) -> RunState:
        header = self._headers.get(check_run_id(run_id))
        next_seq = len(self._records.get(run_id, ()))
        return run_state(run_id, header, next_seq, self._final.get(run_id))

    async def start(self, run_id: str, header: dict[str, Any]) -> None:
        text = encode_header(check_run_id(run_id), header)
        if run_id not in self._headers:
            self._headers[run_id] = text
            self._records[run_id] = []
            self._keys[run_id] = set()

    async def append(self, run_id: str, events: Sequence[Step]) -> int:
        encoded = encode_events(run_id, events)
        if run_id not in self._headers:
            raise never_started(run_id)
        records, keys = self._records[run_id], self._keys[run_id]
        for step_id, phase, attempt, data in encoded:
            if (step_id, phase, attempt) in keys:
                continue
            keys.add((step_id, phase, attempt))
            record = Record(len(records), step_id, phase, attempt, data)
            records.append(record)
            if is_final(step_id):
                self._final[run_id] = record
        return len(records)

    async def start_with(self, run_id: str, header: dict[str, Any], events: Sequence[Step]) -> int:
        """`start`, then `append`, all or nothing: everything is checked before either writes,
        and neither lets another task in between. Returns the run's `next_seq` afterwards."""
        encode_events(check_run_id(run_id), events)
        encode_header(run_id, header)
        await self.start(run_id, header)
        return await self.append(run_id, events)

    async def records(self, run_id: str) -> list[Record]:
        return list(self._records.get(check_run_id(run_id), ()))

    def hold(self, run_id: str) -> contextlib.AbstractAsyncContextManager[None]:
        check_run_id(run_id)

        def try_acquire() -> Callable[[], None] | None:
            with self._holding:
                if run_id in self._held:
                    return None
                self._held.add(run_id)
            return lambda: self._held.discard(run_id)

        return holding(f"memory:{id(self)}", "an in-memory journal", run_id, try_acquire)

    async def confirm_hold(self, run_id: str) -> None:
        """Nothing to ask: a hold here lasts as long as this process."""
        check_run_id(run_id)

    async def run_ids(self, *, open_only: bool = False) -> list[str]:
        return [r for r in self._headers if not (open_only and r in self._final)]

    async def is_held(self, run_id: str) -> bool:
        return check_run_id(run_id) in self._held
