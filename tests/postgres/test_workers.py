"""Many workers on one PostgreSQL database: SIGKILLed at random moments and started again, or
racing for the same runs. Every run of the batch completes; no non-idempotent effect happens
twice; no completed step is executed again.

The tools and the model count themselves, in the database, as they run
(`tests/postgres/workers.py`), so the counts survive the kills.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

from synaptum_lite.stores.postgres import PostgresCheckpointer
from tests.bounds import HANG
from tests.core.agents import ANSWER
from tests.core.conftest import run
from tests.core.test_kill import ROOT, completed_steps

from .store import import_psycopg, postgres_location, require_server, schema_for
from .workers import LAB_SCHEMA

# the workers' connections to the journal are named after them: who holds a run right now
HOLDERS = """SELECT DISTINCT a.application_name FROM pg_locks l
JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database()"""

psycopg = import_psycopg()


class Batch:
    """A batch of runs in a fresh schema, the lab tables beside it, and the worker processes
    pulling from it (each started again under a new name after it is killed)."""

    def __init__(self, tmp: Path, runs: int, *flags: str) -> None:
        self.url, self.schema, self.tmp, self.flags = require_server(), schema_for(tmp), tmp, flags
        self.lab = f"{self.schema}_lab"
        self.db = psycopg.connect(self.url, autocommit=True)
        self.db.execute(LAB_SCHEMA.format(lab=self.lab))
        self.run_ids = [f"run-{i:02d}" for i in range(runs)]
        with self.db.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {self.lab}.tasks (run_id) VALUES (%s)", [(r,) for r in self.run_ids]
            )
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.started = self.kills = 0

    def count(self, query: str) -> int:
        return self.db.execute(query.format(lab=self.lab)).fetchone()[0]

    def start(self) -> None:
        name = f"w{self.started}"
        self.started += 1
        with (self.tmp / f"{name}.log").open("wb") as log:
            self.processes[name] = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.postgres.workers",
                    self.url,
                    self.schema,
                    name,
                    *self.flags,
                ],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def holding(self) -> list[str]:
        """The live workers inside a run now."""
        return sorted({name for (name,) in self.db.execute(HOLDERS)} & set(self.processes))

    def kill(self, name: str) -> None:
        process = self.processes.pop(name)
        process.kill()  # SIGKILL: no cleanup, no goodbye to the database
        process.wait()
        self.kills += 1
        self.start()

    def check_alive(self) -> None:
        for name, process in self.processes.items():
            if process.poll() not in (None, 0):
                raise AssertionError(f"worker {name} failed:\n{self.log(name)}")

    def wait(self) -> None:
        for name, process in self.processes.items():
            assert process.wait(timeout=HANG) == 0, self.log(name)

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text()

    def duplicates(self) -> dict[str, int]:
        """What must be zero, counted from what the tools and the model recorded."""
        return {
            "runs not done": self.count("SELECT count(*) FROM {lab}.tasks WHERE NOT done"),
            "non-idempotent effects repeated": self.count(
                """SELECT count(*) FROM (SELECT run_id, tool FROM {lab}.effects
                WHERE tool IN ('transferir', 'notificar') GROUP BY run_id, tool
                HAVING count(*) > 1) d"""
            ),
            "runs missing an effect": self.count(
                """SELECT count(*) FROM {lab}.tasks t WHERE (SELECT count(DISTINCT tool)
                FROM {lab}.effects e WHERE e.run_id = t.run_id) <> 3"""
            ),
            "completed tool steps run again": self.count(
                "SELECT count(*) FROM {lab}.effects WHERE repeated"
            ),
            "completed model steps paid again": self.count(
                "SELECT count(*) FROM {lab}.model_calls WHERE repeated"
            ),
        }

    def assert_every_journal_ends_alike(self) -> None:
        """Every run closed with the answer, with the same completed steps as any other."""
        store = PostgresCheckpointer(self.url, schema=self.schema)
        finals = [run(store.load(run_id)).final for run_id in self.run_ids]
        assert {final.output for final in finals} == {ANSWER}
        location = postgres_location(self.tmp)
        reference = completed_steps(location, self.run_ids[0])
        assert len(reference) == 8
        assert all(completed_steps(location, r) == reference for r in self.run_ids[1:])

    def close(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
        self.db.close()


def test_workers_killed_at_random_moments_finish_every_run_with_zero_duplicates(tmp_path):
    runs, workers, kills = 40, 3, 12
    batch = Batch(tmp_path, runs)
    chance = random.Random(20261129)
    try:
        for _ in range(workers):
            batch.start()
        pending = "SELECT count(*) FROM {lab}.tasks WHERE NOT done"
        while batch.kills < kills and batch.count(pending):
            time.sleep(chance.uniform(0.01, 0.15))  # a random moment
            batch.check_alive()
            holding = batch.holding()  # only a worker inside a run is worth killing
            if holding:
                batch.kill(chance.choice(holding))
        batch.wait()
        shared = batch.count(
            """SELECT count(*) FROM (SELECT run_id FROM {lab}.model_calls GROUP BY run_id
            HAVING count(DISTINCT worker) > 1) s"""
        )
        summary = (
            f"{runs} runs, {workers} workers, {batch.kills} SIGKILLs ({batch.started} processes), "
            f"{shared} runs driven by more than one worker, "
            f"{batch.count('SELECT count(*) FROM {lab}.resolutions')} uncertain effects resolved"
        )
        print(summary)  # noqa: T201 - shown with -s or -rP: what the run exercised
        assert batch.kills == kills, summary
        assert set(batch.duplicates().values()) == {0}, (batch.duplicates(), summary)
        batch.assert_every_journal_ends_alike()
    finally:
        batch.close()


def test_two_workers_racing_for_the_same_runs_drive_each_once(tmp_path):
    batch = Batch(tmp_path, 20, "--in-order")  # both take the runs in the same order
    try:
        batch.start()
        batch.start()
        batch.wait()
        busy = batch.count("SELECT count(*) FROM {lab}.busy")
        print(f"20 runs, 2 workers in the same order, told busy {busy} times")  # noqa: T201
        assert set(batch.duplicates().values()) == {0}, batch.duplicates()
        # with no kill, nothing at all runs twice: each model call and each tool once per run
        assert batch.count("SELECT count(*) FROM {lab}.model_calls") == 20 * 4
        assert batch.count("SELECT count(*) FROM {lab}.effects") == 20 * 3
        batch.assert_every_journal_ends_alike()
    finally:
        batch.close()
