"""*Otros sistemas* quotes the benchmark: each figure it calls «medido» is the one in
`benchmarks/results/latest.json` (what *Rendimiento* is generated from), at N = 200."""

from __future__ import annotations

import json
import re

import pytest

from scripts.pages import DOCS, REPO

PAGE = " ".join((DOCS / "otros-sistemas.md").read_text(encoding="utf-8").split())
RUNS = json.loads((REPO / "benchmarks" / "results" / "latest.json").read_text())["durable_runs"]
N = 200

#: (contender, metric of the tools, metric of the model calls, the sentence on the page with
#: {tools} and {model} where the figures go)
QUOTES = (
    (
        "lite",
        "repeated_tools_after_kill",
        "repeated_model_calls_after_kill",
        "Medido: {tools} herramientas y {model} llamadas al modelo repetidas tras un SIGKILL",
    ),
    (
        "synaptum",
        "repeated_tools_after_kill",
        "repeated_model_calls_after_kill",
        "Medido: {tools} herramienta y {model} llamadas al modelo repetidas tras matar",
    ),
    (
        "langgraph",
        "repeated_tools_after_kill",
        "repeated_model_calls_after_kill",
        "Medido: {tools} · {model} repetidas tras matar",
    ),
    (
        "lite",
        "race_duplicate_tools",
        "race_duplicate_model_calls",
        "Medido: {tools} herramientas y {model} llamadas al modelo duplicadas con dos reanudadores",
    ),
    (
        "langgraph",
        "race_duplicate_tools",
        "race_duplicate_model_calls",
        "(medido: {tools} herramientas y {model} llamadas al modelo)",
    ),
    (
        "synaptum",
        "race_duplicate_tools",
        "race_duplicate_model_calls",
        "Medido: {tools} herramientas y {model} llamadas al modelo duplicadas en carrera",
    ),
    (
        "dbos",
        "repeated_tools_after_kill",
        "repeated_model_calls_after_kill",
        "Medido en [Rendimiento](rendimiento.md): {tools} herramientas y {model} llamadas al "
        "modelo repetidas tras un SIGKILL",
    ),
    (
        "dbos",
        "race_duplicate_tools",
        "race_duplicate_model_calls",
        "a la vez al arrancar: {tools} herramientas y {model} llamadas al modelo duplicadas",
    ),
)


@pytest.mark.parametrize("contender, tools, model, sentence", QUOTES)
def test_a_measured_figure_on_otros_sistemas_is_the_benchmarks(
    contender: str, tools: str, model: str, sentence: str
) -> None:
    row = next(r for r in RUNS[contender]["rows"] if r["n"] == N)
    expected = sentence.format(tools=row[tools], model=row[model])
    pattern = re.escape(sentence).replace(r"\{tools\}", r"(\d+)").replace(r"\{model\}", r"(\d+)")
    found = re.search(pattern, PAGE)
    assert found, f"docs/otros-sistemas.md no longer says «{sentence}»"
    assert found.group(0) == expected, f"the page says «{found.group(0)}»; measured: «{expected}»"
