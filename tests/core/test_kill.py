"""Durability after real kills: a child process is SIGKILLed, another resumes the run.

The oracle: killed at every journal boundary (and inside a tool, after its effect), the run
ends with the same answer and the same completed steps as an uninterrupted run; every model
call is paid once; no effect happens twice. Effects are counted by the tools themselves, in
a file that survives the kill. Every test runs on SQLite, on PostgreSQL (the server of
tests/postgres/store.py: the one SYNAPTUM_TEST_POSTGRES_URL names, else one the tests start),
and through `HttpCheckpointer`, on a store server (a process of its own, over SQLite) that the
killed child and the one that resumes both reach over HTTP.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from synaptum_lite import FinalStep, ModelStep, Phase, ToolStep, load_events
from tests.bounds import HANG
from tests.postgres.store import postgres_location

from .agents import ANSWER, open_store
from .http_store import StoreServer, until_free

pytestmark = pytest.mark.posix_signals  # it SIGKILLs child processes

ROOT = Path(__file__).resolve().parents[2]
EVENTS_OF_A_WHOLE_RUN = 15  # 4 model steps × 2 + 3 tool steps × 2 + the final step


STORE_KINDS = ["sqlite", "postgres", "http"]
_SERVERS: list[StoreServer] = []


@pytest.fixture(scope="module", autouse=True)
def _stop_the_store_servers():
    yield
    while _SERVERS:
        _SERVERS.pop().stop()


def store_in(kind: str, tmp: Path) -> str:
    """Where a test's journal lives, as a child process is told: a SQLite file in the test's
    folder, a schema of the test's own on the PostgreSQL test server, or the URL of a store
    server of the test's own over a SQLite file in its folder."""
    if kind == "http":
        _SERVERS.append(StoreServer(tmp / "runs.db", log=tmp / "server.log"))
        return _SERVERS[-1].url
    return str(tmp / "runs.db") if kind == "sqlite" else postgres_location(tmp)


def child(store: str, tmp: Path, run_id: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.core.agents",
            store,
            run_id,
            str(tmp / f"{run_id}.effects"),
            *flags,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG,
    )


def released(store: str, run_id: str) -> None:
    """Wait until a killed child's hold is let go. A store server lets go when it sees the
    child's connection end, an event of its own: wait for it, not for a clock. (The OS drops a
    SQLite lock as the process dies; PostgreSQL's lock goes with the session.)"""
    if store.startswith("http://"):
        asyncio.run(until_free(open_store(store), run_id))


def completed_steps(store: str, run_id: str) -> list[tuple[str, object]]:
    """Each completed step and what it recorded: the model's answer (and the fingerprint of
    the context it answered), the tool's result, the final text."""
    events = asyncio.run(load_events(open_store(store), run_id))
    recorded = {
        ModelStep: lambda e: (e.fingerprint, e.response),
        ToolStep: lambda e: e.result,
        FinalStep: lambda e: e.text,
    }
    return [(e.step_id, recorded[type(e)](e)) for e in events if e.phase is Phase.COMPLETED]


def effects(tmp: Path, run_id: str) -> Counter[str]:
    path = tmp / f"{run_id}.effects"
    lines = path.read_text().splitlines() if path.exists() else []
    return Counter(line.split(" ", 1)[0] for line in lines)


def model_calls(result: subprocess.CompletedProcess[str]) -> int:
    return sum(
        int(line.split()[1])
        for line in result.stdout.splitlines()
        if line.startswith("model_calls")
    )


@pytest.fixture(scope="module", params=STORE_KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def uninterrupted(
    kind: str, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path, subprocess.CompletedProcess[str]]:
    tmp = tmp_path_factory.mktemp(f"uninterrupted-{kind}")
    store = store_in(kind, tmp)
    result = child(store, tmp, "oracle")
    assert result.returncode == 0, result.stderr
    return store, tmp, result


def test_the_uninterrupted_run_pays_four_model_calls_and_each_effect_once(uninterrupted):
    _, tmp, result = uninterrupted
    assert f"final {ANSWER}" in result.stdout
    assert model_calls(result) == 4
    assert effects(tmp, "oracle") == {"consultar_saldo": 1, "transferir": 1, "notificar": 1}


@pytest.mark.parametrize("kill_after", range(1, EVENTS_OF_A_WHOLE_RUN + 1))
def test_a_run_killed_at_every_boundary_resumes_to_the_same_end(
    tmp_path, kind, uninterrupted, kill_after
):
    oracle_store, _, _ = uninterrupted
    store = store_in(kind, tmp_path)
    killed = child(store, tmp_path, "r", "--die-at", str(kill_after))
    assert killed.returncode == -signal.SIGKILL
    released(store, "r")
    # every event the child received was on disk before it was received, the final one too
    on_disk = asyncio.run(load_events(open_store(store), "r"))
    assert len(on_disk) >= kill_after
    assert isinstance(on_disk[-1], FinalStep) == (kill_after == EVENTS_OF_A_WHOLE_RUN)

    resumed = child(store, tmp_path, "r", "--operator")
    assert resumed.returncode == 0, resumed.stderr
    assert f"final {ANSWER}" in resumed.stdout
    # every model call is paid exactly once across both processes: the killed one paid for
    # the model steps it completed, the resumed one only for the rest
    assert model_calls(resumed) == 4 - _model_steps_completed_before(kill_after)
    counts = effects(tmp_path, "r")
    assert all(counts[name] <= 1 for name in ("transferir", "notificar")), counts
    assert counts == {"consultar_saldo": 1, "transferir": 1, "notificar": 1}
    assert completed_steps(store, "r") == completed_steps(oracle_store, "oracle")


def _model_steps_completed_before(kill_after: int) -> int:
    """How many model steps the killed process completed: one per turn of 4 events, whose
    second event is the model's completion."""
    turns, rest = divmod(kill_after, 4)
    return min(4, turns + (1 if rest >= 2 else 0))


@pytest.mark.parametrize("tool_name", ["consultar_saldo", "transferir", "notificar"])
def test_a_kill_inside_a_tool_after_its_effect_is_never_repeated(
    tmp_path, kind, uninterrupted, tool_name
):
    oracle_store, _, _ = uninterrupted
    store = store_in(kind, tmp_path)
    killed = child(store, tmp_path, "r", "--die-in", tool_name)
    assert killed.returncode == -signal.SIGKILL
    released(store, "r")

    blind = child(store, tmp_path, "r")
    if tool_name == "consultar_saldo":  # idempotent: simply runs again
        assert blind.returncode == 0, blind.stderr
    else:  # not idempotent: the runtime does not guess
        assert blind.returncode == 3
        assert "uncertain" in blind.stdout and tool_name in blind.stdout
        resolved = child(store, tmp_path, "r", "--operator")
        assert resolved.returncode == 0, resolved.stderr
        assert f"final {ANSWER}" in resolved.stdout
    counts = effects(tmp_path, "r")
    expected = {"consultar_saldo": 1, "transferir": 1, "notificar": 1}
    if tool_name == "consultar_saldo":
        expected["consultar_saldo"] = 2  # ran, was killed before completing, ran again: allowed
    assert counts == expected
    assert completed_steps(store, "r") == completed_steps(oracle_store, "oracle")


TRANSFER_ATTEMPTED = 7  # the 7th event of the run: 000003-tool (transferir) attempted


def test_a_kill_right_after_a_non_idempotent_tools_attempted_event_leaves_it_uncertain(
    tmp_path, kind
):
    store = store_in(kind, tmp_path)
    killed = child(store, tmp_path, "r", "--die-at", str(TRANSFER_ATTEMPTED))
    assert killed.returncode == -signal.SIGKILL
    released(store, "r")

    # nobody can know whether the tool began: a person has to say
    blind = child(store, tmp_path, "r")
    assert blind.returncode == 3, blind.stderr
    assert "uncertain 000003-tool transferir" in blind.stdout
    assert effects(tmp_path, "r")["transferir"] == 0


def test_a_run_closed_right_after_a_non_idempotent_tools_attempted_event_resumes_unasked(
    tmp_path, kind, uninterrupted
):
    oracle_store, _, _ = uninterrupted
    store = store_in(kind, tmp_path)
    stopped = child(store, tmp_path, "r", "--stop-at", str(TRANSFER_ATTEMPTED))
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped 000003-tool attempted" in stopped.stdout

    # the process knew the tool never began, and journaled it: no person is needed
    resumed = child(store, tmp_path, "r")
    assert resumed.returncode == 0, resumed.stderr
    assert f"final {ANSWER}" in resumed.stdout
    assert effects(tmp_path, "r") == {"consultar_saldo": 1, "transferir": 1, "notificar": 1}
    assert completed_steps(store, "r") == completed_steps(oracle_store, "oracle")
