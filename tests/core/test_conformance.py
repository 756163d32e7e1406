"""The conformance suite: what every checkpointer must do, run against each of them."""

from __future__ import annotations

import asyncio

import pytest

from synaptum_lite import (
    Agent,
    Checkpointer,
    ConfigurationChanged,
    ConfigurationError,
    FinalStep,
    JournalError,
    MigrationRefused,
    ModelResponse,
    ModelStep,
    Phase,
    Proposal,
    Risk,
    RunBusy,
    Session,
    Step,
    ToolCall,
    ToolResult,
    ToolStep,
    Usage,
    Verdict,
    agent_for,
    load_events,
    migrate,
    tool,
)
from synaptum_lite.testing import ScriptedGateway, calls

from .conftest import run

HEADER = {"format": 1, "agent": {"model": "m"}, "task": "t"}


def model_step(position: int, phase: Phase = Phase.COMPLETED, run_id: str = "r") -> ModelStep:
    return ModelStep(
        run_id=run_id,
        step_id=f"{position:06d}-model",
        phase=phase,
        fingerprint="f" * 24,
        response=ModelResponse(text="hola", usage=Usage(3, 1))
        if phase is Phase.COMPLETED
        else None,
    )


def tool_step(position: int, phase: Phase, attempt: int = 1) -> ToolStep:
    return ToolStep(
        run_id="r",
        step_id=f"{position:06d}-tool",
        phase=phase,
        attempt=attempt,
        call=ToolCall("c1", "consultar", {"cuenta": "ES91"}),
        result=ToolResult("4.200,00 €") if phase is Phase.COMPLETED else None,
    )


def test_every_store_is_a_checkpointer(store_factory):
    assert isinstance(store_factory(), Checkpointer)


def test_an_unknown_run_is_empty(store_factory):
    state = run(store_factory().load("nadie"))
    assert (state.next_seq, state.header, state.final, state.closed) == (0, None, None, False)


def test_start_records_the_header_once(store_factory):
    async def scenario():
        store = store_factory()
        await store.start("r", HEADER)
        await store.start("r", {**HEADER, "task": "otra"})
        return await store.load("r")

    state = run(scenario())
    assert state.header == HEADER
    assert state.next_seq == 0


def test_positions_are_dense_from_zero_and_events_round_trip(store_factory):
    events = [
        model_step(0, Phase.ATTEMPTED),
        model_step(0),
        tool_step(1, Phase.ATTEMPTED),
        tool_step(1, Phase.COMPLETED),
    ]

    async def scenario():
        store = store_factory()
        await store.start("r", HEADER)
        assert await store.append("r", events[:1]) == 1
        assert await store.append("r", events[1:]) == 4
        return await store.records("r"), await load_events(store, "r")

    records, loaded = run(scenario())
    assert [r.seq for r in records] == [0, 1, 2, 3]
    assert loaded == events


def test_appending_a_journaled_key_is_a_no_op(store_factory):
    async def scenario():
        store = store_factory()
        await store.start("r", HEADER)
        await store.append("r", [model_step(0, Phase.ATTEMPTED), model_step(0)])
        again = await store.append("r", [model_step(0), tool_step(1, Phase.ATTEMPTED)])
        return again, await store.records("r")

    next_seq, records = run(scenario())
    assert next_seq == 3
    assert [(r.seq, r.step_id, r.phase) for r in records] == [
        (0, "000000-model", "attempted"),
        (1, "000000-model", "completed"),
        (2, "000001-tool", "attempted"),
    ]


def test_a_second_attempt_is_a_new_key(store_factory):
    async def scenario():
        store = store_factory()
        await store.start("r", HEADER)
        return await store.append(
            "r", [tool_step(0, Phase.ATTEMPTED), tool_step(0, Phase.ATTEMPTED, attempt=2)]
        )

    assert run(scenario()) == 2


@pytest.mark.parametrize(
    "ending", [{"text": "fin", "output": "fin"}, {"reason": "riesgo"}], ids=["answer", "reason"]
)
def test_the_final_step_is_found_without_reading_the_journal(store_factory, ending):
    final = FinalStep(run_id="r", step_id="000002-final", usage=Usage(5, 2, None), **ending)

    async def scenario():
        store = store_factory()
        await store.start("r", HEADER)
        await store.append("r", [model_step(0, Phase.ATTEMPTED), model_step(0), final])
        return await store_factory().load("r")

    state = run(scenario())
    assert state.closed and state.next_seq == 3
    assert state.final == final
    assert state.final.usage.cached_tokens is None  # not measured stays not measured


@pytest.mark.parametrize("ended_by", ["a-model-call", "a-tool-call"])
def test_a_run_ended_without_an_answer_gives_the_same_reason_when_reopened(store_factory, ended_by):
    @tool(risk=Risk.DESTRUCTIVE)
    def borrar(cuenta: str) -> str:
        """Borra una cuenta."""
        raise AssertionError("the policy ends the run before this runs")

    def policy(proposal: Proposal) -> Verdict:
        if (proposal.tool is None) == (ended_by == "a-model-call"):
            return Verdict.terminate(f"parado por la política ({proposal.kind})")
        return Verdict.allow()

    agent = Agent("a", model="m", instructions="i", tools=[borrar])

    async def drive() -> tuple[list[Step], int]:
        gateway = ScriptedGateway([calls("borrar", cuenta="ES91")], policy=policy)
        steps = [s async for s in agent.run("t", session=Session("r", gateway, store_factory()))]
        return steps, gateway.model_calls

    (*_, first), paid = run(drive())
    reason = (
        "parado por la política (model)"
        if ended_by == "a-model-call"
        else ("parado por la política (tool)")
    )
    assert isinstance(first, FinalStep) and (first.output, first.reason) == (None, reason)
    assert paid == (0 if ended_by == "a-model-call" else 1)

    again, paid = run(drive())
    assert again == [first] and again[0].replayed and again[0].reason == reason
    assert paid == 0


def test_appending_to_a_run_never_started_is_refused(store_factory):
    with pytest.raises(JournalError, match="never started"):
        run(store_factory().append("r", [model_step(0)]))


def test_runs_are_independent(store_factory):
    async def scenario():
        store = store_factory()
        await store.start("a", HEADER)
        await store.start("b", HEADER)
        await store.append("a", [model_step(0, run_id="a")])
        return (await store.load("a")).next_seq, (await store.load("b")).next_seq

    assert run(scenario()) == (1, 0)


def test_concurrent_appends_get_distinct_dense_positions(store_factory):
    async def scenario():
        store = store_factory()
        await store.start("r", HEADER)
        await asyncio.gather(*(store.append("r", [model_step(i)]) for i in range(40)))
        return await store.records("r")

    records = run(scenario())
    assert sorted(r.seq for r in records) == list(range(40))
    assert len({r.step_id for r in records}) == 40


def test_one_driver_at_a_time_and_the_lock_is_released(store_factory):
    async def scenario():
        first, second = store_factory(), store_factory()
        async with first.hold("r"):
            with pytest.raises(RunBusy) as busy:
                async with second.hold("r"):
                    pass
            async with second.hold("otro"):
                pass
        async with second.hold("r"):
            pass
        return busy.value

    busy = run(scenario())
    assert busy.run_id == "r"
    assert "'r' is being driven by another worker" in str(busy)


def test_is_held_answers_for_any_driver_and_never_takes_the_run(store_factory):
    async def scenario():
        first, second = store_factory(), store_factory()
        answers = [await second.is_held("r")]
        async with first.hold("r"):
            answers += [await second.is_held("r"), await first.is_held("r")]
            answers.append(await second.is_held("otro"))
            await first.confirm_hold("r")  # a hold still there: nothing raised
        answers.append(await second.is_held("r"))
        async with second.hold("r"):  # asking left the run free for the next driver
            answers.append(await first.is_held("r"))
        return answers

    assert run(scenario()) == [False, True, True, False, False, True]


def test_run_ids_lists_runs_in_the_order_they_started_and_the_open_ones(store_factory):
    final = FinalStep(
        run_id="b", step_id="000001-final", phase=Phase.COMPLETED, text="hecho", output="hecho"
    )

    async def scenario():
        store = store_factory()
        for run_id in ("c", "a/000000-delegate", "b"):
            await store.start(run_id, HEADER)
        await store.append("b", [model_step(0, run_id="b"), final])
        await store.append("c", [model_step(0, run_id="c")])
        reader = store_factory()
        return await reader.run_ids(), await reader.run_ids(open_only=True)

    every, open_only = run(scenario())
    assert every == ["c", "a/000000-delegate", "b"]
    assert open_only == ["c", "a/000000-delegate"]


def test_run_ids_of_a_store_without_a_journal_creates_none(store_factory, tmp_path):
    async def scenario():
        store = store_factory()
        before = await store.run_ids()
        after = await store_factory().run_ids()
        await store.start("r", HEADER)
        return before, after, await store_factory().run_ids()

    before, after, started = run(scenario())
    assert before == after and before in (None, [])  # memory always holds an empty journal
    assert started == ["r"]


def test_sqlite_run_ids_leaves_a_missing_or_blank_file_as_it_was(tmp_path):
    import sqlite3

    from synaptum_lite import SqliteCheckpointer

    missing, blank = tmp_path / "nuevo.db", tmp_path / "en_blanco.db"
    with sqlite3.connect(blank) as connection:  # another program's file, not yet filled
        connection.execute("CREATE TABLE t (x)")
        connection.execute("DROP TABLE t")
    content = blank.read_bytes()
    assert run(SqliteCheckpointer(missing).run_ids(open_only=True)) is None
    assert run(SqliteCheckpointer(blank).run_ids()) is None
    assert not missing.exists() and blank.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["en_blanco.db"]


def test_sqlite_without_ofd_locks_falls_back_to_a_flock_per_run(tmp_path, monkeypatch):
    """macOS has no F_OFD_SETLK: the same guarantees from flock on one file per run."""
    fcntl = pytest.importorskip("fcntl", reason="flock is POSIX; Windows locks with msvcrt")

    from synaptum_lite import SqliteCheckpointer

    monkeypatch.delattr(fcntl, "F_OFD_SETLK", raising=False)  # macOS has none to remove

    async def scenario():
        first, second = SqliteCheckpointer(tmp_path / "r.db"), SqliteCheckpointer(tmp_path / "r.db")
        async with first.hold("r"):
            with pytest.raises(RunBusy):
                async with second.hold("r"):
                    pass
            async with second.hold("otro"):
                pass
        async with second.hold("r"):
            pass

    run(scenario())
    assert len(list((tmp_path / "r.db.locks").iterdir())) == 2


# ── odd input: the same answer from every store ────────────────────────────────────────────

ODD_BUT_FINE = [
    "ñandú/🐢 run",
    "a b\tc",
    "parent/000003-delegate",
    "x" * 2000,
    "'; DROP TABLE runs; --",
]
SURROGATE = "half of a surrogate pair and not a character, which UTF-8 has no form for"
UNKEEPABLE = {
    "a\x00b": "'\\x00' at index 1, a NUL character, which PostgreSQL's text cannot hold; "
    "nothing was run or written: leave NUL characters out",
    "\ud83d": f"'\\ud83d' at index 0, {SURROGATE}; nothing was run or written: join a split "
    "surrogate pair, or put U+FFFD in its place",
    "ok\udc00": f"'\\udc00' at index 2, {SURROGATE}; nothing was run or written: join a split "
    "surrogate pair, or put U+FFFD in its place",
}


@pytest.mark.parametrize("run_id", ODD_BUT_FINE)
def test_odd_but_valid_run_ids_round_trip(store_factory, run_id):
    async def scenario():
        store = store_factory()
        async with store.hold(run_id):
            await store.start(run_id, HEADER)
            await store.append(run_id, steps)
        return await store.load(run_id), await load_events(store, run_id)

    steps = [model_step(0, Phase.ATTEMPTED, run_id=run_id), model_step(0, run_id=run_id)]
    state, events = run(scenario())
    assert (state.run_id, state.next_seq, state.header) == (run_id, 2, HEADER)
    assert events == steps


@pytest.mark.parametrize("run_id", sorted(UNKEEPABLE))
def test_a_run_id_no_store_can_keep_is_refused_by_every_call(store_factory, run_id):
    store = store_factory()

    async def hold():
        async with store.hold(run_id):
            pass

    calls = {
        "load": lambda: store.load(run_id),
        "start": lambda: store.start(run_id, HEADER),
        "append": lambda: store.append(run_id, [model_step(0, run_id=run_id)]),
        "records": lambda: store.records(run_id),
        "hold": hold,
    }
    for name, call in calls.items():
        with pytest.raises(ConfigurationError) as error:
            run(call())
        assert str(error.value) == (
            f"run_id {run_id!r} cannot be journaled: it holds {UNKEEPABLE[run_id]}"
        ), name


def test_a_header_no_store_can_keep_is_refused_and_nothing_is_written(store_factory):
    async def scenario():
        store = store_factory()
        with pytest.raises(ConfigurationError) as error:
            await store.start("r", {**HEADER, "task": "hola \ud83d"})
        return error.value, await store.load("r")

    error, state = run(scenario())
    assert "run 'r': its header (the agent's configuration and the task) cannot be journaled" in (
        str(error)
    )
    assert f"it holds '\\ud83d' at index 53, {SURROGATE}; nothing was run or written" in str(error)
    assert state.header is None


def test_an_event_no_store_can_keep_is_refused_and_nothing_of_its_append_is_written(
    store_factory,
):
    roto = ModelStep(
        run_id="r",
        step_id="000001-model",
        phase=Phase.COMPLETED,
        fingerprint="f" * 24,
        response=ModelResponse(text="medio emoji \ud83d", usage=Usage(3, 1)),
    )

    async def scenario():
        store = store_factory()
        await store.start("r", HEADER)
        with pytest.raises(ValueError) as error:
            await store.append("r", [model_step(0, Phase.ATTEMPTED), roto])
        return error.value, await store.records("r")

    error, records = run(scenario())
    assert str(error) == (
        f"step 000001-model (completed) cannot be journaled: it holds '\\ud83d' at index 21, "
        f"{SURROGATE}"
    )
    assert records == []


def test_nul_and_control_characters_inside_events_and_headers_round_trip(store_factory):
    header = {**HEADER, "task": "tarea\x00con nulo\x1b"}
    event = ModelStep(
        run_id="r",
        step_id="000000-model",
        phase=Phase.COMPLETED,
        fingerprint="f" * 24,
        response=ModelResponse(text="nulo \x00, escape \x1b, 🐢", usage=Usage(3, 1)),
    )

    async def scenario():
        store = store_factory()
        await store.start("r", header)
        await store.append("r", [model_step(0, Phase.ATTEMPTED), event])
        return await store.load("r"), await load_events(store, "r")

    state, events = run(scenario())
    assert state.header == header
    assert events == [model_step(0, Phase.ATTEMPTED), event]


def test_a_budget_counts_what_every_pass_paid_through_any_checkpointer_of_the_store(
    store_factory,
):
    # the rest of the budget's behaviour, on every store, is tests/core/test_budget.py
    from synaptum_lite import Budget, BudgetExceeded

    from .budget_agents import TASK, contador, double

    async def scenario():
        first = double()
        async for step in contador().run(TASK, session=Session("r", first, store_factory())):
            if isinstance(step, ModelStep) and step.phase is Phase.COMPLETED:
                break  # one call paid, then this pass stops
        spent = await Budget(total_tokens=1).spent(store_factory(), "r")
        second = double()
        session = Session("r", second, store_factory(), budget=Budget(total_tokens=spent.tokens))
        with pytest.raises(BudgetExceeded) as error:
            async for _ in contador().run(TASK, session=session):
                pass
        return first.model_calls, spent, second.model_calls, error.value

    paid, spent, paid_again, error = run(scenario())
    assert (paid, spent.calls, paid_again) == (1, 1, 0)  # the first pass's call counts
    assert (error.step_id, error.spent, error.limit) == ("000002-model", spent.tokens, spent.tokens)


# ── fork: a new run from a past step of another, on every store ─────────────────────────────


def test_a_fork_copies_the_prefix_pays_nothing_for_it_and_leaves_the_original_as_it_was(
    store_factory, tmp_path, monkeypatch
):
    from synaptum_lite import fork
    from synaptum_lite.stores.transfer import export_run

    from . import agents
    from .fork_agents import drive

    effects = tmp_path / "efectos"

    async def scenario():
        store = store_factory()
        await drive(store, "r")
        before = await store.records("r"), await export_run(store, "r")
        forked = await fork(store, "r", at="000003-tool", new_run_id="f")
        after = await store.records("r"), await export_run(store, "r")
        copied = await store.records("f")
        header = (await store.load("f")).header
        gateway = agents.double()
        monkeypatch.setattr(agents, "EFFECTS", effects)  # what the fork's tools do, counted
        steps = await drive(store, "f", gateway)
        return before, after, copied, header, forked, gateway, steps, effects.read_text()

    before, after, copied, header, forked, gateway, steps, keys = run(scenario())
    assert after == before  # the original: every record and its export, byte for byte
    assert [(r.seq, r.step_id, r.phase, r.data) for r in copied] == [
        (r.seq, r.step_id, r.phase, r.data) for r in before[0] if r.step_id < "000003"
    ]
    assert header["forked_from"] == {"run_id": "r", "at": "000003-tool"}
    assert (forked.run_id, forked.at, forked.events, forked.replaced) == (
        "f",
        "000003-tool",
        6,
        False,
    )
    # the fork says, before it runs, which effects it makes anew and under which key
    assert [(e.step_id, e.tool, e.original_key, e.fork_key) for e in forked.new_effects] == [
        ("000003-tool", "transferir", "r/000003-tool", "f/000003-tool"),
        ("000005-tool", "notificar", "r/000005-tool", "f/000005-tool"),
    ]
    # the prefix (two model steps, one tool) replayed: paid for by the original, never again
    assert [s.step_id for s in steps if s.replayed] == [
        "000000-model",
        "000001-tool",
        "000002-model",
    ]
    assert (gateway.model_calls, gateway.tool_calls) == (2, 2)
    # the transfer again: a new effect, under the fork's key
    assert keys.splitlines() == ["transferir ES91->ES12 100.0 key=f/000003-tool", "notificar hecho"]
    assert isinstance(steps[-1], FinalStep) and steps[-1].step_id == "000007-final"


def test_a_replaced_answer_is_journaled_as_a_persons_and_no_model_is_called(store_factory):
    from synaptum_lite import fork, run_usage

    from .agents import double
    from .fork_agents import drive

    async def scenario():
        store = store_factory()
        await drive(store, "r")
        forked = await fork(store, "r", at=4, new_run_id="f", answer="Hecho, sin avisar.", by="ana")
        gateway = double()
        steps = await drive(store, "f", gateway)
        return forked, gateway, steps, await load_events(store, "f"), await run_usage(store, "f")

    forked, gateway, steps, journaled, usage = run(scenario())
    assert forked.replaced and [e.step_id for e in forked.new_effects] == ["000005-tool"]
    answered = [s for s in steps if isinstance(s, ModelStep) and s.step_id == "000004-model"]
    assert [(s.replaced_by, s.response.text, s.replayed) for s in answered] == [
        ("ana", "Hecho, sin avisar.", True)  # on the step stream, as a person's
    ]
    assert answered[0].response.usage == Usage(0, 0, 0)
    on_disk = [e for e in journaled if e.step_id == "000004-model" and e.phase is Phase.COMPLETED]
    assert [e.replaced_by for e in on_disk] == ["ana"]
    assert (gateway.model_calls, gateway.tool_calls) == (0, 0)
    assert [t.step_id for t in usage.turns] == ["000000-model", "000002-model"]  # paid ones only
    assert steps[-1].output == "Hecho, sin avisar."


def test_a_fork_after_a_delegation_brings_its_sub_run_under_the_forks_name(store_factory):
    from synaptum_lite import fork
    from synaptum_lite.stores.transfer import export_run

    from .fork_agents import PAGOS, drive_jefe, gateway_jefe

    async def scenario():
        store = store_factory()
        PAGOS.clear()
        await drive_jefe(store, "p", gateway_jefe())
        forked = await fork(store, "p", at="000002-model", new_run_id="q")
        gateway = gateway_jefe()
        steps = await drive_jefe(store, "q", gateway)
        sub = await store.records("q/000001-delegate"), await store.records("p/000001-delegate")
        return forked, gateway, steps, sub, await export_run(store, "q"), list(PAGOS)

    forked, gateway, steps, (copied, original), exported, paid = run(scenario())
    assert forked.sub_runs == ("q/000001-delegate",)
    assert [(r.step_id, r.phase, r.data) for r in copied] == [
        (r.step_id, r.phase, r.data) for r in original
    ]
    assert sum('"run_id":"q/000001-delegate"' in line for line in exported) == 1
    assert paid == ["p/000001-delegate/000001-tool"]  # once, by the original; not by the fork
    assert (gateway.model_calls, gateway.tool_calls) == (1, 0)  # only the boss's last answer
    assert steps[-1].output == "el tesorero pagó"


@pytest.mark.parametrize(
    ("at", "new", "answer", "reason", "said"),
    [
        (99, "f", None, "no step", "it has no step 99: its steps are 0 to 7 (000000-model to "),
        ("000003-model", "f", None, "no step", "it has no step '000003-model'"),
        (3, "r", None, "taken", "run 'r' is the run to fork: choose another new run id"),
        (3, "otro", None, "taken", "run 'otro' already exists: choose another new run id"),
        (3, "f", "no", "not a model step", "step 000003-tool is not a model step"),
    ],
)
def test_a_fork_refused_says_why_and_what_to_do_and_writes_nothing(
    store_factory, at, new, answer, reason, said
):
    from synaptum_lite import ForkRefused, fork

    from .fork_agents import drive

    async def scenario():
        store = store_factory()
        await drive(store, "r")
        await drive(store, "otro")
        runs = await store.run_ids()
        with pytest.raises(ForkRefused) as refused:
            await fork(store, "r", at=at, new_run_id=new, answer=answer)
        with pytest.raises(ForkRefused) as missing:
            await fork(store, "nadie", at=0, new_run_id="g")
        return refused.value, missing.value, runs, await store.run_ids()

    refused, missing, runs_before, runs_after = run(scenario())
    assert refused.reason == reason and said in str(refused), str(refused)
    assert str(refused).endswith("; nothing was written")
    assert missing.reason == "no run" and "holds no such run" in str(missing)
    assert runs_after == runs_before == ["r", "otro"]


def test_start_with_writes_a_run_whole_or_not_at_all(store_factory):
    """What a fork writes each run with (`start_with`): a header and its events, in one go."""
    broken = ToolStep(
        run_id="r",
        step_id="000001-tool",
        phase=Phase.COMPLETED,
        call=ToolCall("c1", "consultar", {}),
        result=ToolResult("\ud800"),  # no store can keep it
    )

    async def scenario():
        store = store_factory()
        with pytest.raises(ValueError):
            await store.start_with("r", HEADER, [model_step(0, Phase.ATTEMPTED), broken])
        refused = await store.load("r")
        written = await store.start_with("s", HEADER, [model_step(0, Phase.ATTEMPTED, "s")])
        return refused, written, await store.load("s")

    refused, written, state = run(scenario())
    assert refused.header is None  # nothing of it: not even its header
    assert written == state.next_seq == 1 and state.header == HEADER


def test_a_migration_is_one_event_every_store_keeps_and_a_pinned_resume_reads(store_factory):
    """Pinning and migration on every store: the version found from the journal, the
    migration journaled as one event, read back by another checkpointer on the same store,
    and the run finished there on the new agent, paying only what was left."""
    from .agents import cajero, cajero_v2
    from .test_migration import ANSWER, drive

    held = [cajero(), cajero_v2()]
    run(drive(cajero(), store_factory(), "r", stop_at=8))
    assert run(agent_for(store_factory(), "r", held)).version is None
    migration = run(migrate(store_factory(), "r", cajero_v2(), by="operadora"))
    events = run(load_events(store_factory(), "r"))
    assert events[-1] == migration and len(events) == 9
    assert run(agent_for(store_factory(), "r", held)).version == "v2"
    with pytest.raises(ConfigurationChanged):
        run(drive(cajero(), store_factory(), "r"))
    steps, double = run(drive(cajero_v2(), store_factory(), "r"))
    assert steps[-1].output == ANSWER and (double.model_calls, double.tool_calls) == (2, 1)
    with pytest.raises(MigrationRefused, match="it is closed"):
        run(migrate(store_factory(), "r", cajero(), by="operadora"))
