"""Long runs on *Rendimiento* (issue 32): what the benchmark measures of them and how the page
says what it did not measure.

- `first`, the operation a long run resumes with, ends its process at the first call, before
  that call is answered: a real child SIGKILLed at N/2, then a real resumer, and the journal
  read after both.
- A contender stops where its next N would not fit the limits, predicted from what it measured;
  every N it did not reach is extrapolated from the exponents measured, and marked so on the
  page with the reason it stopped. A long-run figure edited in the results fails the check,
  as every other table does.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import anchors, durable_runs, long_runs, page, provenance
from benchmarks.contenders.lite import stored_bytes
from synaptum_lite import Phase, SqliteCheckpointer, load_events
from tests.bounds import HANG

RESULTS = Path(page.HERE) / "results" / "latest.json"


def lite() -> anchors.Contender:
    return next(c for c in anchors.contenders(None)[0] if c.key == "lite")


def test_first_ends_the_resume_at_its_first_call_before_it_is_answered(tmp_path: Path) -> None:
    n, store = 10, str(tmp_path / "largo.db")
    durable_runs.kill_at_half(lite(), n, store)
    killed = stored_bytes(store)
    first = durable_runs.call(lite(), "first", n, store)

    assert first["first_call_s"] > 0
    assert first["journal_bytes"] == killed  # the store as the kill left it
    assert first["peak_memory_kb"] >= first["memory_before_kb"] > 0

    async def events() -> list[Any]:
        checkpointer = SqliteCheckpointer(store)
        try:
            return await load_events(checkpointer, "r")
        finally:
            await checkpointer.close()

    journaled = asyncio.run(events())
    models = [e for e in journaled if e.step_id.endswith("-model")]
    answered = [e for e in models if e.phase is Phase.COMPLETED]
    # the killed child answered turns 1..N/2; the resumer called once more and was ended there
    assert len(answered) == n // 2
    assert [e.phase for e in models[-1:]] == [Phase.ATTEMPTED]


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="Linux's clear_refs")
def test_the_memory_a_resume_adds_counts_from_what_the_process_holds_before_it() -> None:
    # Memory held and freed before (here 128 MiB) left the process's peak above anything the
    # resume adds, which then read as 0 kB added; the peak starts over instead.
    code = (
        "from benchmarks.workload import peak_memory_kb, reset_peak_memory\n"
        "held = bytearray(128 << 20); held[::4096] = b'x' * len(held[::4096]); del held\n"
        "before = reset_peak_memory()\n"
        "added = bytearray(16 << 20); added[::4096] = b'x' * len(added[::4096])\n"
        "print(before, peak_memory_kb())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=HANG
    )
    before, peak = map(int, done.stdout.split())
    assert 16 * 1024 <= peak - before < 64 * 1024


def test_an_exponent_is_fitted_over_the_largest_n_and_predicts_along_it() -> None:
    quadratic = [(n, 3.0 * n * n) for n in (10, 50, 200, 400)]
    assert long_runs.exponent(quadratic) == pytest.approx(2.0)
    assert long_runs.predict(quadratic, 5000) == pytest.approx(3.0 * 5000 * 5000)
    assert long_runs.exponent([(400, 1.0)]) is None  # one point has no slope
    assert long_runs.exponent([(200, 0.0), (400, None), (800, 2.0)]) is None  # nor do zeros


def durable_row(n: int, **figures: float) -> dict[str, Any]:
    return {"n": n, "cpu_per_step_ms": 1.0, "closed_run_ms": 1.0, **figures}


def test_a_long_run_is_not_tried_when_its_prediction_passes_a_limit() -> None:
    # bytes growing as N², 1 GB at N = 400: 25 GB predicted at 2,000
    heavy = [
        durable_row(n, bytes=1e9 * (n / 400) ** 2, first_call_after_kill_ms=1.0) for n in (200, 400)
    ]
    assert long_runs.why_not(heavy, [], 2000) == "predicted 25 GB stored, over 10"
    # a minute of measuring at N = 1,000 that grows as N²: 25 min at 5,000
    measured = [
        {"n": 500, "seconds": 15.0, "bytes": 1e6},
        {"n": 1000, "seconds": 60.0, "bytes": 2e6},
    ]
    assert long_runs.why_not([], measured, 5000) == "predicted 25 min of measuring, over 10"
    assert long_runs.why_not([], measured, 2000) is None  # 4 min: it is tried


def sealed_with_long_runs() -> dict[str, Any]:
    """The saved results with long runs as the benchmark records them: ours measured at 1,000
    and 2,000 and stopped at 5,000; LangGraph stopped at once."""
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    ours = [
        {
            "n": n,
            "seconds": n / 100,
            "bytes": 1300 * n,
            "cpu_per_step_ms": 0.9,
            "closed_run_ms": 0.8,
            "first_call_after_kill_ms": 0.09 * n,
            "peak_memory_kb": 27000 + 4 * n,
            "memory_before_kb": 27000,
            "journal_bytes": 700 * n,
            "resume_floor_ms": 0.03 * n,
        }
        for n in (1000, 2000)
    ]
    results["raw"]["long_runs"] = {
        "sizes": [1000, 2000, 5000],
        "contenders": {
            "lite": {
                "label": "synaptum_lite · SQLite",
                "rows": ours,
                "stopped": {"n": 5000, "why": "stopped after 10 min of measuring"},
            },
            "langgraph": {
                "label": "LangGraph · SqliteSaver",
                "rows": [],
                "stopped": {"n": 1000, "why": "predicted 31 GB stored, over 10"},
            },
        },
    }
    results["settings"]["long_sizes"] = [1000, 2000, 5000]
    return provenance.seal(results)


def test_what_a_contender_did_not_reach_is_extrapolated_marked_and_explained() -> None:
    results = sealed_with_long_runs()
    rows = {row["n"]: row for row in results["long_runs"]["lite"]["rows"]}
    assert [rows[n]["extrapolated"] for n in (1000, 2000, 5000)] == [False, False, True]
    assert rows[2000]["bytes"] == 1300 * 2000  # measured, as measured
    points = [(r["n"], r["bytes"]) for r in results["durable_runs"]["lite"]["rows"]]
    points += [(n, 1300 * n) for n in (1000, 2000)]
    assert rows[5000]["bytes"] == pytest.approx(long_runs.predict(points, 5000))
    assert rows[5000]["memory_kb"] == pytest.approx(4 * 5000)  # 4 KiB a step, linear

    text = page.render(results)
    section = text[text.index("## Carreras largas") : text.index("## Llamadas repetidas")]
    assert "| synaptum_lite · SQLite | 5.000 | ≈ " in section
    assert "| synaptum_lite · SQLite | 2.000 | 2,6 MB |" in section
    assert "desde N = 5.000, extrapolado: se paró a los 10 min de medir" in section
    assert "desde N = 1.000, extrapolado: guardaría unos 31 GB, más de los 10" in section
    assert "Reanudar hasta la primera llamada en 150 ms o menos: ≈" not in section
    assert "(extrapolado), no se cumple." in section  # 450 ms at 5,000, from 0.09 ms a step


def test_a_long_run_figure_edited_in_the_results_fails_the_check() -> None:
    results = sealed_with_long_runs()
    assert page.problems(results, page.render(results)) == []
    results["long_runs"]["lite"]["rows"][1]["first_call_after_kill_ms"] /= 2
    found = page.problems(results, page.render(results))
    assert found and found[0].startswith(
        "benchmarks/results/latest.json: long_runs.lite.rows[1].first_call_after_kill_ms: "
    )


def test_each_floor_stands_beside_its_figure_with_what_is_ours_above_it() -> None:
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    ours = results["raw"]["imports"]["lite"]
    # the standard library our import loads, alone: 80 ms above a bare interpreter's start
    ours["stdlib_modules"] = ["asyncio", "json", "sqlite3"]
    ours["stdlib_s"] = [start + 0.080 for start in ours["python_start_s"]]
    results["raw"]["long_runs"] = sealed_with_long_runs()["raw"]["long_runs"]
    results = provenance.seal(results)
    text = page.render(results)
    floors = text[text.index("## Suelos") : text.index("## Almacenamiento")]

    assert floors.startswith("## Suelos\n\nCuatro cifras de esta medición tienen un suelo")
    imported = results["imports"]["lite"]
    assert imported["stdlib_modules"] == 3
    assert imported["stdlib_ms"] == pytest.approx(80.0)
    assert (
        f"| importar el paquete | {page._ms(imported['import_ms'])} | 80,0 ms | importar solo "
        "los 3 módulos de la biblioteca estándar que carga |"
    ) in floors
    # ours at 2,000, the largest N whose floor was measured: 180 ms over a floor of 60
    assert (
        "| de reanudar a la primera llamada (N = 2.000) | 180 ms | 60,0 ms | leer el journal,"
    ) in floors
    assert floors.rstrip().endswith("| 120 ms (3,0×) |")
