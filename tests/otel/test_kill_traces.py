"""A trace that survives a SIGKILL: a child process drives a run with a live exporter to a
real OTLP/HTTP receiver (tests/otel/receiver.py, on 127.0.0.1) and is killed inside a tool;
another process resumes the run; then `synaptum-lite export --otel` rebuilds the trace from
the journal and sends it to the same receiver. Nothing leaves the loopback interface.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.bounds import HANG

from .agents import ANSWER
from .receiver import Received, otlp_receiver

pytestmark = pytest.mark.posix_signals  # it SIGKILLs a child process

ROOT = Path(__file__).resolve().parents[2]
RUN = "cuenta-es91"


def child(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=HANG
    )


def work(spans: list[Received]) -> list[Received]:
    return [s for s in spans if s.kind != "invoke_agent" and not s.attributes["synaptum.replayed"]]


def test_the_journal_gives_the_trace_a_killed_pass_never_sent(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    with otlp_receiver() as receiver:
        killed = child(
            "-m", "tests.otel.agents", store, RUN, receiver.url, "--die-in", "ver_tarjetas"
        )
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        sent_by_the_killed_pass = receiver.take()

        resumed = child("-m", "tests.otel.agents", store, RUN, receiver.url)
        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout.strip() == ANSWER
        sent_by_the_resume = receiver.take()

        export = child("-m", "synaptum_lite", "export", store, RUN, "--otel", receiver.url)
        assert export.returncode == 0, export.stderr
        assert "2 passes, 5 replayed steps" in export.stdout
        rebuilt = receiver.take()

    # the killed pass sent the spans of the steps it finished: no root, nothing of the
    # attempt it died in
    assert Counter(s.name for s in sent_by_the_killed_pass) == {
        "chat guionizado": 3,
        "execute_tool ver_saldo": 1,
        "execute_tool ver_movimientos": 1,
    }
    # the journal gives every step attempt's span once, under two passes
    assert len({s.span_id for s in rebuilt}) == len(rebuilt)
    roots = {s.attributes["synaptum.pass"]: s for s in rebuilt if s.kind == "invoke_agent"}
    assert sorted(roots) == [1, 2]
    completed = Counter(
        s.attributes["synaptum.step.id"]
        for s in work(rebuilt)
        if s.attributes["synaptum.step.completed"]
    )
    assert completed == {f"{n:06d}-{k}": 1 for n, k in enumerate(["model", "tool"] * 3 + ["model"])}
    died = [s for s in work(rebuilt) if not s.attributes["synaptum.step.completed"]]
    assert [(s.name, s.attributes["synaptum.pass"], s.status_code) for s in died] == [
        ("execute_tool ver_tarjetas", 1, 2)  # STATUS_CODE_ERROR: its pass ended first
    ]
    # what the killed pass did send is the same spans, same ids, as the journal's
    assert {(s.trace_id, s.span_id) for s in sent_by_the_killed_pass} <= {
        (s.trace_id, s.span_id) for s in rebuilt
    }
    # the resumed pass: as sent live, so rebuilt (the pass began at an attempt 2: evidence)
    second = [s for s in rebuilt if s.trace_id == roots[2].trace_id]
    assert {s.span_id for s in second} == {s.span_id for s in sent_by_the_resume}
    # the replayed steps are marked, carry no usage, and link to the first pass's spans
    replayed = [s for s in rebuilt if s.attributes.get("synaptum.replayed") is True]
    assert len(replayed) == 5 and all(s.trace_id == roots[2].trace_id for s in replayed)
    assert not any("gen_ai.usage.input_tokens" in s.attributes for s in replayed)
    first_pass = {(s.trace_id, s.span_id) for s in rebuilt if s.trace_id == roots[1].trace_id}
    for span in replayed:
        assert [(t, i) for t, i, why in span.links if why == "replay_of"] and all(
            (t, i) in first_pass for t, i, _ in span.links
        )
        assert all(
            (t, i) in {(k.trace_id, k.span_id) for k in sent_by_the_killed_pass}
            for t, i, _ in span.links
        )  # and the killed pass had sent those
    assert roots[2].links == ((roots[1].trace_id, roots[1].span_id, "previous_pass"),)
    # the journal has no clock: every rebuilt span says its times are synthetic
    assert {s.attributes["synaptum.time"] for s in rebuilt} == {"journal_order"}
    assert {s.attributes["synaptum.time"] for s in sent_by_the_resume} == {"measured"}
