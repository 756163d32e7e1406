"""Long runs: the durable-run workload at N = 1,000, 2,000 and 5,000, one repeat each.

Per contender and N, two fresh stores:

1. `run`: bytes stored, CPU per step, time to return the closed run;
2. a kill at N/2 (as in `benchmarks.durable_runs`), then `first`: a resume that ends its
   process at its first call, reporting the time to it, the memory the process held just
   before it opened the store and its peak from there, and the bytes the killed run's store
   held; for ours, then, the least work our format asks of that resume (`floor`), on the same
   store.

The second half of a resumed run is not run: what a long run costs to resume is the time to
its first new call, and the calls it repeats are counted at every smaller N.

A contender whose cost grows faster stops where the next N would not fit the limits here
(`TIME_LIMIT_S` of measuring one N, `BYTES_LIMIT` stored): that N is predicted before it is
tried, from the largest N measured so far (the durable-run rows included), and a
measurement that overruns the time limit anyway is stopped. Every N it did not reach is then
extrapolated by `benchmarks.provenance.long_runs` from the exponents measured, and marked so.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.anchors import Contender
from benchmarks.durable_runs import Failed, Stores, call, kill_at_half
from benchmarks.workload import log_log_slope

SIZES = (1000, 2000, 5000)
#: The contenders whose resume floor is measured (`contenders.lite.resume_floor`): our format.
HAS_FLOOR = ("lite",)
TIME_LIMIT_S = 600.0  # 10 minutes of measuring one N
BYTES_LIMIT = 10 * 10**9  # 10 GB stored


class OverLimit(Exception):
    """The measurement of one N ran past the time limit: it was stopped."""


def measure_one(contender: Contender, n: int, stores: Stores, limit_s: float) -> dict[str, Any]:
    """One long run of `contender` at `n`, stopped if it takes more than `limit_s` in all."""
    started = time.perf_counter()

    def left() -> float:
        remaining = limit_s - (time.perf_counter() - started)
        if remaining <= 0:
            raise OverLimit
        return remaining

    try:
        with stores.fresh(contender) as store:
            ran = call(contender, "run", n, store, timeout=left())
        with stores.fresh(contender) as store:
            kill_at_half(contender, n, store, timeout=left())
            first = call(contender, "first", n, store, timeout=left())
            floor = None
            if contender.key in HAS_FLOOR:  # read after the resume: it changed nothing it reads
                floor = call(contender, "floor", n, store, timeout=left())["floor_s"] * 1000
    except subprocess.TimeoutExpired:
        raise OverLimit from None
    return {
        "n": n,
        "seconds": time.perf_counter() - started,
        "bytes": ran["bytes"],
        "cpu_per_step_ms": ran["cpu_per_step_s"] * 1000,
        "closed_run_ms": ran["closed_run_s"] * 1000,
        "first_call_after_kill_ms": first["first_call_s"] * 1000,
        "peak_memory_kb": first["peak_memory_kb"],
        "memory_before_kb": first["memory_before_kb"],
        "journal_bytes": first["journal_bytes"],
        "resume_floor_ms": floor,
    }


def _estimated_seconds(row: dict[str, Any]) -> float:
    """What measuring a long run at the row's N costs, from a durable-run row (which does not
    time it): the run and the killed half at its CPU per step, the closed run, the resume."""
    n = row["n"]
    return (
        1.5 * n * row["cpu_per_step_ms"] + row["closed_run_ms"] + row["first_call_after_kill_ms"]
    ) / 1000


#: How many of the largest N an exponent is fitted over: where growth shows, and more than two,
#: so that one noisy figure does not tilt what is extrapolated from it tenfold.
FITTED = 3


def exponent(points: list[tuple[int, float | None]]) -> float | None:
    """The log-log slope (least squares) over the `FITTED` largest N of `points` (N, value)
    with a value above zero; None with fewer than two."""
    usable = sorted((x, y) for x, y in points if y is not None and y > 0)
    return log_log_slope(usable[-FITTED:]) if len(usable) >= 2 else None


def predict(points: list[tuple[int, float | None]], n: int) -> float | None:
    """The value at `n`, from the largest N of `points` at the `exponent` they grow with."""
    slope = exponent(points)
    if slope is None:
        return None
    last_n, last = max((x, y) for x, y in points if y is not None and y > 0)
    return last * (n / last_n) ** slope


def why_not(
    durable_rows: list[dict[str, Any]], measured: list[dict[str, Any]], n: int
) -> str | None:
    """Why measuring `n` would not fit the limits, or None when it is predicted to fit."""
    seconds = [(r["n"], _estimated_seconds(r)) for r in durable_rows] + [
        (r["n"], r["seconds"]) for r in measured
    ]
    stored = [(r["n"], r["bytes"]) for r in durable_rows + measured]
    predicted_s, predicted_bytes = predict(seconds, n), predict(stored, n)
    if predicted_s is not None and predicted_s > TIME_LIMIT_S:
        return f"predicted {predicted_s / 60:.0f} min of measuring, over {TIME_LIMIT_S / 60:.0f}"
    if predicted_bytes is not None and predicted_bytes > BYTES_LIMIT:
        return f"predicted {predicted_bytes / 1e9:.0f} GB stored, over {BYTES_LIMIT / 1e9:.0f}"
    return None


def measure(
    contenders: list[Contender],
    durable: dict[str, Any],
    sizes: tuple[int, ...] | list[int],
    scratch: Path,
    postgres_url: str | None,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Every long run that fits, per contender, and where and why each one stopped.

    `durable` is the derived durable-run table (`benchmarks.provenance.durable_runs`), whose
    rows start each contender's predictions."""
    stores = Stores(scratch, postgres_url)
    report: dict[str, Any] = {}
    for contender in contenders:
        rows = (durable.get(contender.key) or {}).get("rows", [])
        measured: list[dict[str, Any]] = []
        stopped: dict[str, Any] | None = None
        for n in sizes:
            reason = why_not(rows, measured, n)
            if reason is None:
                try:
                    measured.append(measure_one(contender, n, stores, TIME_LIMIT_S))
                except OverLimit:
                    reason = f"stopped after {TIME_LIMIT_S / 60:.0f} min of measuring"
                except (Failed, ValueError) as exc:
                    reason = f"failed: {exc}"
            if reason is not None:
                stopped = {"n": n, "why": reason}
                log(f"  {contender.label:<32} N={n:<5} not measured: {reason}")
                break
            log(f"  {contender.label:<32} N={n:<5} {measured[-1]['seconds']:7.1f} s")
        report[contender.key] = {"label": contender.label, "rows": measured, "stopped": stopped}
    return report
