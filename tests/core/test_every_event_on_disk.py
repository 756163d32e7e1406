"""The invariant, the hard way: no event reaches the consumer before it is in the journal.

A child process (`tests.core.every_event_child`) drives a run and SIGKILLs itself right after
it receives its N-th event, for every N. Then this process opens the journal and asserts that
every event the child had received is there: a step's event by its key `(step_id, phase,
attempt)`; a text fragment by what its step promises (the model step's *attempted* event); a
completed delegation by its sub-run's final step. The two scenarios cover every kind of event
the loop yields: model attempted/completed, text fragment, idempotent and non-idempotent tool
attempted/completed, delegation, approval (asked and, replayed, granted), a call refused by
the policy, and the final step. On SQLite and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from synaptum_lite import load_events
from tests.bounds import HANG

from .agents import open_store
from .test_kill import ROOT, STORE_KINDS, store_in

pytestmark = pytest.mark.posix_signals  # it SIGKILLs child processes

SCENARIOS = ["stream", "approval"]
# the kinds of event each scenario must hand its consumer, or the test proves less than it says
KINDS = {
    "stream": {"model", "text", "tool", "delegate", "final"},
    "approval": {"model", "approval", "tool", "final"},
}


def run_child(store: str, run_id: str, scenario: str, kill_at: int) -> tuple[int, list[dict]]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.core.every_event_child",
            store,
            run_id,
            scenario,
            str(kill_at),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    if done.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(f"the child failed ({done.returncode}):\n{done.stderr}")
    return done.returncode, [line for line in lines if "number" in line]


def journaled(store: str, run_id: str) -> set[tuple[str, str, int]]:
    events = asyncio.run(load_events(open_store(store), run_id))
    return {(e.step_id, e.phase.value, e.attempt) for e in events}


def missing_from(store: str, run_id: str, received: list[dict[str, Any]]) -> list[dict]:
    """The received events that the journal does not hold (by what each one promises)."""
    keys = journaled(store, run_id)
    missing = []
    for event in received:
        if event["kind"] == "text":
            promised = any(k[0] == event["step_id"] and k[1] == "attempted" for k in keys)
        else:
            promised = (event["step_id"], event["phase"], event["attempt"]) in keys
            if promised and event["kind"] == "delegate" and event["phase"] == "completed":
                sub_run = f"{run_id}/{event['step_id']}"
                promised = any(k[0].endswith("-final") for k in journaled(store, sub_run))
        if not promised:
            missing.append(event)
    return missing


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_child_killed_right_after_any_event_leaves_every_event_it_received_on_disk(
    tmp_path: Path, kind: str, scenario: str
) -> None:
    store = store_in(kind, tmp_path)
    returncode, whole_run = run_child(store, "oracle", scenario, 0)
    assert returncode == 0
    assert {event["kind"] for event in whole_run} == KINDS[scenario]
    assert not missing_from(store, "oracle", whole_run)

    def kill_after(number: int) -> tuple[int, int, list[dict]]:
        run_id = f"killed-after-{number}"
        returncode, received = run_child(store, run_id, scenario, number)
        return number, returncode, received

    with ThreadPoolExecutor(max_workers=3) as pool:
        outcomes = list(pool.map(kill_after, range(1, len(whole_run) + 1)))
    for number, returncode, received in outcomes:
        assert returncode == -signal.SIGKILL, f"the child was to die after event {number}"
        # it died holding exactly the events the uninterrupted run hands out first
        assert received == whole_run[:number]
        missing = missing_from(store, f"killed-after-{number}", received)
        assert not missing, f"killed after event {number}, the journal lacks {missing}"
    print(f"{scenario} on {kind}: {len(outcomes)} kill points, every received event on disk")
