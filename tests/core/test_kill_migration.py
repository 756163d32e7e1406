"""A migration is one atomic append: a child process SIGKILLed at any point of it leaves the
journal as it was or with the migration, never a part of it, and the run then ends on the
version its journal names, paying nothing twice and repeating no effect.

Every kill point of `tests/core/migrate_child.py` is tried (the entry and return of each store
call; on SQLite also each SQL statement), on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from synaptum_lite import MigrationStep, load_events
from tests.bounds import HANG

from .agents import ANSWER, open_store
from .test_kill import STORE_KINDS, child, effects, store_in

pytestmark = pytest.mark.posix_signals  # it SIGKILLs child processes

ROOT = Path(__file__).resolve().parents[2]
STOP_AT = 8  # the transfer's completed step: the model asked twice, two tools ran
TOTAL_MODEL_CALLS = 4


def migrator(store: str, run_id: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.core.migrate_child", store, run_id, *flags],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG,
    )


def journal(store: str, run_id: str) -> list[tuple[object, ...]]:
    return [tuple(r) for r in asyncio.run(open_store(store).records(run_id))]


def model_calls(process: subprocess.CompletedProcess[str]) -> int:
    return int(process.stdout.rsplit("model_calls ", 1)[1].split()[0])


def half_run(store: str, tmp: Path, run_id: str) -> list[tuple[object, ...]]:
    stopped = child(store, tmp, run_id, "--stop-at", str(STOP_AT))
    assert stopped.returncode == 0, stopped.stderr
    return journal(store, run_id)


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_migration_killed_at_any_point_leaves_the_old_journal_or_the_new_one(tmp_path, kind):
    store = store_in(kind, tmp_path)
    before = half_run(store, tmp_path, "cuenta")
    whole = migrator(store, "cuenta")
    assert whole.returncode == 0, whole.stderr
    points = int(whole.stdout.split("points ")[1])
    migrated = journal(store, "cuenta")
    assert migrated[: len(before)] == before and len(migrated) == len(before) + 1
    assert points >= (12 if kind == "sqlite" else 8)  # the SQL statements count on SQLite

    outcomes: Counter[str] = Counter()
    for point in range(1, points + 1):
        run_id = f"r{point}"
        old = half_run(store, tmp_path, run_id)
        killed = migrator(store, run_id, "--die-at", str(point))
        assert killed.returncode == -signal.SIGKILL, (point, killed.stdout, killed.stderr)
        now = journal(store, run_id)
        if now == old:
            outcomes["old"] += 1
            again = migrator(store, run_id)  # the operator migrates again: it is written once
            assert again.returncode == 0, again.stderr
            now = journal(store, run_id)
        else:
            outcomes["new"] += 1
        assert now[: len(old)] == old and len(now) == len(old) + 1, point
        events = asyncio.run(load_events(open_store(store), run_id))
        assert isinstance(events[-1], MigrationStep), point

        resumed = child(store, tmp_path, run_id, "--pinned")
        assert resumed.returncode == 0, (point, resumed.stderr)
        assert "agent v2" in resumed.stdout
        assert f"final {ANSWER}" in resumed.stdout
        assert model_calls(resumed) == TOTAL_MODEL_CALLS - 2  # the first two were paid before
        assert effects(tmp_path, run_id) == {"consultar_saldo": 1, "transferir": 1, "notificar": 1}
    # both outcomes happen: the kill points before the commit, and those after it
    assert outcomes["old"] > 0 and outcomes["new"] > 0, outcomes
    print(f"{kind}: {points} kill points, {dict(outcomes)}, 0 effects twice")
