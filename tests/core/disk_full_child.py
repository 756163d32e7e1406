"""Fill a small disk with a journal, then read it back: run by `test_storage_errors.py` inside
a mount namespace of its own, on a tmpfs of a few hundred kilobytes.

`python -m tests.core.disk_full_child FOLDER` appends events of 4 KB of random text until an
append fails, then prints the error's type and message, how many events the last successful
append left, and how many a new checkpointer reads back.
"""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

from synaptum_lite import ModelStep, Phase, SqliteCheckpointer

HEADER = {"format": 1, "agent": {"model": "m"}, "task": "t"}


def event(position: int, noise: random.Random) -> ModelStep:
    return ModelStep(
        run_id="r",
        step_id=f"{position:06d}-model",
        phase=Phase.ATTEMPTED,
        fingerprint=noise.randbytes(2048).hex(),  # 4 KB that compress poorly
    )


async def fill(folder: Path) -> None:
    store = SqliteCheckpointer(folder / "runs.db")
    noise = random.Random(13)
    await store.start("r", HEADER)
    appended = 0
    try:
        for position in range(10_000):
            appended = await store.append("r", [event(position, noise)])
    except Exception as exc:  # what the disk filling up raises is what this reports
        print(f"error {type(exc).__name__}: {exc}")
    print(f"appended {appended}")
    print(f"kept {len(await SqliteCheckpointer(folder / 'runs.db').records('r'))}")


if __name__ == "__main__":
    asyncio.run(fill(Path(sys.argv[1])))
