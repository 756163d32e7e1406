"""A child process the storage attacks drive: the cashier run of `tests.core.agents`, with
something done to the files beside the journal mid-run, then a real SIGKILL.

`python -m tests.core.ataque_almacen_hijo DATABASE RUN_ID EFFECTS --remove SUFFIX --after N
--die-at M` runs the cashier's run; right after receiving its N-th step it deletes
`DATABASE + SUFFIX` (`-wal`, `-shm`), and right after receiving its M-th step it SIGKILLs
itself. Effects are counted in EFFECTS, as the kill tests count them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path

from synaptum_lite import Session, SqliteCheckpointer

from . import agents


async def drive(database: str, run_id: str, remove: str, after: int, die_at: int) -> None:
    session = Session(run_id, agents.double(), SqliteCheckpointer(database))
    seen = 0
    async for _ in agents.cajero().run(agents.TASK, session=session):
        seen += 1
        if seen == after:
            os.remove(database + remove)
        if seen == die_at:
            os.kill(os.getpid(), signal.SIGKILL)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database")
    parser.add_argument("run_id")
    parser.add_argument("effects", type=Path)
    parser.add_argument("--remove", choices=["-wal", "-shm"], required=True)
    parser.add_argument("--after", type=int, required=True)
    parser.add_argument("--die-at", type=int, required=True)
    args = parser.parse_args(argv)
    agents.EFFECTS = args.effects
    asyncio.run(drive(args.database, args.run_id, args.remove, args.after, args.die_at))


if __name__ == "__main__":
    main(sys.argv[1:])
