"""A budget survives a real kill: a child process drives a run under a token budget and is
SIGKILLed mid-run; the resume counts what the killed pass paid (from the journal) and stops
exactly where the budget says. Model calls are counted in a file the double writes before
answering, so the calls of a process that died are counted too. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import itertools
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from synaptum_lite import Budget, BudgetExceeded, FinalStep, MemoryCheckpointer, Session, run_usage
from tests.bounds import HANG

from .agents import open_store
from .budget_agents import ANSWER, TASK, contador, double
from .test_kill import STORE_KINDS, store_in

pytestmark = pytest.mark.posix_signals  # it SIGKILLs child processes

ROOT = Path(__file__).resolve().parents[2]


def paid_in_the_reference_run() -> list[int]:
    """Tokens (input + output) of each model call of a run nobody killed, cumulated."""

    async def scenario():
        store = MemoryCheckpointer()
        async for _ in contador().run(TASK, session=Session("ref", double(), store)):
            pass
        return (await run_usage(store, "ref")).turns

    turns = asyncio.run(scenario())
    return list(itertools.accumulate(t.usage.input_tokens + t.usage.output_tokens for t in turns))


async def resume(store: str, run_id: str, limit: int):
    """Drive the run once more in this process; what it raised, paid and answered."""
    gateway = double()
    session = Session(run_id, gateway, open_store(store), budget=Budget(total_tokens=limit))
    final, error = None, None
    try:
        async for step in contador().run(TASK, session=session):
            if isinstance(step, FinalStep):
                final = step
    except BudgetExceeded as exc:
        error = exc
    return error, gateway.model_calls, gateway.tool_calls, final


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_resume_counts_what_the_killed_pass_paid_and_stops_where_the_budget_says(kind, tmp_path):
    cumulative = paid_in_the_reference_run()
    allowed = 4  # three calls leave the run under the limit; the fourth crosses it
    limit = cumulative[allowed - 2] + 1
    store, calls_file = store_in(kind, tmp_path), tmp_path / "calls"
    child = subprocess.run(
        [sys.executable, "-m", "tests.core.budget_agents", store, "r", str(calls_file)]
        + [str(limit), "--die-after-model", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    paid_by_the_dead = len(calls_file.read_text().splitlines())
    assert paid_by_the_dead == 2

    error, paid_now, _, _ = asyncio.run(resume(store, "r", limit))
    assert isinstance(error, BudgetExceeded)
    assert paid_by_the_dead + paid_now == allowed  # the dead pass's two count: never more
    assert (error.step_id, error.spent, error.of.calls) == ("000008-model", cumulative[3], 4)
    # a counter kept by this process alone would have started at 0: it lets calls through
    # until this pass's own spending reaches the limit, past what the budget allows
    tokens = [b - a for a, b in itertools.pairwise([0, *cumulative])]
    naive, spent_here = paid_by_the_dead, 0
    while spent_here < limit and naive < len(tokens):
        spent_here, naive = spent_here + tokens[naive], naive + 1
    assert naive > allowed

    error, again, _, _ = asyncio.run(resume(store, "r", limit))  # refused at once, for free
    assert (again, error.step_id) == (0, "000008-model")

    error, rest, tools, final = asyncio.run(resume(store, "r", cumulative[-1]))
    assert error is None and final.output == ANSWER
    assert (rest, tools) == (len(cumulative) - allowed, 1)  # nothing journaled paid again
    assert paid_by_the_dead + paid_now + rest == len(cumulative)  # as a run nobody killed


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_call_a_killed_pass_sent_but_never_journaled_is_not_counted_and_is_said(kind, tmp_path):
    cumulative = paid_in_the_reference_run()
    limit = cumulative[2] + 1  # four calls in all, counted from the journal
    store, calls_file = store_in(kind, tmp_path), tmp_path / "calls"
    child = subprocess.run(
        [sys.executable, "-m", "tests.core.budget_agents", store, "r", str(calls_file)]
        + [str(limit), "--die-in-model", "3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert len(calls_file.read_text().splitlines()) == 3  # the third was answered, then death

    error, paid_now, _, _ = asyncio.run(resume(store, "r", limit))
    assert isinstance(error, BudgetExceeded)
    # the lost call is asked again (a model call may be), and counted only once journaled: the
    # provider may have billed it twice; the budget cannot know, and says how many were lost
    assert paid_now == 2
    assert (error.spent, error.of.calls, error.of.lost) == (cumulative[3], 4, 1)
    assert "1 call(s) sent by a killed pass, never journaled, not counted" in str(error)
