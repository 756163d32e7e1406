"""One pass of a run: what the loop carries from step to step, and the small acts of its steps.

`Agent._drive` reads top to bottom as check → act → record; what it asks here is one line
each: may this call leave (the gateway's policy), record a refused call, do a tool step's
work, record the final step.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from .context import Context
from .errors import ConfigurationError
from .events import Decision, DelegationStep, FinalStep, Phase, ToolStep, step_id
from .execution import run_delegation, run_tool
from .journal import Journal
from .messages import ToolCall, ToolResult, Usage
from .policy import Action, Proposal, Verdict
from .session import Session
from .tools import Tool, ToolContext

if TYPE_CHECKING:
    from .agent import Agent


class RunPass:
    """What one pass of a run carries from step to step: its journal, its session, the
    context window rebuilt so far, and the usage added up so far."""

    # a plain class, not a dataclass: nothing compares or prints it, and @dataclass compiles
    # its methods when the package is imported (0.3 ms)
    __slots__ = ("journal", "session", "context", "usage", "tools", "delegates")

    def __init__(
        self,
        journal: Journal,
        session: Session,
        context: Context,
        usage: Usage,
        tools: dict[str, Tool],  # what the model may call: the agent's tools, its delegates
        delegates: dict[str, Agent],
    ) -> None:
        self.journal = journal
        self.session = session
        self.context = context
        self.usage = usage
        self.tools = tools
        self.delegates = delegates

    def review_model_call(self) -> str | None:
        """Ask the gateway whether a new model call may leave; the reason if it ends the run."""
        history = self.journal.peek()
        if history is not None and history.completed is not None:
            return None  # already paid: replayed, not reviewed again
        proposal = Proposal(self.session.run_id, step_id(self.journal.position, "model"), "model")
        verdict = self.session.gateway.review(proposal)
        if verdict.action is Action.TERMINATE:
            return verdict.reason
        if verdict.action is not Action.ALLOW:
            raise ConfigurationError(
                f"a model call can be allowed or terminated, the policy said {verdict.action.value}"
            )
        return None

    def review_tool_call(self, kind: str, call: ToolCall, target: Tool | None) -> Verdict:
        """Ask the gateway whether a call never journaled may run."""
        proposal = Proposal(
            self.session.run_id,
            step_id(self.journal.position, kind),
            kind,
            call,
            target.risk if target else None,
            target.idempotent if target else None,
        )
        return self.session.gateway.review(proposal)

    async def refuse(self, kind: str, call: ToolCall, decision: Decision) -> ToolStep:
        """Record a call that was refused before it ran: an outcome the model reads, not an
        uncertain effect. Its attempted and completed events are one commit (neither was
        yielded before)."""
        refused_id, history = self.journal.next_step(kind)
        if history is not None and isinstance(history.completed, ToolStep):
            return history.completed.as_replayed()
        cls = DelegationStep if kind == "delegate" else ToolStep
        result = ToolResult(f"denied by {decision['by']}: {decision.get('reason')}", is_error=True)
        attempted = cls(
            run_id=self.session.run_id, step_id=refused_id, phase=Phase.ATTEMPTED, call=call
        )
        completed = dataclasses.replace(
            attempted, phase=Phase.COMPLETED, result=result, decision=decision
        )
        await self.journal.write(attempted, completed)
        return completed

    async def perform(self, call: ToolCall, target: Tool | None, attempted: ToolStep) -> ToolStep:
        """Do the work of an attempted tool step (or delegation); its completed event."""
        context = ToolContext(self.session.run_id, attempted.step_id, attempted.attempt)
        if isinstance(attempted, DelegationStep):
            sub_agent, shown_as = self.delegates[call.name], self.tools[call.name]
            result, usage = await run_delegation(self.session, sub_agent, shown_as, call, context)
            return dataclasses.replace(attempted, phase=Phase.COMPLETED, result=result, usage=usage)
        result = await run_tool(self.session, target, call, context, self.tools)
        return ToolStep(
            run_id=attempted.run_id,
            step_id=attempted.step_id,
            phase=Phase.COMPLETED,
            attempt=attempted.attempt,
            call=attempted.call,
            result=result,
        )

    async def record_not_started(self, attempted: ToolStep) -> None:
        """Journal that the attempt `attempted` never began: the runtime's own decision."""
        decision: Decision = {
            "action": "not_started",
            "by": "runtime",
            "reason": "the run was closed before the tool began",
        }
        resolved = dataclasses.replace(attempted, phase=Phase.RESOLVED, decision=decision)
        try:
            await self.journal.write(resolved)
        except Exception:  # noqa: BLE001 - unrecorded, the step stays uncertain, as after a crash
            pass

    async def finish(
        self, *, text: str | None = None, output: Any = None, reason: str | None = None
    ) -> FinalStep:
        """Record the run's final step: its answer, or the reason it ended without one."""
        final_id, _ = self.journal.next_step("final")
        final = FinalStep(
            run_id=self.session.run_id,
            step_id=final_id,
            text=text,
            output=output,
            reason=reason,
            usage=self.usage,
        )
        await self.journal.write(final)
        return final
