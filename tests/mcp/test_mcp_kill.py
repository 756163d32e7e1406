"""MCP effects after real kills: a process is SIGKILLed in the middle of a run over notebook
17's server, another resumes it, and the server's own record of its effects is counted.

Two processes can die. The agent's: a child process driving the run is SIGKILLed right after it
receives each event of a tool step, and right after the server answered a call (the effect done,
its step not completed). The server's: it SIGKILLs itself inside a tool, after its effect and
before answering. Either way the resume runs what is safe to run, and where a non-idempotent
tool may have had its effect a person decides from the server's record, as in notebook 06.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from synaptum_lite import FinalStep, Session, SqliteCheckpointer, UncertainEffect
from synaptum_lite.integrations.mcp import McpServerLost
from synaptum_lite.testing import ScriptedGateway
from tests.bounds import HANG

from .incidencias import (
    ANSWER,
    PREFIX,
    ROOT,
    TASK,
    agent,
    effects_of,
    server,
    servidor,
    session,
)

pytestmark = pytest.mark.posix_signals  # it SIGKILLs child processes

#: The events of a tool step in a whole run: model 1-2, consultar 3-4, model 5-6, asignar 7-8,
#: model 9-10, comentar 11-12, model 13-14, avisar_cliente 15-16, model 17-18, final 19.
TOOL_EVENTS = {3: "consultar", 4: "consultar", 7: "asignar", 8: "asignar", 11: "comentar",
               12: "comentar", 15: "avisar_cliente", 16: "avisar_cliente"}  # fmt: skip
ONCE = {"asignar": 1, "comentar": 1, "avisar_cliente": 1}


def child(tmp: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.mcp.incidencias", str(tmp / "runs.db"), "run",
         str(tmp / "efectos.jsonl"), *flags],
        cwd=ROOT, capture_output=True, text=True, timeout=HANG,
    )  # fmt: skip


async def resume(tmp: Path) -> tuple[str | None, list[str]]:
    """Run the run to its end with a healthy server, resolving what is uncertain as a person
    would: the effect is in the server's record (record its result) or it is not (retry)."""
    store, effects = tmp / "runs.db", tmp / "efectos.jsonl"
    decisions: list[str] = []
    while True:
        try:
            async with server(effects) as connected:
                async for step in agent(connected.tools).run(
                    TASK, session=session("run", connected.tools, store)
                ):
                    if isinstance(step, FinalStep):
                        return step.output, decisions
        except UncertainEffect as uncertain:
            tool = uncertain.tool.removeprefix(f"{PREFIX}__")
            record = [
                entry
                for entry in servidor.leer_apuntes(effects)
                if entry["que"] == tool and entry["argumentos"] == uncertain.arguments
            ]
            operator = Session("run", ScriptedGateway([]), SqliteCheckpointer(store))
            if record:
                await operator.record_result(uncertain.step_id, record[0]["resultado"], by="ana")
                decisions.append(f"record {tool}")
            else:
                await operator.allow_retry(uncertain.step_id, by="ana")
                decisions.append(f"retry {tool}")


def mcp_effects(tmp: Path) -> dict[str, int]:
    counted = effects_of(tmp / "efectos.jsonl")
    return {tool: counted[tool] for tool in ONCE}


@pytest.mark.parametrize("event", sorted(TOOL_EVENTS))
def test_the_agent_killed_after_each_event_of_an_mcp_tool_step_repeats_no_effect(tmp_path, event):
    died = child(tmp_path, "--muere-tras", str(event))
    assert died.returncode == -signal.SIGKILL, died.stderr
    answer, decisions = asyncio.run(resume(tmp_path))
    assert answer == ANSWER
    assert mcp_effects(tmp_path) == ONCE
    tool = TOOL_EVENTS[event]
    killed_before_the_call = event % 4 == 3  # on the attempted event: the call never left
    uncertain = tool in ("comentar", "avisar_cliente") and killed_before_the_call
    assert decisions == ([f"retry {tool}"] if uncertain else [])


@pytest.mark.parametrize("tool", ["asignar", "comentar", "avisar_cliente"])
def test_the_agent_killed_when_the_server_has_answered_repeats_no_effect(tmp_path, tool):
    died = child(tmp_path, "--muere-dentro", tool)
    assert died.returncode == -signal.SIGKILL, died.stderr
    answer, decisions = asyncio.run(resume(tmp_path))
    assert answer == ANSWER
    idempotent = tool == "asignar"  # the server's word: it runs again, with no second effect
    assert mcp_effects(tmp_path) == {**ONCE, tool: 2 if idempotent else 1}
    assert decisions == ([] if idempotent else [f"record {tool}"])


@pytest.mark.parametrize("tool", ["asignar", "comentar", "avisar_cliente"])
def test_the_server_killed_inside_each_tool_leaves_its_effect_once_unless_declared_idempotent(
    tmp_path, tool
):
    async def until_the_server_dies():
        async with server(tmp_path / "efectos.jsonl", "--muere-dentro", tool) as connected:
            async for _step in agent(connected.tools).run(
                TASK, session=session("run", connected.tools, tmp_path / "runs.db")
            ):
                pass

    with pytest.raises(McpServerLost, match=f"during the call to tool '{PREFIX}__{tool}'"):
        asyncio.run(until_the_server_dies())
    answer, decisions = asyncio.run(resume(tmp_path))
    assert answer == ANSWER
    idempotent = tool == "asignar"
    assert mcp_effects(tmp_path) == {**ONCE, tool: 2 if idempotent else 1}
    assert decisions == ([] if idempotent else [f"record {tool}"])
