"""What waiting for the disk costs a step: our workload with `durability="full"` against
`"normal"`, and one SQLite commit synced against one not synced, side by side in this process.

    uv run --group bench python -m benchmarks.sync_cost [--n 200] [--repeats 7]

- CPU per step of the durable-run workload (`benchmarks.workload`, N turns) driven by our
  agent on SQLite, once per durability, alternating; and the commits it made per step,
  counted at the store;
- CPU per commit of bare SQLite in WAL mode (one row of 1 KB per transaction, 400
  transactions) with `synchronous=FULL` and `NORMAL`, alternating.

With `full`, SQLite syncs the write-ahead log at every commit, and the kernel's work for that
sync is CPU time of this process. So the difference between the two commits, times the
commits per step, is the part of a step's CPU that only a faster disk (or fewer commits)
would take away. Medians; CPU is `time.process_time`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import provenance
from benchmarks.contenders.lite import build
from benchmarks.workload import Workload
from synaptum_lite import Session, SqliteCheckpointer
from synaptum_lite.events import Step

COMMITS = 400


class _Counted(SqliteCheckpointer):
    """Our SQLite store, counting its commits (each `append` is one transaction)."""

    commits = 0

    async def append(self, run_id: str, events: Sequence[Step]) -> int:
        self.commits += 1
        return await super().append(run_id, events)


async def _step_cpu(path: Path, n: int, durability: str) -> tuple[float, float]:
    agent, gateway = build(Workload(n))
    store = _Counted(path, durability=durability)  # type: ignore[arg-type]
    await store.load("warm-up")
    cpu = time.process_time()
    async for _ in agent.run("go", session=Session("r", gateway, store)):
        pass
    cpu = time.process_time() - cpu
    await store.close()
    return cpu / n * 1000, store.commits / n


def _commit_cpu(path: Path, synchronous: str) -> float:
    row = os.urandom(512).hex()  # 1 KB that does not compress
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute(f"PRAGMA synchronous={synchronous}")
        connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, data TEXT)")
        cpu = time.process_time()
        for _ in range(COMMITS):
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("INSERT INTO t (data) VALUES (?)", (row,))
            connection.execute("COMMIT")
        return (time.process_time() - cpu) / COMMITS * 1000
    finally:
        connection.close()


def measure(n: int = 200, repeats: int = 7) -> dict[str, Any]:
    steps: dict[str, list[float]] = {"full": [], "normal": []}
    commits: list[float] = []
    bare: dict[str, list[float]] = {"FULL": [], "NORMAL": []}
    with tempfile.TemporaryDirectory(prefix="synaptum-sync-") as scratch:
        folder = Path(scratch)
        for repeat in range(repeats):
            order = ["full", "normal"] if repeat % 2 == 0 else ["normal", "full"]
            for durability in order:
                cpu, per_step = asyncio.run(
                    _step_cpu(folder / f"{repeat}-{durability}.db", n, durability)
                )
                steps[durability].append(cpu)
                commits.append(per_step)
                synchronous = durability.upper()
                bare[synchronous].append(
                    _commit_cpu(folder / f"{repeat}-{synchronous}", synchronous)
                )
    # every repeat as measured; `benchmarks.provenance.derive` makes the medians of them
    return {
        "n": n,
        "repeats": repeats,
        "step_cpu_ms": steps,
        "commits_per_step": commits,
        "commit_cpu_ms": {key.lower(): value for key, value in bare.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=7)
    options = parser.parse_args()
    result = provenance.sync_cost(measure(options.n, options.repeats))
    json.dump(result, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
