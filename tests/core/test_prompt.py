"""Prompt templates and sampling: both enter the configuration a journal records, so a changed
template or temperature is refused by name on resume; an agent without them keeps the header
(and the export) it always had, byte for byte."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from synaptum_lite import (
    Agent,
    ConfigurationChanged,
    ConfigurationError,
    FinalStep,
    MemoryCheckpointer,
    Role,
    Sampling,
    Session,
    SqliteCheckpointer,
    Template,
)
from synaptum_lite.stores.transfer import export_run
from synaptum_lite.testing import ScriptedGateway

from .agents import HERRAMIENTAS, TASK, cajero, double, responder

TRIAJE = "Clasifica las incidencias de $cliente. Cobra en $$ solo si $nadie lo pide."


def plantilla(version: str = "1", text: str = TRIAJE) -> Template:
    return Template(name="triaje", version=version, text=text, values={"cliente": "ACME"})


def agente(instructions: Any = None, sampling: Sampling | None = None) -> Agent:
    return Agent(
        "cajero",
        model="guionizado",
        instructions=plantilla() if instructions is None else instructions,
        tools=HERRAMIENTAS,
        sampling=sampling,
    )


async def drive(agent: Agent, store: Any, *, stop_at: int | None = None) -> ScriptedGateway:
    gateway = ScriptedGateway([responder] * 20, tools=HERRAMIENTAS)
    steps = agent.run(TASK, session=Session("r", gateway, store))
    async with contextlib.aclosing(steps) as it:
        async for step in it:
            if stop_at is not None and step.position + 1 >= stop_at:
                break
    return gateway


def refusal(first: Agent, then: Agent) -> ConfigurationChanged:
    store = MemoryCheckpointer()
    asyncio.run(drive(first, store, stop_at=2))
    with pytest.raises(ConfigurationChanged) as changed:
        asyncio.run(drive(then, store))
    return changed.value


# ── templates ────────────────────────────────────────────────────────────────────────────


def test_a_template_is_filled_by_safe_rules_and_the_model_reads_the_filled_text():
    gateway = asyncio.run(drive(agente(), MemoryCheckpointer()))
    filled = "Clasifica las incidencias de ACME. Cobra en $ solo si $nadie lo pide."
    assert plantilla().render() == filled
    system = gateway.requests[0].messages[0]
    assert system.role is Role.SYSTEM and system.content == filled
    configuration = agente().configuration
    assert configuration["template"] == {"name": "triaje", "version": "1"}
    assert configuration["instructions"] == filled


def test_a_new_version_of_the_template_is_refused_by_name():
    changed = refusal(agente(), agente(plantilla(version="2")))
    one, two = {"name": "triaje", "version": "1"}, {"name": "triaje", "version": "2"}
    assert changed.changes == {"template": (one, two)}
    assert "template: journaled {'name': 'triaje', 'version': '1'}" in str(changed)


def test_a_text_changed_under_the_same_version_is_refused_by_name():
    changed = refusal(agente(), agente(plantilla(text=TRIAJE + " Sé breve.")))
    assert changed.fields == ["instructions"]
    assert changed.changes["instructions"][1].endswith("lo pide. Sé breve.")


def test_a_plain_string_becoming_a_template_of_the_same_text_is_refused_by_name():
    changed = refusal(agente(plantilla().render()), agente())
    assert changed.changes == {"template": (None, {"name": "triaje", "version": "1"})}


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"name": "", "version": "1", "text": "t"}, "name must be a non-empty str, got ''"),
        ({"name": "t", "version": 2, "text": "t"}, "version must be a non-empty str, got 2"),
        ({"name": "t", "version": "1", "text": b"t"}, "text must be a str"),
        ({"name": "t", "version": "1", "text": "t", "values": {"a b": 1}}, "values must map"),
    ],
)
def test_a_bad_template_is_refused_naming_the_value(arguments: dict[str, Any], says: str):
    with pytest.raises(ConfigurationError, match=says):
        Template(**arguments)


# ── sampling ─────────────────────────────────────────────────────────────────────────────


def test_sampling_enters_the_configuration_and_the_request_with_only_what_is_given():
    sampling = Sampling(temperature=0.2, seed=7)
    gateway = asyncio.run(drive(agente(sampling=sampling), MemoryCheckpointer()))
    assert {r.sampling for r in gateway.requests} == {sampling}
    assert agente(sampling=sampling).configuration["sampling"] == {"temperature": 0.2, "seed": 7}
    assert "sampling" not in agente(sampling=Sampling()).configuration


def test_a_changed_temperature_is_refused_by_name():
    changed = refusal(agente(sampling=Sampling(0.2)), agente(sampling=Sampling(0.9)))
    assert changed.changes == {"sampling": ({"temperature": 0.2}, {"temperature": 0.9})}
    assert "sampling: journaled {'temperature': 0.2}, now {'temperature': 0.9}" in str(changed)


def test_sampling_added_to_a_run_started_without_it_is_refused_by_name():
    changed = refusal(agente(), agente(sampling=Sampling(seed=7)))
    assert changed.changes == {"sampling": (None, {"seed": 7})}


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"temperature": -0.1}, "temperature must be from 0 to 2, got -0.1"),
        ({"temperature": 2.5}, "temperature must be from 0 to 2, got 2.5"),
        ({"temperature": float("nan")}, "temperature must be from 0 to 2, got nan"),
        ({"temperature": "0.7"}, "temperature must be from 0 to 2, got '0.7'"),
        ({"temperature": True}, "temperature must be from 0 to 2, got True"),
        ({"top_p": 0}, "top_p must be above 0, up to 1, got 0"),
        ({"top_p": 1.5}, "top_p must be above 0, up to 1, got 1.5"),
        ({"seed": 1.5}, r"seed must be a whole number \(an int\), got 1.5"),
        ({"seed": "7"}, r"seed must be a whole number \(an int\), got '7'"),
    ],
)
def test_bad_sampling_is_refused_naming_the_value(arguments: dict[str, Any], says: str):
    with pytest.raises(ConfigurationError, match=f"sampling: {says}; or None"):
        Sampling(**arguments)


def test_the_edges_of_each_range_are_accepted():
    assert Sampling(temperature=0, top_p=1, seed=0).to_json() == {
        "temperature": 0,
        "top_p": 1,
        "seed": 0,
    }
    assert Sampling(temperature=2).to_json() == {"temperature": 2}


def test_sampling_that_is_not_a_sampling_is_refused():
    with pytest.raises(ConfigurationError, match=r"sampling must be None or a Sampling\("):
        agente(sampling={"temperature": 0.2})  # type: ignore[arg-type]


# ── the header an agent without them always had ──────────────────────────────────────────

#: SHA-256 of a whole cashier run exported (JSON lines joined by "\n"), and of its SQLite
#: header, recorded before templates and sampling existed.
EXPORT = "6c6a511531ef456899350d56b084df8166b490413987a897ac3b08331b6d4aee"
HEADER = "1efc632d835997ab02bbd4c06b74dab61156f72cf793cc3fc9b1b0a9fda89455"


def test_an_agent_without_template_or_sampling_keeps_its_header_and_export_byte_for_byte(
    tmp_path: Path,
):
    async def whole_run() -> list[str]:
        store = SqliteCheckpointer(tmp_path / "runs.db")
        steps = [step async for step in cajero().run(TASK, session=Session("r", double(), store))]
        assert isinstance(steps[-1], FinalStep)
        return await export_run(store, "r")

    lines = asyncio.run(whole_run())
    assert hashlib.sha256("\n".join(lines).encode()).hexdigest() == EXPORT
    with contextlib.closing(sqlite3.connect(tmp_path / "runs.db")) as db:
        (header,) = db.execute("SELECT header FROM runs").fetchone()
    assert hashlib.sha256(header.encode()).hexdigest() == HEADER
