"""The run lock of the SQLite store, attacked from outside: a holder that forked before it
was SIGKILLed, with real processes.

A lock on an open file description (Linux's OFD lock, macOS's flock) is shared by every copy
of the descriptor, and a fork copies them all: a grandchild that outlived its killed parent
(a tool's multiprocessing worker, a daemon) kept the run locked, and the resume was told
"busy" (with a message saying a killed worker never blocks the resume) for as long as the
grandchild lived; and a forked child that left the hold it inherited unlocked its parent's
run through the shared description, so a second driver got a run that was being driven.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from synaptum_lite import LockFailed, SqliteCheckpointer
from tests.bounds import HANG

from .agents import ANSWER
from .conftest import run
from .test_kill import ROOT, effects
from .test_storage_errors import _namespace

# as on macOS (where there is nothing to remove)
WITHOUT_OFD_LOCKS = "import fcntl; vars(fcntl).pop('F_OFD_SETLK', None); "


def driver(lock: str, database: str, tmp, run_id: str) -> subprocess.CompletedProcess[str]:
    """The cashier's run driven by a child (`tests.core.agents`), taking the lock `lock` way."""
    setup = WITHOUT_OFD_LOCKS if lock == "flock" else ""
    arguments = [database, run_id, str(tmp / f"{run_id}.effects")]
    code = f"{setup}from tests.core.agents import main; main({arguments!r})"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=HANG
    )


pytestmark = [
    pytest.mark.posix_signals,  # it SIGKILLs child processes
    pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX"),
]


def holding_child(database: str, lock: str, *flags: str) -> subprocess.Popen[str]:
    flags = (*flags, "--flock") if lock == "flock" else flags
    return subprocess.Popen(
        [sys.executable, "-m", "tests.core.ataque_almacen_fork_hijo", database, "r", *flags],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("lock", ["ofd", "flock"])
def test_a_killed_holders_forked_child_does_not_keep_the_run_from_its_resume(tmp_path, lock):
    database = str(tmp_path / "runs.db")
    holder = holding_child(database, lock)
    grandchild = None
    try:
        word, pid = holder.stdout.readline().split()
        assert word == "held"
        grandchild = int(pid)
        busy = driver(lock, database, tmp_path, "r")  # the holder, alive, still holds it
        assert busy.returncode == 4, busy.stdout + busy.stderr
        assert busy.stdout.strip() == "busy r"
        holder.send_signal(signal.SIGKILL)
        holder.wait()

        # the grandchild lives on; the run is free all the same
        resumed = driver(lock, database, tmp_path, "r")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert f"final {ANSWER}" in resumed.stdout
        assert effects(tmp_path, "r") == {"consultar_saldo": 1, "transferir": 1, "notificar": 1}
        os.kill(grandchild, 0)  # still alive: it was not its death that freed the run
    finally:
        if holder.poll() is None:
            holder.send_signal(signal.SIGKILL)
            holder.wait()
        holder.stdout.close()
        if grandchild is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(grandchild, signal.SIGKILL)


@pytest.mark.parametrize("lock", ["ofd", "flock"])
def test_a_forked_child_leaving_the_hold_it_inherited_does_not_free_its_parents_run(tmp_path, lock):
    database = str(tmp_path / "runs.db")
    holder = holding_child(database, lock, "--leave")
    try:
        assert holder.stdout.readline().split()[0] == "held"  # its grandchild left and exited

        second = driver(lock, database, tmp_path, "r")
        assert second.returncode == 4, second.stdout + second.stderr
        assert second.stdout.strip() == "busy r"
        assert effects(tmp_path, "r") == {}
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout.close()


def run_lock_file(database: Path, run_id: str) -> Path:
    """The flock file of `run_id` (macOS), as `runlock` names it."""
    from synaptum_lite.stores import runlock

    digest = int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:8], "big")
    offset = runlock._RUN_LOCKS_FROM + (digest >> 3)
    return Path(f"{os.path.realpath(database)}.locks") / f"{offset:x}.lock"


def hold_once(database: Path) -> None:
    async def scenario():
        async with SqliteCheckpointer(database).hold("r"):
            pass

    run(scenario())


def test_without_ofd_locks_a_lock_folder_that_is_a_file_is_named(tmp_path, monkeypatch):
    import fcntl

    monkeypatch.delattr(fcntl, "F_OFD_SETLK", raising=False)  # as on macOS
    (tmp_path / "runs.db.locks").write_text("no soy una carpeta")

    with pytest.raises(LockFailed) as error:
        hold_once(tmp_path / "runs.db")
    assert error.value.cause.startswith("runs.db.locks: EEXIST: ")


def test_without_ofd_locks_a_lock_file_that_is_a_folder_is_named(tmp_path, monkeypatch):
    import fcntl

    monkeypatch.delattr(fcntl, "F_OFD_SETLK", raising=False)
    lock_file = run_lock_file(tmp_path / "runs.db", "r")
    lock_file.mkdir(parents=True)

    with pytest.raises(LockFailed) as error:
        hold_once(tmp_path / "runs.db")
    assert error.value.cause.startswith(f"runs.db.locks{os.sep}{lock_file.name}: EISDIR: ")


def test_without_ofd_locks_a_lock_file_this_process_may_only_read_still_locks(tmp_path):
    """flock needs no right to write: a lock file another user made (here, its folder mounted
    read-only) still gives one driver per run; it was LockFailed (EROFS)."""
    namespace = _namespace()
    if namespace is None:
        pytest.skip("needs `unshare` allowed to make a mount namespace (Linux) for a bind mount")
    database = tmp_path / "runs.db"
    lock_file = run_lock_file(database, "r")
    lock_file.parent.mkdir()
    lock_file.touch()
    code = (
        f"{WITHOUT_OFD_LOCKS}import asyncio; from synaptum_lite import SqliteCheckpointer\n"
        "async def main():\n"
        f"    async with SqliteCheckpointer({str(database)!r}).hold('r'):\n"
        "        print('held')\n"
        "asyncio.run(main())"
    )
    mount = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1"'
    held = subprocess.run(
        [*namespace, "sh", "-c", f'{mount} && exec "$2" -c "$3"', "sh"]
        + [str(lock_file.parent), sys.executable, code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert held.returncode == 0, held.stderr
    assert held.stdout == "held\n"
