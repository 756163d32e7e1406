"""A worker of the race tests that outlives its connections to the journal:

    python -m tests.postgres.ataque_conductor URL SCHEMA WORKER

It is `workers.py`'s worker (the same cashier, tools, counted model and lab tables), taking
the batch's runs in order, so that every worker contends for every run; and when the server
ends its connection in the middle of a run (`StoreUnavailable`), it moves on and comes back
to that run later with the same checkpointer, as a long-lived worker would. Each loss is
one line `lost RUN_ID` on stdout.
"""

from __future__ import annotations

import asyncio
import sys

from synaptum_lite import RunBusy, StoreUnavailable
from synaptum_lite.stores.postgres import PostgresCheckpointer
from tests.postgres import workers


async def work(url: str, schema: str) -> None:
    store = PostgresCheckpointer(url, schema=schema)
    while pending := workers.LAB.pending():
        for run_id in pending:
            try:
                await workers.drive(store, run_id)
            except RunBusy:
                workers.LAB.busy(run_id)
            except StoreUnavailable:
                print(f"lost {run_id}", flush=True)  # noqa: T201 - the test counts these
        await asyncio.sleep(0.005)
    await store.close()


def main(argv: list[str]) -> None:
    url, schema, worker = argv
    workers.LAB = workers.Lab(url, schema, worker)
    named = f"{url}{'&' if '?' in url else '?'}application_name={worker}"
    asyncio.run(work(named, schema))


if __name__ == "__main__":
    main(sys.argv[1:])
