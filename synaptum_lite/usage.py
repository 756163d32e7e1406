"""Usage, read from the journal alone: per model turn, per run, sub-runs included.

Unmeasured is not zero: a counter a provider did not report is `None`, and any sum that
includes it stays `None`. A resumed run's paid work is in its journal once, so it counts once.
"""

from __future__ import annotations

from dataclasses import dataclass

from .checkpointer import Checkpointer, load_events
from .events import DelegationStep, ModelStep, Phase
from .messages import Usage


@dataclass(frozen=True, slots=True)
class TurnUsage:
    """One paid model call (a person's answer in a fork is none): its usage, how much its
    input grew over the previous turn's input, and the share of its input served from the
    provider's cache."""

    step_id: str
    usage: Usage
    input_growth: int | None
    cached_share: float | None


@dataclass(frozen=True, slots=True)
class RunUsage:
    """A run's usage: its own turns, what its sub-runs used, and the total of both."""

    run_id: str
    turns: tuple[TurnUsage, ...]
    own: Usage
    delegated: Usage
    total: Usage


async def run_usage(checkpointer: Checkpointer, run_id: str) -> RunUsage:
    """Compute a run's usage from its journal (its sub-runs' totals are in their steps)."""
    turns: list[TurnUsage] = []
    own, delegated = Usage(0, 0, 0), Usage(0, 0, 0)
    previous_input: int | None = None
    for event in await load_events(checkpointer, run_id):
        if event.phase is not Phase.COMPLETED:
            continue
        if isinstance(event, ModelStep) and event.response is not None and not event.replaced_by:
            usage = event.response.usage
            own += usage
            growth = None
            if usage.input_tokens is not None and previous_input is not None:
                growth = usage.input_tokens - previous_input
            share = None
            if usage.input_tokens and usage.cached_tokens is not None:
                share = usage.cached_tokens / usage.input_tokens
            turns.append(TurnUsage(event.step_id, usage, growth, share))
            previous_input = usage.input_tokens
        elif isinstance(event, DelegationStep) and event.usage is not None:
            delegated += event.usage
    return RunUsage(run_id, tuple(turns), own, delegated, own + delegated)
