"""Several runs in one process at once, SIGKILLed together, resumed together.

The child is notebook 18's own (`notebooks/propiedades/_hijo_18.py`): it drives three cashier
runs as asyncio tasks over one SQLite file, interleaved at every model and tool call, and is
killed after each of the 33 events the three runs receive together, and inside each run's
non-idempotent transfer. One resume pass then drives all three at once in this process.

The oracle, per run: every model call paid once between the two processes, the transfer
executed exactly once (a person records or allows it where it is uncertain, reading the
effects file as notebook 18's operator does), and the answer of an uninterrupted run.
"""

from __future__ import annotations

import asyncio
import importlib.util
import signal
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

import pytest

from synaptum_lite import FinalStep, Session, UncertainEffect, load_events
from tests.bounds import HANG

pytestmark = pytest.mark.posix_signals  # it SIGKILLs child processes

ROOT = Path(__file__).resolve().parents[2]
CHILD = ROOT / "notebooks" / "propiedades" / "_hijo_18.py"
RUNS = ["cliente-1", "cliente-2", "cliente-3"]
MODEL_CALLS_PER_RUN = 3  # saldo, transfer, answer
EVENTS_PER_RUN = 11  # 3 model steps × 2 + 2 tool steps × 2 + the final step


def the_child() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_hijo_18", CHILD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def drive(folder: Path, *death: str) -> subprocess.CompletedProcess[str]:
    folder.mkdir()
    return subprocess.run(
        [sys.executable, str(CHILD), str(folder / "runs.db"), str(folder / "efectos.jsonl")]
        + RUNS
        + list(death),
        capture_output=True,
        text=True,
        timeout=HANG,
    )


def counts(child: ModuleType, folder: Path) -> dict[str, Counter[str]]:
    per_run: dict[str, Counter[str]] = {run: Counter() for run in RUNS}
    for entry in child.leer_apuntes(folder / "efectos.jsonl"):
        per_run[entry["run"]][entry["que"]] += 1
    return per_run


async def resume_all(child: ModuleType, folder: Path) -> dict[str, tuple[str, list[str]]]:
    """One pass, every run at once over one store; a person settles uncertain transfers
    from the effects file."""
    child.EFECTOS, child.MUERE_DENTRO = folder / "efectos.jsonl", None
    store = child.journal(folder / "runs.db")

    async def resume(run: str) -> tuple[str, list[str]]:
        session = Session(run, child.Puerta(run), store)
        decisions: list[str] = []
        while True:
            try:
                async for step in child.agente().run(child.TAREA, session=session):
                    if isinstance(step, FinalStep):
                        return step.output, decisions
            except UncertainEffect as uncertain:
                done = [
                    entry
                    for entry in child.leer_apuntes(folder / "efectos.jsonl")
                    if (entry["run"], entry["que"], entry["argumentos"])
                    == (run, uncertain.tool, uncertain.arguments)
                ]
                if done:
                    await session.record_result(
                        uncertain.step_id, done[0]["resultado"], by="operator"
                    )
                    decisions.append("record_result")
                else:
                    await session.allow_retry(uncertain.step_id, by="operator")
                    decisions.append("allow_retry")

    answers = await asyncio.gather(*(resume(run) for run in RUNS))
    return dict(zip(RUNS, answers, strict=True))


def test_runs_killed_together_at_every_boundary_resume_together_paying_nothing_twice(
    tmp_path: Path,
) -> None:
    child = the_child()
    whole = drive(tmp_path / "whole")
    assert whole.returncode == 0, whole.stderr
    reference = dict(zip(RUNS, whole.stdout.splitlines(), strict=True))
    for run in RUNS:
        events = asyncio.run(load_events(child.journal(tmp_path / "whole" / "runs.db"), run))
        assert len(events) == EVENTS_PER_RUN
    assert all(
        c["modelo"] == MODEL_CALLS_PER_RUN for c in counts(child, tmp_path / "whole").values()
    )

    every_event = range(1, 3 * EVENTS_PER_RUN + 1)  # the last one: every run just closed
    deaths = {f"after-{n:02d}": ("--muere-tras", str(n)) for n in every_event}
    deaths.update({f"inside-{run}": ("--muere-dentro", run) for run in RUNS})
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(
            zip(deaths, pool.map(lambda d: drive(tmp_path / d, *deaths[d]), deaths), strict=True)
        )

    uncertain_resolved = Counter()
    for death, result in results.items():
        assert result.returncode == -signal.SIGKILL, (
            f"{death}: {result.returncode}\n{result.stderr}"
        )
        answers = asyncio.run(resume_all(child, tmp_path / death))
        paid = counts(child, tmp_path / death)
        for run in RUNS:
            answer, decisions = answers[run]
            assert answer == reference[run], f"{death}, {run}: {answer!r}"
            assert paid[run]["modelo"] == MODEL_CALLS_PER_RUN, f"{death}, {run}: {paid[run]}"
            assert paid[run]["transferir"] == 1, f"{death}, {run}: {paid[run]}"
            uncertain_resolved.update(decisions)
    # the sweep reaches both kinds of uncertainty: effect done (record) and not done (retry)
    assert uncertain_resolved["record_result"] >= len(RUNS)
    assert uncertain_resolved["allow_retry"] >= 1


def test_the_runs_of_one_process_interleave_so_a_kill_leaves_several_in_flight(
    tmp_path: Path,
) -> None:
    child = the_child()
    result = drive(tmp_path / "killed", "--muere-dentro", RUNS[1])
    assert result.returncode == -signal.SIGKILL, result.stderr
    store = child.journal(tmp_path / "killed" / "runs.db")
    on_disk = {run: len(asyncio.run(load_events(store, run))) for run in RUNS}
    assert all(0 < n < EVENTS_PER_RUN for n in on_disk.values()), on_disk
