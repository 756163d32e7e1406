"""The durable-run benchmark, parent side: every contender through the same operations, each
operation a child process (`benchmarks.driver`) under the contender's interpreter, the
contenders interleaved so that a noisy machine slows every side alike.

Per contender, N and repeat, three fresh stores:

1. `run`: bytes stored, CPU per step, time to return the closed run;
2. kill at N/2 (a SIGKILL from here while the child is inside the model call of turn N/2 + 1),
   then one `resume`: time from the resume to its first call, and the calls repeated;
3. kill at N/2 again, then two `race` children released at once on the same run: tool
   executions beyond one per step, counted over the whole run.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.anchors import Contender

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 1800  # seconds; upstream Synaptum needs minutes to return a closed run of 400 steps


class Failed(Exception):
    """A child did not do what the protocol says; the message has its output."""


def _command(contender: Contender, operation: str, n: int, store: str) -> list[str]:
    return [
        contender.python,
        "-m",
        "benchmarks.driver",
        contender.module,
        operation,
        "--n",
        str(n),
        "--store",
        store,
    ]


def _result(process: subprocess.Popen, stdout: str, stderr: str) -> dict[str, Any]:
    if process.returncode != 0:
        raise Failed(
            f"{' '.join(process.args)} exited {process.returncode}:\n{stdout}\n{stderr[-3000:]}"
        )
    return json.loads(stdout.strip().splitlines()[-1])


def _finish(process: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """The child's output once it ends; past `timeout` seconds it is killed, and
    `TimeoutExpired` raised."""
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise


def call(
    contender: Contender, operation: str, n: int, store: str, *, timeout: float = TIMEOUT
) -> dict[str, Any]:
    process = subprocess.Popen(
        _command(contender, operation, n, store),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = _finish(process, timeout)
    return _result(process, stdout, stderr)


def kill_at_half(contender: Contender, n: int, store: str, *, timeout: float = TIMEOUT) -> None:
    """Run the workload in a child and SIGKILL it inside the model call of turn N/2 + 1."""
    process = subprocess.Popen(
        _command(contender, "kill", n, store),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    expired = threading.Event()  # the child did not pause within `timeout`: it is killed

    def expire() -> None:
        expired.set()
        process.kill()

    timer = threading.Timer(timeout, expire)
    timer.start()
    try:
        line = process.stdout.readline()
    finally:
        timer.cancel()
    process.send_signal(signal.SIGKILL)
    stdout, stderr = process.communicate()
    if expired.is_set():
        raise subprocess.TimeoutExpired(process.args, timeout)
    if line.strip() != "paused" or process.returncode != -signal.SIGKILL:
        raise Failed(
            f"{' '.join(process.args)} did not pause at turn {n // 2 + 1}:\n"
            f"{line}{stdout}\n{stderr[-3000:]}"
        )


def race(contender: Contender, n: int, store: str) -> list[dict[str, Any]]:
    """Two resumers of the same run, released together once both are ready."""
    racers = [
        subprocess.Popen(
            _command(contender, "race", n, store),
            cwd=REPO,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    for racer in racers:
        if racer.stdout.readline().strip() != "ready":
            for other in racers:
                other.kill()
            raise Failed(
                f"a racer of {contender.label} did not start: {racer.communicate()[1][-3000:]}"
            )
    for racer in racers:
        racer.stdin.write("go\n")
        racer.stdin.flush()
    results = []
    for racer in racers:
        stdout, stderr = racer.communicate(timeout=TIMEOUT)
        results.append(_result(racer, stdout, stderr))
    return results


class Stores:
    """Fresh stores for one contender: files in a scratch folder, or PostgreSQL schemas."""

    def __init__(self, scratch: Path, postgres_url: str | None) -> None:
        self.scratch = scratch
        self.postgres_url = postgres_url
        self.count = 0

    def new(self, contender: Contender) -> str:
        self.count += 1
        if contender.store == "postgres":
            return f"{self.postgres_url}#bench_{contender.key}_{self.count}"
        return str(self.scratch / f"{contender.key}-{self.count}.db")

    @contextlib.contextmanager
    def fresh(self, contender: Contender) -> Iterator[str]:
        """A new store, discarded when the block ends."""
        store = self.new(contender)
        try:
            yield store
        finally:
            self.discard(contender, store)

    def discard(self, contender: Contender, store: str) -> None:
        if contender.store == "postgres":
            call(contender, "discard", 0, store)
            return
        for suffix in ("", "-wal", "-shm", "-journal", ".lock"):
            Path(store + suffix).unlink(missing_ok=True)


def measure_once(contender: Contender, n: int, stores: Stores) -> dict[str, Any]:
    """One repeat of the three measurements, at one N. `half` steps are done before a kill."""
    half = n // 2
    with stores.fresh(contender) as store:
        ran = call(contender, "run", n, store)
    with stores.fresh(contender) as store:
        kill_at_half(contender, n, store)
        resumed = call(contender, "resume", n, store)
    with stores.fresh(contender) as store:
        kill_at_half(contender, n, store)
        racers = race(contender, n, store)

    # Before the kill: `half` tool runs and `half` model calls answered (the call of turn
    # half + 1 was in flight). The whole run needs N tool runs and N + 1 model calls.
    return {
        "bytes": ran["bytes"],
        "cpu_per_step_ms": ran["cpu_per_step_s"] * 1000,
        "closed_run_ms": ran["closed_run_s"] * 1000,
        "first_call_after_kill_ms": None
        if resumed["first_call_s"] is None
        else resumed["first_call_s"] * 1000,
        "repeated_tools_after_kill": half + resumed["tool_runs"] - n,
        "repeated_model_calls_after_kill": half + resumed["model_calls"] - (n + 1),
        "race_duplicate_tools": half + sum(r["tool_runs"] for r in racers) - n,
        "race_duplicate_model_calls": half + sum(r["model_calls"] for r in racers) - (n + 1),
        "race_outcomes": sorted(r["outcome"] for r in racers),
    }


def measure(
    contenders: list[Contender],
    sizes: list[int],
    repeats: int,
    scratch: Path,
    postgres_url: str | None,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Every repeat of every contender at every N (the raw measurements), and each failure."""
    stores = Stores(scratch, postgres_url)
    samples: dict[str, dict[int, list[dict[str, Any]]]] = {
        c.key: {n: [] for n in sizes} for c in contenders
    }
    failures: dict[str, str] = {}
    for repeat in range(repeats):
        for n in sizes:
            shift = repeat % len(contenders)
            for contender in contenders[shift:] + contenders[:shift]:
                if contender.key in failures:
                    continue
                started = time.perf_counter()
                try:
                    sample = measure_once(contender, n, stores)
                except (Failed, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
                    failures[contender.key] = str(exc)
                    log(f"  {contender.label}: FAILED at N={n}, left out from here on:\n{exc}")
                    continue
                samples[contender.key][n].append(sample)
                seconds = time.perf_counter() - started
                where = f"repeat {repeat + 1}/{repeats} · N={n:<4} {contender.label:<32}"
                log(f"  {where} {seconds:7.1f} s")

    # every repeat as measured; `benchmarks.provenance.derive` makes the rows of medians
    return {
        contender.key: {
            "label": contender.label,
            "python": contender.python_version,
            "samples": {str(n): samples[contender.key][n] for n in sizes},
            "failure": failures.get(contender.key),
        }
        for contender in contenders
    }
