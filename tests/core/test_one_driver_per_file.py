"""One driver per run holds for the SQLite *file*, whatever name reaches it.

A worker stalls inside the non-idempotent transfer, holding the run; a second worker opens
the same journal through another name (relative, absolute, a symlink, a hard link) or after
deleting any lock file beside it. It must be told "busy" at once: the transfer runs once and
the model is paid once. Real processes, effects counted in a file, then the owner is
SIGKILLed and the run resumes through the other name.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from synaptum_lite import LockFailed, RunBusy, SqliteCheckpointer
from tests.bounds import HANG

from .agents import ANSWER
from .conftest import run
from .test_kill import ROOT, effects

pytestmark = pytest.mark.posix_signals  # it SIGKILLs child processes


def worker(store: str, tmp: Path, *flags: str, cwd: Path = ROOT, wait: bool = True):
    command = [sys.executable, "-m", "tests.core.agents", store, "r", str(tmp / "r.effects")]
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    if not wait:
        return subprocess.Popen(
            [*command, *flags], cwd=cwd, env=environment, stdout=subprocess.PIPE, text=True
        )
    return subprocess.run(
        [*command, *flags], cwd=cwd, env=environment, capture_output=True, text=True, timeout=HANG
    )


def other_name(variant: str, database: Path) -> tuple[str, Path]:
    """The second name of `database`, as a worker is given it, and the folder it runs in."""
    if variant == "relative":
        return "runs.db", database.parent
    if variant == "dot-dot":
        return f"../{database.parent.name}/./runs.db", database.parent
    if variant == "symlink":
        (database.parent / "alias.db").symlink_to(database)
        return str(database.parent / "alias.db"), ROOT
    if variant == "lock-files-deleted":
        for beside in database.parent.glob("runs.db.lock*"):
            shutil.rmtree(beside) if beside.is_dir() else beside.unlink()
        return str(database), ROOT
    raise AssertionError(variant)


@pytest.mark.parametrize("variant", ["relative", "dot-dot", "symlink", "lock-files-deleted"])
def test_a_second_driver_through_any_name_of_the_file_is_refused(tmp_path, variant):
    database = tmp_path / "runs.db"
    owner = worker(str(database), tmp_path, "--stall-in", "transferir", wait=False)
    try:
        assert owner.stdout.readline().strip() == "stalled"  # inside the transfer, holding r
        name, cwd = other_name(variant, database)

        second = worker(name, tmp_path, cwd=cwd)
        assert second.returncode == 4, second.stdout + second.stderr
        assert second.stdout.strip() == "busy r"
        assert effects(tmp_path, "r") == {"consultar_saldo": 1, "transferir": 1}
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        owner.stdout.close()

    resumed = worker(name, tmp_path, "--operator", cwd=cwd)
    assert resumed.returncode == 0, resumed.stderr
    assert f"final {ANSWER}" in resumed.stdout
    # the owner paid the two calls before it stalled; the resume pays only the two after
    assert "model_calls 2" in resumed.stdout
    assert effects(tmp_path, "r") == {"consultar_saldo": 1, "transferir": 1, "notificar": 1}


def test_a_second_driver_through_a_hard_link_is_refused_and_runs_nothing(tmp_path):
    """SQLite keeps its write-ahead log beside the name it opens, so a second name of the file
    would read another journal (and run the paid steps again): it is refused, saying why."""
    database = tmp_path / "runs.db"
    owner = worker(str(database), tmp_path, "--stall-in", "transferir", wait=False)
    try:
        assert owner.stdout.readline().strip() == "stalled"
        os.link(database, tmp_path / "link.db")

        second = worker(str(tmp_path / "link.db"), tmp_path)
        assert second.returncode == 1
        assert "ConfigurationError: the journal link.db has 2 names (hard links)" in second.stderr
        assert effects(tmp_path, "r") == {"consultar_saldo": 1, "transferir": 1}
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        owner.stdout.close()

    (tmp_path / "link.db").unlink()
    resumed = worker(str(database), tmp_path, "--operator")
    assert resumed.returncode == 0, resumed.stderr
    assert "model_calls 2" in resumed.stdout
    assert effects(tmp_path, "r") == {"consultar_saldo": 1, "transferir": 1, "notificar": 1}


def test_no_file_beside_the_journal_holds_its_locks(tmp_path):
    async def scenario():
        async with SqliteCheckpointer(tmp_path / "runs.db").hold("r"):
            return sorted(p.name for p in tmp_path.iterdir())

    assert run(scenario()) == ["runs.db"]


def test_in_one_process_two_names_of_one_file_share_the_lock(tmp_path):
    (tmp_path / "alias.db").symlink_to(tmp_path / "runs.db")

    async def scenario():
        async with SqliteCheckpointer(tmp_path / "runs.db").hold("r"):
            with pytest.raises(RunBusy):
                async with SqliteCheckpointer(tmp_path / "alias.db").hold("r"):
                    pass
        async with SqliteCheckpointer(tmp_path / "alias.db").hold("r"):
            pass

    run(scenario())


def test_a_journal_that_cannot_be_opened_for_its_lock_is_named_not_reported_busy(tmp_path):
    """A lock that fails for a reason other than another holder is `LockFailed`, naming the
    file and the cause: here the journal's folder is a plain file."""
    (tmp_path / "carpeta").write_text("no soy una carpeta")

    async def scenario():
        async with SqliteCheckpointer(tmp_path / "carpeta" / "runs.db").hold("r"):
            pass

    with pytest.raises(LockFailed) as error:
        run(scenario())
    assert (error.value.location, error.value.run_id) == ("runs.db", "r")
    assert error.value.cause.startswith(("ENOTDIR", "EEXIST"))
    assert "cannot lock run 'r' in runs.db" in str(error.value)


def test_without_ofd_locks_a_symlink_reaches_the_same_flock(tmp_path, monkeypatch):
    """macOS has no F_OFD_SETLK: its flock files live beside the file's real path."""
    import fcntl

    monkeypatch.delattr(fcntl, "F_OFD_SETLK")
    (tmp_path / "alias.db").symlink_to(tmp_path / "runs.db")

    async def scenario():
        async with SqliteCheckpointer(tmp_path / "runs.db").hold("r"):
            with pytest.raises(RunBusy):
                async with SqliteCheckpointer(tmp_path / "alias.db").hold("r"):
                    pass

    run(scenario())
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == ["runs.db.locks"]
