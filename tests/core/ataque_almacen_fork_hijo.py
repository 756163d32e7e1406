"""A child process that holds a run of a SQLite journal and forks, for the run-lock attacks.

`python -m tests.core.ataque_almacen_fork_hijo DATABASE RUN_ID [--flock] [--leave]` holds
RUN_ID, forks a grandchild that only sleeps (as a tool's multiprocessing worker or a daemon
would), prints `held <grandchild pid>` and waits to be killed. With `--leave` the grandchild
instead leaves the hold it inherited, as code after a fork goes on, and exits; the holder
prints once it has. `--flock` takes the run lock the macOS way (a flock on a file of the
run's own), as if the platform had no open-file-description locks.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from synaptum_lite import SqliteCheckpointer


async def hold_and_fork(database: str, run_id: str, leave: bool) -> bool:
    """Whether this is the grandchild."""
    async with SqliteCheckpointer(database).hold(run_id):
        grandchild = os.fork()
        if grandchild == 0:
            if leave:
                return True  # leaves the hold: its release must not free the parent's run
            time.sleep(120)  # the test kills it by its pid
            os._exit(0)
        if leave:
            os.waitpid(grandchild, 0)
        print(f"held {grandchild}", flush=True)
        time.sleep(120)  # the test kills it
    return False


def main(argv: list[str]) -> None:
    if "--flock" in argv:
        import fcntl

        vars(fcntl).pop("F_OFD_SETLK", None)  # as on macOS, which has none
    database, run_id = (a for a in argv if not a.startswith("--"))
    if asyncio.run(hold_and_fork(database, run_id, "--leave" in argv)):
        os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
