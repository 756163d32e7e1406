"""A child process that reads a journal in a folder mounted read-only, for the storage
attacks (run by `test_ataque_almacen_ajenos.py` inside a mount namespace of its own).

`python -m tests.core.ataque_almacen_ro_hijo DATABASE...` loads run "r" from each DATABASE
and prints, one line each, its header or the error it raised.
"""

from __future__ import annotations

import asyncio
import sys

from synaptum_lite import SqliteCheckpointer


async def main(databases: list[str]) -> None:
    for database in databases:
        try:
            print((await SqliteCheckpointer(database).load("r")).header)
        except Exception as exc:  # every error is what the test reads
            print(f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
