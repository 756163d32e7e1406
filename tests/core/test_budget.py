"""Budgets, on every store of the conformance suite (memory, SQLite, SQLite single-process,
PostgreSQL): what was spent is read from the journal, checked before each model call; a call
that starts under the limit is paid whole and the next one is refused; not measured is never
zero; raising the budget lets the run finish without paying again for anything journaled."""

from __future__ import annotations

import itertools

import pytest

from synaptum_lite import (
    Budget,
    BudgetExceeded,
    BudgetUnmeasured,
    ConfigurationError,
    FinalStep,
    MemoryCheckpointer,
    ModelResponse,
    Role,
    Session,
    SqliteCheckpointer,
    ToolCall,
    Usage,
    load_events,
    migrate,
    run_usage,
)
from synaptum_lite.testing import ScriptedGateway, calls, says

from .budget_agents import ANSWER, TASK, contador, contar, double, responder
from .conftest import run


async def drive(agent, session):
    final = None
    async for step in agent.run(TASK, session=session):
        if isinstance(step, FinalStep):
            final = step
    return final


def reference_tokens() -> list[int]:
    """Input + output tokens of each of the six model calls of an uninterrupted run."""

    async def scenario():
        store = MemoryCheckpointer()
        await drive(contador(), Session("ref", double(), store))
        return await run_usage(store, "ref")

    usage = run(scenario())
    return [t.usage.input_tokens + t.usage.output_tokens for t in usage.turns]


CUMULATIVE = list(itertools.accumulate(reference_tokens()))


def test_a_token_budget_refuses_the_first_call_it_no_longer_allows(store_factory):
    limit = CUMULATIVE[1] + 1  # two calls leave it under; the third crosses it, paid whole

    async def scenario():
        store = store_factory()
        gateway = double()
        session = Session("r", gateway, store, budget=Budget(total_tokens=limit))
        with pytest.raises(BudgetExceeded) as error:
            await drive(contador(), session)
        return error.value, gateway.model_calls, await load_events(store, "r"), store

    error, paid, events, store = run(scenario())
    assert paid == 3  # the budget allows two; the third started under it: the overshoot
    assert (error.run_id, error.step_id, error.spent, error.limit) == (
        "r",
        "000006-model",
        CUMULATIVE[2],
        limit,
    )
    assert str(error) == (
        f"run 'r': budget reached: {CUMULATIVE[2]} total tokens (input + output) spent, limit "
        f"{limit}; counted from the journal (every pass, sub-runs included, 3 model call(s) "
        "paid); the model call 000006-model was not made. Resume the same run_id with a larger "
        "Budget to let it finish: nothing journaled is paid again"
    )
    assert [e.step_id for e in events][-1] == "000005-tool"  # nothing of the refused call
    assert not run(store.load("r")).closed  # stopped, not ended: it can go on


def test_raising_the_budget_lets_the_stopped_run_finish_without_paying_again(store_factory):
    async def scenario():
        store = store_factory()
        first = double()
        with pytest.raises(BudgetExceeded):
            budget = Budget(total_tokens=CUMULATIVE[1] + 1)
            await drive(contador(), Session("r", first, store, budget=budget))
        again = double()
        with pytest.raises(BudgetExceeded):  # the same budget: refused again, nothing paid
            budget = Budget(total_tokens=CUMULATIVE[1] + 1)
            await drive(contador(), Session("r", again, store, budget=budget))
        second = double()
        raised = Budget(total_tokens=CUMULATIVE[-1])
        final = await drive(contador(), Session("r", second, store, budget=raised))
        return first, again, second, final, await raised.spent(store, "r")

    first, again, second, final, spent = run(scenario())
    assert (first.model_calls, again.model_calls, second.model_calls) == (3, 0, 3)
    assert (first.tool_calls, again.tool_calls, second.tool_calls) == (3, 0, 2)
    assert final.output == ANSWER
    assert (spent.calls, spent.tokens, spent.lost) == (6, CUMULATIVE[-1], 0)


def test_a_model_without_a_price_is_refused_before_anything_is_paid(store_factory):
    async def scenario():
        store = store_factory()
        gateway = double()
        budget = Budget(cost=1.0, prices={"otro": (3.0, 15.0)})
        with pytest.raises(BudgetUnmeasured) as error:
            await drive(contador(), Session("r", gateway, store, budget=budget))
        return error.value, gateway.model_calls, await load_events(store, "r")

    error, paid, events = run(scenario())
    assert (paid, events) == (0, [])
    assert str(error) == (
        "run 'r': a budget on cost cannot be measured: the model 'guionizado' has no price "
        "(priced: 'otro'). Not measured is not zero, so the model call 000000-model was not "
        "made. Give every model a price (Budget(prices={model: (input, output)})), or resume "
        "without a limit on cost"
    )


def test_a_turn_the_gateway_did_not_measure_stops_the_run_before_its_next_call(store_factory):
    unmeasured = ModelResponse(
        tool_calls=(ToolCall("c0", "contar", {"numero": 1}),), usage=Usage(30, None)
    )

    async def scenario():
        store = store_factory()
        gateway = ScriptedGateway([unmeasured] + [responder] * 10, tools=[contar])
        budget = Budget(total_tokens=10**6)
        with pytest.raises(BudgetUnmeasured) as error:
            await drive(contador(), Session("r", gateway, store, budget=budget))
        return error.value, gateway.model_calls

    error, paid = run(scenario())
    assert paid == 1  # what it paid could not be measured: nothing more is paid
    assert (error.step_id, error.measure) == ("000002-model", "total tokens (input + output)")
    assert str(error) == (
        "run 'r': a budget on total tokens (input + output) cannot be measured: step "
        "000000-model of run 'r' has no output token count (the gateway did not measure it). "
        "Not measured is not zero, so the model call 000002-model was not made. Use a gateway "
        "that reports usage, or resume without a limit on total tokens (input + output)"
    )


def test_a_cost_budget_prices_each_call_by_its_model(store_factory):
    price = (3.0, 15.0)  # per million tokens: input, output

    async def scenario():
        store = store_factory()
        await drive(contador(), Session("ref", double(), store))
        turns = (await run_usage(store, "ref")).turns
        costs = [(t.usage.input_tokens * 3.0 + t.usage.output_tokens * 15.0) / 1e6 for t in turns]
        limit = sum(costs[:2]) * 1.0001  # two calls leave it under
        gateway = double()
        budget = Budget(cost=limit, prices={"guionizado": price})
        with pytest.raises(BudgetExceeded) as error:
            await drive(contador(), Session("r", gateway, store, budget=budget))
        return error.value, gateway.model_calls, costs

    error, paid, costs = run(scenario())
    assert paid == 3
    assert error.measure == "cost"
    assert error.spent == pytest.approx(sum(costs[:3]))
    assert "cost spent, limit" in str(error)


def jefe(request):
    """The parent: delegate the counting once, then say it is done."""
    if request.model != "jefe-m":
        return responder(request)
    if any(m.role.value == "tool" for m in request.messages):
        return says("Hecho.")
    return calls("contador", task=TASK)


def test_sub_runs_spend_from_the_budget_of_the_run_they_belong_to(store_factory):
    from synaptum_lite import Agent

    parent = Agent("jefe", model="jefe-m", instructions="Delegas.", delegates=[contador()])

    async def scenario():
        reference = MemoryCheckpointer()
        await drive(parent, Session("ref", ScriptedGateway([jefe] * 20), reference))
        own = (await run_usage(reference, "ref")).turns[0].usage
        child = (await run_usage(reference, "ref/000001-delegate")).turns
        first_parent_call = own.input_tokens + own.output_tokens
        child_tokens = [t.usage.input_tokens + t.usage.output_tokens for t in child]
        limit = first_parent_call + sum(child_tokens[:2]) + 1  # the child's third overshoots

        store = store_factory()
        gateway = ScriptedGateway([jefe] * 20)
        with pytest.raises(BudgetExceeded) as error:
            budget = Budget(total_tokens=limit)
            await drive(parent, Session("p", gateway, store, budget=budget))
        resumed = ScriptedGateway([jefe] * 20)
        raised = Budget(total_tokens=10**6)
        final = await drive(parent, Session("p", resumed, store, budget=raised))
        whole = (await run_usage(reference, "ref")).total
        return error.value, gateway.model_calls, resumed.model_calls, final, whole, store, limit

    error, paid, then, final, whole, store, limit = run(scenario())
    assert paid == 1 + 3  # the parent's call, then the child's three
    assert error.run_id == "p/000001-delegate"
    assert error.of.run_id == "p"  # the limit is the parent's, counted over its tree
    assert error.spent >= limit
    assert "spent by run 'p', which this sub-run is part of, limit" in str(error)
    assert then == 3 + 1  # the child's last three, then the parent's answer: nothing again
    assert final.usage == whole


def test_a_run_only_named_like_a_sub_run_keeps_its_own_budget(store_factory):
    async def scenario():
        store = store_factory()
        gateway = double()
        budget = Budget(total_tokens=CUMULATIVE[1] + 1)
        with pytest.raises(BudgetExceeded) as error:
            await drive(contador(), Session("x/000001-delegate", gateway, store, budget=budget))
        return error.value

    assert run(scenario()).of.run_id == "x/000001-delegate"


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({}, "a Budget limits something: give total_tokens=..., cost=... or both"),
        ({"total_tokens": -1}, "total_tokens must be a finite number, 0 or more; got -1"),
        ({"total_tokens": True}, "total_tokens must be a whole number, got True"),
        ({"total_tokens": 1.5}, "total_tokens must be a whole number, got 1.5"),
        ({"cost": float("nan")}, "cost must be a finite number, 0 or more; got nan"),
        (
            {"cost": 1, "prices": {"m": 3}},
            "the price of model 'm' must be (input, output) per million tokens, two numbers, "
            "0 or more; got 3",
        ),
        ({"cost": 1, "prices": [("m", 1)]}, "prices must map a model to (input, output), got"),
    ],
)
def test_a_budget_that_limits_nothing_or_is_not_a_number_is_refused(arguments, said):
    with pytest.raises(ConfigurationError) as error:
        Budget(**arguments)
    assert str(error.value).startswith(said)


def test_a_session_refuses_a_budget_that_is_not_one():
    with pytest.raises(ConfigurationError, match="budget must be a Budget or None, got 100"):
        Session("r", double(), MemoryCheckpointer(), budget=100)  # type: ignore[arg-type]


class CountedReads(SqliteCheckpointer):
    """A real SQLite journal that counts how often a run's records are read."""

    def __init__(self, path) -> None:
        super().__init__(path)
        self.reads = 0

    async def records(self, run_id):
        self.reads += 1
        return await super().records(run_id)


@pytest.mark.parametrize("turns", [3, 12])
def test_a_pass_reads_the_journals_for_its_budget_once_not_before_every_call(tmp_path, turns):
    """The budget is checked before each of the pass's model calls; what was spent is read from
    the journals at the first and added to after each, so the reads do not grow with the run's
    length. It still stops the run where a fresh read of the journals says."""

    def counting(request):
        done = sum(1 for m in request.messages if m.role is Role.TOOL)
        return calls("contar", numero=done + 1) if done < turns else says(ANSWER)

    async def scenario():
        store = CountedReads(tmp_path / "runs.db")
        agent = contador()
        gateway = ScriptedGateway([counting] * (turns + 1), tools=[contar])
        budget = Budget(total_tokens=10**9)
        final = await drive(agent, Session("r", gateway, store, budget=budget))
        reads = store.reads
        spent = await budget.spent(store, "r")
        return final, reads, spent, gateway

    final, reads, spent, gateway = run(scenario())
    assert final is not None and final.output == ANSWER
    assert len(gateway.requests) == turns + 1 == spent.calls
    assert reads <= 2, reads  # the journal opened, and the budget's one read: not one per call


def test_an_incremental_count_stops_the_run_where_a_fresh_read_would(tmp_path):
    """One pass that counts as it goes stops at the call the limit refuses, and what it
    counted is what a fresh read of the journals says afterwards (the same `Spent`)."""
    limit = CUMULATIVE[3] + 1  # four calls leave it under; the fifth crosses it

    async def scenario():
        counted = SqliteCheckpointer(tmp_path / "contado.db")
        with pytest.raises(BudgetExceeded) as in_one_pass:
            await drive(
                contador(), Session("r", double(), counted, budget=Budget(total_tokens=limit))
            )
        return in_one_pass.value, await Budget(total_tokens=limit).spent(counted, "r")

    refused, fresh = run(scenario())
    assert refused.step_id == "000010-model"
    assert refused.of == fresh  # what the pass counted is what the journals say
    assert refused.spent == CUMULATIVE[4]


def test_after_a_migration_to_another_model_each_call_is_priced_by_its_own_model(tmp_path):
    """A run migrated from a cheap model to a dear one: the calls before the migration cost the
    cheap price, those after it the dear one, in the pass that pays them and in a fresh read."""
    prices = {"barato": (1.0, 1.0), "caro": (100.0, 100.0)}
    roomy = Budget(cost=10.0, prices=prices)

    async def scenario():
        store = SqliteCheckpointer(tmp_path / "runs.db")
        first = Budget(cost=CUMULATIVE[1] / 1_000_000, prices=prices)  # stops at the 3rd call
        with pytest.raises(BudgetExceeded):
            await drive(contador("barato"), Session("r", double(), store, budget=first))
        await migrate(store, "r", contador("caro"), by="ana")
        with pytest.raises(BudgetExceeded) as stopped:  # the dear calls reach a limit at once
            limit = Budget(cost=(CUMULATIVE[1] + 100 * (CUMULATIVE[2] - CUMULATIVE[1])) / 1e6,
                           prices=prices)  # fmt: skip
            await drive(contador("caro"), Session("r", double(), store, budget=limit))
        counted = stopped.value.of
        final = await drive(contador("caro"), Session("r", double(), store, budget=roomy))
        return counted, final, await roomy.spent(store, "r"), await run_usage(store, "r")

    counted, final, spent, usage = run(scenario())
    assert final is not None and final.output == ANSWER
    tokens = [t.usage.input_tokens + t.usage.output_tokens for t in usage.turns]
    assert tokens == list(reference_tokens())
    cheap, dear = tokens[:2], tokens[2:]
    assert spent.cost == pytest.approx((sum(cheap) + 100 * sum(dear)) / 1_000_000)
    # the pass that was stopped had counted its own dear call at the dear price
    assert counted.calls == 3
    assert counted.cost == pytest.approx((sum(cheap) + 100 * dear[0]) / 1_000_000)
