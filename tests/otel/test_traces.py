"""Traces of durable runs, with the SDK's in-memory exporter: the GenAI attributes of each
span, usage only where measured, passes and replays found in the journal, the live spans equal
to the journal's, sub-runs under their delegation, and the errors (a missing extra, an
unreachable receiver, a run that is not there)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from synaptum_lite import (
    Agent,
    ConfigurationChanged,
    ConfigurationError,
    MemoryCheckpointer,
    Session,
    SqliteCheckpointer,
    Usage,
    Verdict,
)
from synaptum_lite.integrations.otel import (
    OtlpJsonFile,
    TraceExportFailed,
    TraceExportWarning,
    export_journal,
    otlp_exporter,
    read_otlp_json,
    traced,
)
from synaptum_lite.testing import ScriptedGateway, says
from tests.bounds import HANG

from .agents import ANSWER, TASK, TOOLS, agent, gateway, responder
from .receiver import otlp_receiver

ROOT = Path(__file__).resolve().parents[2]


class Unmeasured(ScriptedGateway):
    """A provider that reports no token counts at all."""

    async def complete(self, request):  # type: ignore[no-untyped-def]
        answer = await super().complete(request)
        return dataclasses.replace(answer, usage=Usage())


async def drive(store, run_id, *, gate=None, exporter=None, stop_after=None, who=None):
    session = Session(run_id, gate or gateway(), store)
    steps = (who or agent()).run(TASK, session=session)
    if exporter is not None:
        steps = traced(steps, session=session, exporter=exporter)
    async with contextlib.aclosing(steps) as stream:
        async for seen, step in enumerate_async(stream):
            if seen + 1 == stop_after:
                return step
    return None


async def enumerate_async(stream):
    n = 0
    async for item in stream:
        yield n, item
        n += 1


def rebuilt(store, run_id):
    memory = InMemorySpanExporter()
    asyncio.run(export_journal(store, run_id, memory, start_ns=0))
    return memory.get_finished_spans()


def attrs(span):
    return dict(span.attributes)


def test_a_run_gives_a_root_and_one_span_per_step_with_genai_attributes():
    store = MemoryCheckpointer()
    asyncio.run(drive(store, "r"))
    spans = rebuilt(store, "r")
    assert Counter(s.name for s in spans) == {
        "invoke_agent cajero": 1,
        "chat guionizado": 4,
        "execute_tool ver_saldo": 1,
        "execute_tool ver_movimientos": 1,
        "execute_tool ver_tarjetas": 1,
    }
    root = next(s for s in spans if s.parent is None)
    assert all(s.parent.span_id == root.context.span_id for s in spans if s is not root)
    assert attrs(root)["gen_ai.operation.name"] == "invoke_agent"
    assert attrs(root)["gen_ai.agent.name"] == "cajero"
    assert attrs(root)["synaptum.run.closed"] is True
    chat = next(s for s in spans if s.name.startswith("chat"))
    assert attrs(chat)["gen_ai.operation.name"] == "chat"
    assert attrs(chat)["gen_ai.request.model"] == "guionizado"
    assert attrs(chat)["gen_ai.usage.input_tokens"] > 0
    assert attrs(chat)["gen_ai.usage.output_tokens"] > 0
    tool = next(s for s in spans if s.name == "execute_tool ver_saldo")
    assert attrs(tool)["gen_ai.operation.name"] == "execute_tool"
    assert attrs(tool)["gen_ai.tool.name"] == "ver_saldo"
    assert attrs(tool)["gen_ai.tool.call.id"]
    # the sum of gen_ai.usage over the spans is what the run paid, once
    paid = sum(attrs(s).get("gen_ai.usage.input_tokens", 0) for s in spans)
    assert paid == attrs(root)["synaptum.run.usage.input_tokens"]


def test_usage_not_measured_is_absent_never_zero():
    store = MemoryCheckpointer()
    asyncio.run(drive(store, "r", gate=Unmeasured([responder] * 10, tools=TOOLS)))
    spans = rebuilt(store, "r")
    assert not any(
        k.startswith(("gen_ai.usage", "synaptum.run.usage")) for s in spans for k in attrs(s)
    )
    # cached tokens, which the double does not measure, are absent from a measured run too
    store = MemoryCheckpointer()
    asyncio.run(drive(store, "r"))
    assert not any("cache_read" in k for s in rebuilt(store, "r") for k in attrs(s))


def test_a_resumed_run_has_two_passes_its_replays_marked_and_linked():
    store = MemoryCheckpointer()
    # stop on the third tool step attempted (the 11th event): the next pass attempts it again
    asyncio.run(drive(store, "r", stop_after=11))
    asyncio.run(drive(store, "r"))
    spans = rebuilt(store, "r")
    roots = {attrs(s)["synaptum.pass"]: s for s in spans if s.parent is None}
    assert sorted(roots) == [1, 2]
    assert [link.context.span_id for link in roots[2].links] == [roots[1].context.span_id]
    replayed = [s for s in spans if attrs(s).get("synaptum.replayed") is True]
    assert [attrs(s)["synaptum.step.id"] for s in replayed] == [
        f"{n:06d}-{k}" for n, k in enumerate(["model", "tool"] * 2 + ["model"])
    ]
    ids = {s.context.span_id: s for s in spans}
    for span in replayed:
        assert span.context.trace_id == roots[2].context.trace_id
        (link,) = span.links
        did = ids[link.context.span_id]
        assert attrs(did)["synaptum.pass"] == 1 and attrs(did)["synaptum.replayed"] is False
        assert attrs(did)["synaptum.step.id"] == attrs(span)["synaptum.step.id"]
    assert len(ids) == len(spans)  # no span twice


def test_a_kill_between_two_steps_leaves_no_evidence_of_a_second_pass():
    store = MemoryCheckpointer()
    asyncio.run(drive(store, "r", stop_after=4))  # after the first tool step completed
    asyncio.run(drive(store, "r"))
    assert {attrs(s)["synaptum.pass"] for s in rebuilt(store, "r")} == {1}


def test_live_spans_are_the_journals_spans():
    store = MemoryCheckpointer()
    first, second = InMemorySpanExporter(), InMemorySpanExporter()
    asyncio.run(drive(store, "r", exporter=first, stop_after=11))
    asyncio.run(drive(store, "r", exporter=second))
    live = [*first.get_finished_spans(), *second.get_finished_spans()]
    journal = rebuilt(store, "r")

    def key(span):
        shown = {k: v for k, v in attrs(span).items() if k != "synaptum.time"}
        links = tuple(sorted((x.context.trace_id, x.context.span_id) for x in span.links))
        parent = span.parent.span_id if span.parent else None
        return (
            span.name,
            span.context.trace_id,
            span.context.span_id,
            parent,
            links,
            tuple(sorted(shown.items())),
            span.status.status_code,
        )

    assert sorted(map(key, live)) == sorted(map(key, journal))
    assert {attrs(s)["synaptum.time"] for s in live} == {"measured"}
    assert all(s.start_time <= s.end_time for s in live)


def test_a_call_the_policy_refuses_has_its_span_live_and_from_the_journal():
    store, live = MemoryCheckpointer(), InMemorySpanExporter()

    def no_movements(proposal):
        if proposal.tool == "ver_movimientos":
            return Verdict.deny("no hoy")
        return Verdict.allow()

    gate = ScriptedGateway([responder] * 10, tools=TOOLS, policy=no_movements)
    asyncio.run(drive(store, "r", gate=gate, exporter=live))
    journal = rebuilt(store, "r")
    refused = [s for s in journal if attrs(s).get("synaptum.decision.action") == "deny"]
    assert [s.name for s in refused] == ["execute_tool ver_movimientos"]
    assert refused[0].status.status_code.name == "ERROR"
    assert sorted(s.context.span_id for s in live.get_finished_spans()) == sorted(
        s.context.span_id for s in journal
    )


def test_a_pass_refused_before_it_began_sends_nothing():
    store, live = MemoryCheckpointer(), InMemorySpanExporter()
    asyncio.run(drive(store, "r"))
    other = Agent("otro", model="guionizado", instructions="Otra cosa.", tools=TOOLS)
    with pytest.raises(ConfigurationChanged):
        asyncio.run(drive(store, "r", exporter=live, who=other))
    assert live.get_finished_spans() == ()


def test_a_delegation_sub_run_hangs_under_its_step():
    store = MemoryCheckpointer()
    helper = Agent("ayudante", model="guionizado-2", instructions="Ayuda.")
    boss = Agent("jefe", model="guionizado", instructions="Delega.", delegates=[helper])

    def boss_says(request):
        if any(m.role.value == "tool" for m in request.messages):
            return says("hecho")
        from synaptum_lite.testing import calls

        return calls("ayudante", task="suma 2 y 2")

    def helper_says(request):
        return says("4")

    gate = ScriptedGateway([boss_says, helper_says, boss_says])
    asyncio.run(drive(store, "r", gate=gate, who=boss))
    spans = rebuilt(store, "r")
    step = next(s for s in spans if s.name == "execute_tool ayudante")
    sub = next(s for s in spans if s.name == "invoke_agent ayudante")
    assert sub.parent.span_id == step.context.span_id
    assert sub.context.trace_id == step.context.trace_id
    chat = next(
        s
        for s in spans
        if attrs(s).get("gen_ai.request.model") == "guionizado-2" and s.name.startswith("chat")
    )
    assert chat.parent.span_id == sub.context.span_id
    assert attrs(chat)["synaptum.run.id"] == "r/000001-delegate"


def test_an_unreachable_receiver_is_an_error_after_the_fact_and_a_warning_live(tmp_path):
    store = MemoryCheckpointer()
    with otlp_receiver() as receiver:
        url = receiver.url  # a port that was free, closed when the block ended
    asyncio.run(drive(store, "r"))
    with pytest.raises(TraceExportFailed) as raised:
        asyncio.run(export_journal(store, "r", otlp_exporter(url, timeout=2)))
    assert url in str(raised.value) and "unreachable" in str(raised.value)
    assert "export it again" in str(raised.value)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        asyncio.run(drive(store, "s", exporter=otlp_exporter(url, timeout=2)))
    assert [w.category for w in said] == [TraceExportWarning]
    assert asyncio.run(store.load("s")).final.text == ANSWER  # the run went on


def test_bad_destinations_and_runs_are_refused_saying_what_to_do():
    with pytest.raises(ConfigurationError, match="http"):
        otlp_exporter("grpc://127.0.0.1:4317")
    with pytest.raises(ConfigurationError, match="not in this store"):
        asyncio.run(export_journal(MemoryCheckpointer(), "nadie", InMemorySpanExporter()))


def test_the_file_exporter_writes_otlp_json_that_reads_back(tmp_path):
    store = SqliteCheckpointer(tmp_path / "runs.db")
    asyncio.run(drive(store, "r"))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "synaptum_lite",
            "export",
            str(tmp_path / "runs.db"),
            "r",
            "--otel",
            str(tmp_path / "traza.jsonl"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("sent 8 spans of run r to ")
    spans = read_otlp_json(tmp_path / "traza.jsonl")
    assert [s["name"] for s in spans] == [s.name for s in rebuilt(store, "r")]
    assert all(len(s["trace_id"]) == 32 and len(s["span_id"]) == 16 for s in spans)
    again = OtlpJsonFile(tmp_path / "otra.jsonl")
    asyncio.run(export_journal(store, "r", again, start_ns=0))
    assert [s["span_id"] for s in read_otlp_json(again.path)] == [s["span_id"] for s in spans]


BLOCK = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("opentelemetry", "google"):
            raise ImportError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
"""


def test_without_the_extra_the_package_imports_and_a_trace_says_how_to_install():
    code = (
        BLOCK
        + """
import synaptum_lite, synaptum_lite.integrations.otel as otel
from synaptum_lite import ConfigurationError
try:
    otel.otlp_exporter("http://127.0.0.1:4318")
except ConfigurationError as exc:
    print(exc)
try:
    otel.OtlpJsonFile("traza.jsonl")
except ConfigurationError as exc:
    print(exc)
from synaptum_lite.cli import main
sys.exit(main(sys.argv[1:]))
"""
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "export", "x.db", "r", "--otel", "http://127.0.0.1:4318"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    said = out.stdout.splitlines()
    assert len(said) == 2 and all("pip install 'synaptum-lite[otel]'" in line for line in said)
    assert all("no module 'opentelemetry" in line for line in said)
    assert out.returncode == 2 and "pip install 'synaptum-lite[otel]'" in out.stderr


def test_the_command_refuses_an_empty_or_non_http_destination(tmp_path):
    for bad in ("", "grpc://127.0.0.1:4317"):
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "synaptum_lite",
                "export",
                str(tmp_path / "x.db"),
                "r",
                "--otel",
                bad,
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=HANG,
        )
        assert out.returncode == 2 and "--otel" in out.stderr, out.stderr
