"""Storage that fails says what happened: a damaged file names the run and the position, and
takes no new run; a full disk says the disk is full and keeps every event appended before.

Real files: the damage is 4 KiB of garbage written into the middle of a real journal; the
full disk is a real tmpfs of 256 KiB, mounted in a mount namespace of the child process that
fills it (`unshare`; skipped, saying why, where that is not allowed).
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from synaptum_lite import (
    Agent,
    CorruptJournal,
    DamagedStore,
    Session,
    SqliteCheckpointer,
    load_events,
)
from synaptum_lite.testing import ScriptedGateway, says
from tests.bounds import HANG

from .conftest import run
from .test_kill import ROOT

RUNS = 40


def agente() -> Agent:
    return Agent("a", model="m", instructions="i")


async def drive(store, run_id: str, answer: str) -> None:
    async for _ in agente().run(
        "t", session=Session(run_id, ScriptedGateway([says(answer)]), store)
    ):
        pass


def damaged_journal(tmp: Path) -> tuple[Path, dict[str, list]]:
    """A journal of RUNS closed runs with 4 KiB of garbage in the middle of the file, and the
    events each run had before the damage."""
    path = tmp / "runs.db"
    noise = random.Random(7)

    async def fill():
        store = SqliteCheckpointer(path)
        for n in range(RUNS):
            await drive(store, f"run{n:02d}", noise.randbytes(750).hex())
        events = {f"run{n:02d}": await load_events(store, f"run{n:02d}") for n in range(RUNS)}
        await store.close()
        return events

    events = run(fill())
    assert not Path(f"{path}-wal").exists()  # every page is in the file itself
    middle = path.stat().st_size // 2 // 4096 * 4096
    with path.open("r+b") as file:
        file.seek(middle)
        file.write(noise.randbytes(4096))
    return path, events


def test_garbage_in_the_middle_of_the_file_names_each_damaged_run_and_its_position(tmp_path):
    path, before = damaged_journal(tmp_path)

    async def read_all():
        store = SqliteCheckpointer(path)
        outcomes = {}
        for run_id in before:
            try:
                outcomes[run_id] = await load_events(store, run_id)
            except CorruptJournal as corrupt:
                outcomes[run_id] = corrupt
        return outcomes

    outcomes = run(read_all())
    damaged = {r: e for r, e in outcomes.items() if isinstance(e, CorruptJournal)}
    assert damaged, "the garbage damaged no run: the test must damage one"
    for run_id, corrupt in damaged.items():
        assert corrupt.run_id == run_id
        assert corrupt.seq is None or 0 <= corrupt.seq < len(before[run_id])
        assert "database disk image is malformed" in str(corrupt)
        assert f"run {run_id!r}: " in str(corrupt)
    for run_id, events in outcomes.items():  # every other run reads as it was written
        if run_id not in damaged:
            assert events == before[run_id]


def test_a_damaged_file_takes_no_new_run(tmp_path):
    path, _ = damaged_journal(tmp_path)
    fingerprint = hashlib.sha256(path.read_bytes()).hexdigest()

    with pytest.raises(DamagedStore) as error:
        run(drive(SqliteCheckpointer(path), "nuevo", "hola"))

    assert "the journal store runs.db is damaged (SQLite's quick_check: " in str(error.value)
    assert "run 'nuevo' was not written" in str(error.value)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == fingerprint
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0


def test_a_damaged_run_once_read_stops_every_write_of_that_checkpointer(tmp_path):
    path, before = damaged_journal(tmp_path)

    async def scenario():
        store = SqliteCheckpointer(path)
        damaged = None
        for run_id in before:
            try:
                await load_events(store, run_id)
            except CorruptJournal:
                damaged = run_id
                break
        with pytest.raises(DamagedStore) as error:
            await drive(store, "nuevo", "hola")
        return damaged, error.value

    damaged, error = run(scenario())
    assert f"reading run {damaged!r}" in str(error)


def _namespace() -> list[str] | None:
    """How to run a command in a mount namespace of its own, or None where it is not allowed."""
    unshare = shutil.which("unshare")
    if unshare is None or not sys.platform.startswith("linux"):
        return None
    command = [unshare, "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        command[1:1] = ["--user", "--map-root-user"]
    probe = subprocess.run([*command, "true"], capture_output=True)
    return command if probe.returncode == 0 else None


def test_a_full_disk_says_so_and_keeps_every_event_appended_before(tmp_path):
    namespace = _namespace()
    if namespace is None:
        pytest.skip("needs `unshare` allowed to make a mount namespace (Linux) for a tmpfs")
    folder = tmp_path / "disco"
    folder.mkdir()
    filled = subprocess.run(
        [
            *namespace,
            "sh",
            "-c",
            'mount -t tmpfs -o size=256k tmpfs "$1" && '
            'exec "$2" -m tests.core.disk_full_child "$1"',
            "sh",
            str(folder),
            sys.executable,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert filled.returncode == 0, filled.stderr
    error, appended, kept = filled.stdout.splitlines()
    assert error == (
        "error StoreFull: the journal store runs.db cannot grow: its disk is full (SQLite: "
        "database or disk is full); every event appended before this is kept: free space, "
        "then run the agent again with the same run_id"
    )
    assert int(appended.split()[1]) > 0
    assert kept.split()[1] == appended.split()[1]


def test_a_read_only_journal_reads_its_closed_run_and_says_why_the_open_one_cannot_go_on(
    tmp_path,
):
    """The journal file (and a lock file a former version left beside it, as another user's
    would be) mounted read-only: the closed run answers without the right to write; the open
    one stops before running anything, saying the file can only be read."""
    namespace = _namespace()
    if namespace is None:
        pytest.skip("needs `unshare` allowed to make a mount namespace (Linux) for a bind mount")
    written = subprocess.run(
        [sys.executable, "-m", "tests.core.read_only_child", str(tmp_path), "write"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert written.returncode == 0, written.stderr
    (tmp_path / "runs.db.lock").touch()
    read_only = " && ".join(
        f'mount --bind "$1/{name}" "$1/{name}" && mount -o remount,bind,ro "$1/{name}"'
        for name in ("runs.db", "runs.db.lock")
    )
    read = subprocess.run(
        [
            *namespace,
            "sh",
            "-c",
            f'{read_only} && exec "$2" -m tests.core.read_only_child "$1" read',
            "sh",
            str(tmp_path),
            sys.executable,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert read.returncode == 0, read.stderr
    assert read.stdout.splitlines() == [
        "cerrado: final hecho, model_calls 0",
        "abierto: StoreUnavailable: the journal store runs.db is unavailable (this process may "
        "only read the file; SQLite says: attempt to write a readonly database); every event "
        "appended before this is kept: run the agent again with the same run_id once it is back",
    ]
