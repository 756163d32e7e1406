"""Two drivers racing for one run: one drives, the other is told "busy" at once; after the
owner is SIGKILLed, the run resumes immediately and no effect happens twice. On SQLite and on
PostgreSQL (the server of tests/postgres/store.py), and in one process on memory and SQLite.

"At once" is checked by ordering, not by a clock: the first driver's tool returns only when
the test creates a file, and the test creates it only after the second driver was refused.
A second driver that waited for the run's lock would wait for ever: the bound ends that hang
with a failure saying so."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from synaptum_lite import Checkpointer, MemoryCheckpointer, SqliteCheckpointer

from .agents import ANSWER
from .busy_child import drive, held_elsewhere
from .test_kill import ROOT, STORE_KINDS, child, effects, store_in

BOUND = 120  # seconds: far more than a refusal needs; reaching it means the driver waited
NOT_AT_ONCE = (
    "the second driver was not refused within {} s while the first driver's tool waited for "
    "that refusal to return: it waits for the run's lock instead of being told RunBusy at once"
)


@pytest.mark.posix_signals  # it SIGKILLs child processes
@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_second_driver_is_refused_at_once_and_a_killed_owner_never_blocks(tmp_path, kind):
    store = store_in(kind, tmp_path)
    owner = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.core.agents",
            store,
            "r",
            str(tmp_path / "r.effects"),
            "--stall-in",
            "transferir",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout.readline().strip() == "stalled"  # inside the transfer, holding the run

        second = child(store, tmp_path, "r")
        assert second.returncode == 4, second.stderr
        assert second.stdout.strip() == "busy r"
        assert effects(tmp_path, "r") == {"consultar_saldo": 1, "transferir": 1}
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        owner.stdout.close()
    assert owner.returncode == -signal.SIGKILL

    # the owner died holding the run: its lock died with it; the transfer is uncertain
    resumed = child(store, tmp_path, "r", "--operator")
    assert resumed.returncode == 0, resumed.stderr
    assert "uncertain 000003-tool transferir" in resumed.stdout
    assert f"final {ANSWER}" in resumed.stdout
    assert effects(tmp_path, "r") == {"consultar_saldo": 1, "transferir": 1, "notificar": 1}


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_second_process_is_refused_before_the_first_ones_tool_returns(tmp_path, kind):
    store, release = store_in(kind, tmp_path), tmp_path / "release"
    with held_elsewhere(store, "r", release) as owner:
        command = [sys.executable, "-m", "tests.core.busy_child", store, "r", str(release)]
        try:
            second = subprocess.run(
                command, cwd=ROOT, capture_output=True, text=True, timeout=BOUND
            )
        except subprocess.TimeoutExpired:
            pytest.fail(NOT_AT_ONCE.format(BOUND))
        assert (second.returncode, second.stdout) == (4, "busy r\n"), second.stderr
        assert owner.poll() is None and not release.exists()  # its tool has not returned


def stores(kind: str, tmp_path: Path) -> Callable[[], Checkpointer]:
    """Each driver's checkpointer: one shared in memory, or its own on one SQLite file."""
    if kind == "memory":
        shared = MemoryCheckpointer()
        return lambda: shared
    return lambda: SqliteCheckpointer(tmp_path / "runs.db")


def started(work: Callable[[], Coroutine[Any, Any, None]], errors: list[BaseException]):
    """A daemon thread running `work` in an event loop of its own; what it raises, kept."""

    def target() -> None:
        try:
            asyncio.run(work())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def wait_for(path: Path) -> None:
    for _ in range(BOUND * 100):  # a bound that only ends a hang
        if path.exists():
            return
        time.sleep(0.01)
    pytest.fail(f"{path.name} never appeared: the first driver never reached its tool")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("second_in", ["another-thread", "the-same-event-loop"])
def test_a_second_driver_in_this_process_is_refused_before_the_first_ones_tool_returns(
    tmp_path, kind, second_in
):
    store, release = stores(kind, tmp_path), tmp_path / "release"
    outcomes: dict[str, str] = {}
    errors: list[BaseException] = []
    refused = threading.Event()

    async def second() -> None:
        outcomes["second"] = await drive(store(), "r", release)
        refused.set()

    async def first() -> None:
        owner = asyncio.create_task(drive(store(), "r", release))
        if second_in == "the-same-event-loop":
            while not release.with_suffix(".paying").exists() and not owner.done():
                await asyncio.sleep(0.01)
            await second()
        outcomes["owner"] = await owner

    owner = started(first, errors)
    try:
        wait_for(release.with_suffix(".paying"))  # the first driver is inside its tool
        if second_in == "another-thread":
            started(second, errors)
        if not refused.wait(BOUND):
            pytest.fail(NOT_AT_ONCE.format(BOUND))
        assert outcomes["second"] == "busy r"
        assert "owner" not in outcomes and not release.exists()  # its tool has not returned
    finally:
        release.touch()
        owner.join(BOUND)
    assert not errors and not owner.is_alive(), errors
    assert outcomes["owner"] == "final pagado"
