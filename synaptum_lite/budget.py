"""Budgets: a limit on what a run may spend, counted from its journal, checked before each
model call.

A `Budget` is given to a `Session`: it is the operator's limit for driving the run, not part of
the agent's configuration, so it is not recorded in the journal's header and a resume may
bring another one. Raising the budget of a run it stopped is how an operator lets it finish;
nothing journaled is paid again.

What is spent is read from the journals, never from a counter in memory: every model call
answered in any pass of the run (a pass killed with SIGKILL included) and in its sub-runs.
Before each model call that is not already journaled, the budget compares what was spent with
its limits. The check is made before a call, not during it: a call that starts under the limit
is paid whole, even when it ends over it, and the next call is refused. So a run spends at
most its limit plus one model call (its sub-runs share the limit of the run they belong to).

Not measured is not zero. A run whose spending a budget cannot measure stops before its next
model call, naming why: a turn whose tokens the gateway did not report, or, under a cost
limit, a model without a price. The one thing a journal cannot count is a call a killed pass
sent whose answer never reached it: its usage was never reported to anyone here. It is not
counted; `Spent.lost` says how many there were, and so do the errors.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .checkpointer import Checkpointer, load_events
from .errors import ConfigurationError, SynaptumError
from .events import DelegationStep, MigrationStep, ModelStep
from .journal import index
from .messages import Usage

TOKENS, COST = "total tokens (input + output)", "cost"
_SUB_RUN = re.compile(r"(.+)/(\d{6}-delegate)")


@dataclass(frozen=True, slots=True)
class Budget:
    """At most `total_tokens` (input + output, cached input included) and at most `cost`,
    over a run and its sub-runs. Either limit may be None (no limit), not both.

    `prices` maps a model to its price per million tokens, `(input, output)`, in any currency
    (the cost is in the same one); under a cost limit, every model the run calls needs one.
    Each call is priced by the model that made it: after a migration, the new agent's.

    Checked before each model call not yet journaled, against what the journals say the run and
    its sub-runs paid in every pass: a call that starts under the limits is paid whole and the
    next is refused (`BudgetExceeded`); spending it cannot measure stops the run too
    (`BudgetUnmeasured`). A pass reads the journals once, at its first model call (and again
    after a delegation), and adds each call it pays: not one read per call. It belongs to the
    `Session`, not to the agent's configuration: a resume may bring a larger one, which is how
    an operator finishes a stopped run.
    """

    total_tokens: int | None = None
    cost: float | None = None
    prices: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.total_tokens is None and self.cost is None:
            raise ConfigurationError(
                "a Budget limits something: give total_tokens=..., cost=... or both"
            )
        tokens = self.total_tokens
        if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int)):
            raise ConfigurationError(f"total_tokens must be a whole number, got {tokens!r:.80}")
        for what, value in [("total_tokens", tokens), ("cost", self.cost)]:
            if value is not None and not _amount(value):
                raise ConfigurationError(
                    f"{what} must be a finite number, 0 or more; got {value!r:.80}"
                )
        if not isinstance(self.prices, Mapping):
            raise ConfigurationError(
                f"prices must map a model to (input, output), got {self.prices!r:.80}"
            )
        for model, price in self.prices.items():
            if not (isinstance(price, tuple) and len(price) == 2 and all(map(_amount, price))):
                raise ConfigurationError(
                    f"the price of model {model!r} must be (input, output) per million tokens, "
                    f"two numbers, 0 or more; got {price!r:.80}"
                )

    async def spent(self, checkpointer: Checkpointer, run_id: str) -> Spent:
        """What the run `run_id` and its sub-runs paid, read from their journals."""
        calls, lost = await _paid_calls(checkpointer, run_id)
        spent = Spent(run_id, 0, 0, 0.0, lost, None, None)
        for call in calls:
            spent = self._plus(spent, call)
        return spent

    def _plus(self, spent: Spent, call: _PaidCall) -> Spent:
        """`spent` and one more answered call."""
        tokens, cost = spent.tokens, spent.cost
        why_tokens, why_cost = spent.tokens_unmeasured, spent.cost_unmeasured
        used_in, used_out = call.usage.input_tokens, call.usage.output_tokens
        if used_in is None or used_out is None:
            missing = "input" if used_in is None else "output"
            missing = "input or output" if used_in is None and used_out is None else missing
            why = f"{call.where} has no {missing} token count (the gateway did not measure it)"
            tokens, cost = None, None
            why_tokens, why_cost = why_tokens or why, why_cost or why
        else:
            tokens = None if tokens is None else tokens + used_in + used_out
            price = self.prices.get(call.model) if call.model is not None else None
            if price is None:
                cost = None
                why_cost = why_cost or f"{call.where} used {_model(call)}, which has no price"
            elif cost is not None:
                cost += (used_in * price[0] + used_out * price[1]) / 1_000_000
        return Spent(spent.run_id, spent.calls + 1, tokens, cost, spent.lost, why_tokens, why_cost)

    async def check(
        self, checkpointer: Checkpointer, run_id: str, *, step_id: str, models: set[str]
    ) -> None:
        """Raise unless the model call `step_id` of run `run_id`, by one of `models`, may be
        made: `BudgetUnmeasured` when what was spent cannot be measured (or a model has no
        price under a cost limit), `BudgetExceeded` when a limit is reached."""
        await self._check(checkpointer, run_id, step_id=step_id, models=models, tally=Tally())

    async def _check(
        self,
        checkpointer: Checkpointer,
        run_id: str,
        *,
        step_id: str,
        models: set[str],
        tally: Tally,
    ) -> None:
        """`check`, with what was spent taken from `tally` once it read the journals."""
        unpriced = sorted(models - self.prices.keys()) if self.cost is not None else []
        if unpriced:
            priced = ", ".join(map(repr, sorted(self.prices))) or "none"
            raise BudgetUnmeasured(
                run_id, step_id, COST, f"the model {unpriced[0]!r} has no price (priced: {priced})"
            )
        if tally.spent is None:
            tally.spent = await self.spent(checkpointer, await _root(checkpointer, run_id))
        spent = tally.spent
        for measure, limit, value, why in [
            (TOKENS, self.total_tokens, spent.tokens, spent.tokens_unmeasured),
            (COST, self.cost, spent.cost, spent.cost_unmeasured),
        ]:
            if limit is not None and value is None:
                raise BudgetUnmeasured(run_id, step_id, measure, str(why))
            if limit is not None and value is not None and value >= limit:
                raise BudgetExceeded(run_id, step_id, measure, value, limit, spent)

    def _paid(self, tally: Tally, step: ModelStep, model: str | None) -> None:
        """Add to `tally` the model call `step` by `model`, just answered and journaled."""
        assert step.response is not None  # a completed model step holds its response
        if tally.spent is not None:  # else the next check reads the journals
            where = f"step {step.step_id} of run {step.run_id!r}"
            tally.spent = self._plus(tally.spent, _PaidCall(where, model, step.response.usage))


@dataclass(slots=True)
class Tally:
    """What one pass of a run knows it spent: read from the journals at its first model call
    and added to as the pass pays (`_paid`), or None: read them again, as after a delegation,
    whose sub-run or remote agent paid."""

    spent: Spent | None = None


@dataclass(frozen=True, slots=True)
class Spent:
    """What a run and its sub-runs paid: `calls` model calls answered and journaled, their
    `tokens` (input + output) and `cost`; None is *not measured*, and `*_unmeasured` says why.
    `lost` counts calls a pass sent but died before journaling their answer: not counted."""

    run_id: str
    calls: int
    tokens: int | None
    cost: float | None
    lost: int
    tokens_unmeasured: str | None
    cost_unmeasured: str | None


class BudgetExceeded(SynaptumError):
    """A run's budget is spent: the model call `step_id` was not made."""

    def __init__(
        self, run_id: str, step_id: str, measure: str, spent: float, limit: float, of: Spent
    ) -> None:
        self.run_id, self.step_id, self.measure = run_id, step_id, measure
        self.spent, self.limit, self.of = spent, limit, of
        whose = (
            "" if of.run_id == run_id else f" by run {of.run_id!r}, which this sub-run is part of"
        )
        lost = (
            f"; {of.lost} call(s) sent by a killed pass, never journaled, not counted"
            if of.lost
            else ""
        )
        super().__init__(
            f"run {run_id!r}: budget reached: {_show(spent, measure)} {measure} spent{whose}, "
            f"limit {_show(limit, measure)}; counted from the journal (every pass, sub-runs "
            f"included, {of.calls} model call(s) paid{lost}); the model call {step_id} was not "
            "made. Resume the same run_id with a larger Budget to let it finish: nothing "
            "journaled is paid again"
        )


class BudgetUnmeasured(SynaptumError):
    """A run is under a budget that cannot measure what it spends: the model call `step_id`
    was not made, since not measured is not zero."""

    def __init__(self, run_id: str, step_id: str, measure: str, reason: str) -> None:
        self.run_id, self.step_id, self.measure, self.reason = run_id, step_id, measure, reason
        super().__init__(
            f"run {run_id!r}: a budget on {measure} cannot be measured: {reason}. Not measured "
            f"is not zero, so the model call {step_id} was not made. "
            + (
                "Give every model a price (Budget(prices={model: (input, output)}))"
                if "no price" in reason
                else "Use a gateway that reports usage"
            )
            + f", or resume without a limit on {measure}"
        )


@dataclass(frozen=True, slots=True)
class _PaidCall:
    where: str  # "step 000002-model of run 'r'"
    model: str | None  # None: a remote delegate's, whose model no journal here records
    usage: Usage


async def _paid_calls(checkpointer: Checkpointer, run_id: str) -> tuple[list[_PaidCall], int]:
    """Every model call answered in the journal of `run_id` and of its sub-runs, and how many
    were sent and never answered there."""
    state = await checkpointer.load(run_id)
    model = state.header["agent"].get("model") if state.header else None
    calls: list[_PaidCall] = []
    lost = 0
    steps = index(await load_events(checkpointer, run_id))
    for position in sorted(steps):
        history = steps[position]
        where = f"step {history.step_id} of run {run_id!r}"
        done, started = history.completed, history.attempted
        if isinstance(done, MigrationStep):  # the calls after it are the new agent's model's
            model = done.configuration.get("model")
        if isinstance(done, ModelStep) and done.response is not None:
            calls.append(_PaidCall(where, model, done.response.usage))
        if isinstance(started, ModelStep):
            lost += history.attempt - (1 if done is not None else 0)
        if not isinstance(started, DelegationStep):
            continue
        if (await checkpointer.load(started.sub_run_id)).header is not None:
            sub_calls, sub_lost = await _paid_calls(checkpointer, started.sub_run_id)
            calls, lost = calls + sub_calls, lost + sub_lost
        elif isinstance(done, DelegationStep) and done.usage is not None:  # a remote agent's
            calls.append(_PaidCall(where, None, done.usage))
    return calls, lost


async def _root(checkpointer: Checkpointer, run_id: str) -> str:
    """The run a sub-run belongs to (its parent's, up to the top): what its budget limits."""
    sub_run = _SUB_RUN.fullmatch(run_id)
    if sub_run is None:
        return run_id
    parent, step_id = sub_run.groups()
    if any(
        isinstance(e, DelegationStep) and e.step_id == step_id
        for e in await load_events(checkpointer, parent)
    ):
        return await _root(checkpointer, parent)
    return run_id  # a run merely named like a sub-run


def models_of(configuration: Mapping[str, Any]) -> set[str]:
    """The models an agent's configuration calls: its own and its delegates', recursively."""
    return set(_models(configuration))


def _models(configuration: Mapping[str, Any]) -> Iterator[str]:
    if isinstance(configuration.get("model"), str):
        yield configuration["model"]
    for delegate in (configuration.get("delegates") or {}).values():
        if isinstance(delegate, Mapping):
            yield from _models(delegate)


def _amount(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0 <= value < math.inf


def _model(call: _PaidCall) -> str:
    return f"model {call.model!r}" if call.model is not None else "a remote agent's model"


def _show(value: float, measure: str) -> str:
    return f"{value:,}" if measure == TOKENS else f"{value:,.6f}".rstrip("0").rstrip(".")
