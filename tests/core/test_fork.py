"""Fork under real processes: a run another process holds is refused, and a fork SIGKILLed at
any point of its writes leaves no fork or the whole fork, never a part of one.

The original is the boss of `fork_agents.py`: it delegated a payment to its treasurer (a
sub-run), then answered. The fork starts at the boss's last model step, so it carries the
delegation and its sub-run. A fork that lost its events or its sub-run would be a new run to
the boss, which would delegate, and pay, again: the payments counted after every kill say
whether that happened. Every test runs on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from synaptum_lite import ForkRefused, fork
from tests.bounds import HANG
from tests.postgres.store import postgres_location

from .agents import open_store
from .busy_child import held_elsewhere
from .fork_agents import PAGOS, drive_jefe, gateway_jefe
from .test_kill import ROOT

pytestmark = pytest.mark.posix_signals  # it SIGKILLs child processes

STORE_KINDS = ["sqlite", "postgres"]

#: Where a fork of the boss's run can die: it writes two runs (the sub-run, then the fork),
#: each in one transaction, and can die before each, inside each, or after each.
KILL_POINTS = [f"{where}:{n}" for n in (1, 2) for where in ("before", "inside", "after")]


def store_in(kind: str, tmp: Path) -> str:
    return str(tmp / "runs.db") if kind == "sqlite" else postgres_location(tmp)


def forker(store: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.core.fork_child", store, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG,
    )


@pytest.fixture(params=STORE_KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


def original(store: str) -> list[tuple[object, ...]]:
    """Run the boss as `p` (it pays once, through its treasurer); its records."""
    PAGOS.clear()
    asyncio.run(drive_jefe(open_store(store), "p", gateway_jefe()))
    assert PAGOS == ["p/000001-delegate/000001-tool"]
    return records(store, "p")


def records(store: str, run_id: str) -> list[tuple[object, ...]]:
    return [tuple(r) for r in asyncio.run(open_store(store).records(run_id))]


def header(store: str, run_id: str) -> dict[str, object] | None:
    return asyncio.run(open_store(store).load(run_id)).header


def same_events(a: list[tuple[object, ...]], b: list[tuple[object, ...]]) -> bool:
    return [r[1:4] + (r[4],) for r in a] == [r[1:4] + (r[4],) for r in b]


def test_a_run_held_by_a_driver_in_another_process_is_not_forked(kind, tmp_path):
    store = store_in(kind, tmp_path)
    with held_elsewhere(store, "r", tmp_path / "suelta"):
        with pytest.raises(ForkRefused) as refused:
            asyncio.run(fork(open_store(store), "r", at=0, new_run_id="f"))
        assert header(store, "f") is None  # nothing was written
    assert refused.value.reason == "busy"
    assert str(refused.value).startswith("cannot fork run 'r': a driver holds run 'r' now (")
    assert str(refused.value).endswith(
        "wait for it to finish or stop it, then fork again; nothing was written"
    )
    # let go by its driver, the same run forks
    forked = asyncio.run(fork(open_store(store), "r", at=0, new_run_id="f"))
    assert forked.events == 0 and header(store, "f") is not None


@pytest.mark.parametrize("kill_point", KILL_POINTS)
def test_a_fork_killed_at_any_point_leaves_no_fork_or_the_whole_fork(kind, tmp_path, kill_point):
    reference = str(tmp_path / "referencia.db")  # the same fork, never killed, elsewhere
    asyncio.run(drive_jefe(open_store(reference), "p", gateway_jefe()))
    assert forker(reference, "p", "q", "000002-model").returncode == 0
    store = store_in(kind, tmp_path)
    source = original(store)

    killed = forker(store, "p", "q", "000002-model", "--die", kill_point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    assert records(store, "p") == source  # the original, as it was
    fork_there = header(store, "q") is not None
    if fork_there:  # whole: every event, and its sub-run whole too
        assert same_events(records(store, "q"), records(reference, "q"))
        assert same_events(
            records(store, "q/000001-delegate"), records(reference, "q/000001-delegate")
        )
    else:
        assert records(store, "q") == []
    assert fork_there == (kill_point == "after:2")
    # a sub-run is whole or absent too; one written before the kill is taken as it is
    sub_run = records(store, "q/000001-delegate")
    assert sub_run == [] or same_events(sub_run, records(reference, "q/000001-delegate"))

    if not fork_there:  # the same fork again finishes it
        again = forker(store, "p", "q", "000002-model")
        assert again.returncode == 0, again.stderr
        assert again.stdout == "forked q 4\n"
    gateway = gateway_jefe()
    steps = asyncio.run(drive_jefe(open_store(store), "q", gateway))
    assert steps[-1].output == "el tesorero pagó"
    assert (gateway.model_calls, gateway.tool_calls) == (1, 0)  # the prefix paid nothing
    assert PAGOS == ["p/000001-delegate/000001-tool"]  # and no payment was made twice


def test_a_store_without_start_with_or_a_step_that_is_no_step_is_refused_before_anything(
    tmp_path,
):
    from synaptum_lite import ConfigurationError, MemoryCheckpointer

    from .fork_agents import drive

    class Piecewise:  # a store a user wrote, without the one-transaction write
        def __init__(self, store):
            self.store = store

        def __getattr__(self, name):
            if name == "start_with":
                raise AttributeError(name)
            return getattr(self.store, name)

    store = MemoryCheckpointer()
    asyncio.run(drive(store, "r"))
    with pytest.raises(ConfigurationError, match=r"has no start_with\(run_id, header, events\)"):
        asyncio.run(fork(Piecewise(store), "r", at=3, new_run_id="f"))
    for at in (3.0, True, None):
        with pytest.raises(ConfigurationError, match="at must be a step number or a step id"):
            asyncio.run(fork(store, "r", at=at, new_run_id="f"))
    with pytest.raises(ConfigurationError, match="by must name who answers"):
        asyncio.run(fork(store, "r", at=4, new_run_id="f", answer="sí", by=" "))
    assert asyncio.run(store.run_ids()) == ["r"]


def test_a_sub_run_name_taken_by_another_run_refuses_the_fork_before_anything_is_written():
    """A sub-run left whole by a fork killed before it wrote the fork is taken as it is (the
    kill test shows it); any other run under that name is not the fork's, and refuses it."""
    from synaptum_lite import MemoryCheckpointer

    store = MemoryCheckpointer()
    asyncio.run(drive_jefe(store, "p", gateway_jefe()))
    asyncio.run(store.start("q/000001-delegate", {"format": 1, "agent": {}, "task": "otra"}))
    with pytest.raises(ForkRefused) as refused:
        asyncio.run(fork(store, "p", at="000002-model", new_run_id="q"))
    assert refused.value.reason == "taken"
    assert "run 'q/000001-delegate' already exists: choose another new run id" in str(refused.value)
    assert asyncio.run(store.load("q")).header is None
