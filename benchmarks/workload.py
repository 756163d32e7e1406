"""The durable-run workload, the same for every contender. Standard library only: each
contender's driver imports it under its own interpreter.

N turns of one model call answering 200 B of text plus one tool call, whose tool returns
1 KB; then a final answer (so N + 1 model calls and N tool calls). The stub model answers
from the context, as a model would: it counts the tool results it has been shown.
"""

from __future__ import annotations

import math
import random
import statistics
import string
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

TEXT_BYTES, RESULT_BYTES = 200, 1024
PAYLOAD_PER_STEP = TEXT_BYTES + RESULT_BYTES
_WORDS = (
    "el saldo de la cuenta es de euros según el extracto del banco con fecha y concepto "
    "transferencia recibida pago tarjeta comisión mantenimiento nómina recibo luz agua"
).split()


def sqlite_bytes(store: str) -> int:
    """What a SQLite store holds on disk: its file and its write-ahead log, if one is left
    (a lock file beside them holds nothing). The `stored_bytes` of every contender on SQLite."""
    return sum(p.stat().st_size for p in (Path(store), Path(store + "-wal")) if p.exists())


def payload(kind: str, size: int, seed: int) -> str:
    """`size` characters of prose-like text (compresses like real text, about 3×) or of
    random letters and digits (does not compress): the honest worst case."""
    rng = random.Random(seed)
    if kind == "random":
        return "".join(rng.choices(string.ascii_letters + string.digits, k=size))
    words: list[str] = []
    letters = 0  # kept as words are added: summing them anew each time made N = 5,000 take minutes
    while letters + len(words) < size:
        words.append(rng.choice(_WORDS) if rng.random() < 0.8 else str(rng.randint(0, 99999)))
        letters += len(words[-1])
    return " ".join(words)[:size]


class Workload:
    """The texts the stub model says and the results the tool returns, made before any clock
    runs, and what this process has called.

    `answer(done)` is the model's turn after `done` tool results: a text and the argument of
    the tool call it asks for, or `None` for the final answer. `result(n)` is the tool's 1 KB.
    Both count, remember when the first call of this process happened (`first_call_at`, a
    `time.perf_counter` reading), and, with `pause_before_turn=k`, the model call of turn
    `k + 1` announces ``paused`` on stdout and blocks there until the process is killed.
    `at_first_call`, when set, is called at the first call, before it is answered (the
    `first` operation of `benchmarks.driver` ends the process there).
    """

    def __init__(self, n: int, kind: str = "text", *, pause_before_turn: int | None = None) -> None:
        self.n = n
        self.texts = [payload(kind, TEXT_BYTES, 2 * i) for i in range(n + 1)]
        self.results = [payload(kind, RESULT_BYTES, 2 * i + 1) for i in range(n)]
        self.pause_before_turn = pause_before_turn
        self.model_calls = 0
        self.tool_runs = 0
        self.first_call_at: float | None = None
        self.at_first_call: Callable[[], None] | None = None

    def answer(self, done: int) -> tuple[str, int | None]:
        self._called()
        if done == self.pause_before_turn:
            pause_until_killed()
        self.model_calls += 1
        return self.texts[done], (done if done < self.n else None)

    def result(self, n: int) -> str:
        self._called()
        self.tool_runs += 1
        return self.results[n]

    def _called(self) -> None:
        if self.first_call_at is None:
            self.first_call_at = time.perf_counter()
            if self.at_first_call is not None:
                self.at_first_call()


def pause_until_killed() -> None:
    """Say ``paused`` to the parent and block: the parent SIGKILLs this process."""
    sys.stdout.write("paused\n")
    sys.stdout.flush()
    while True:
        time.sleep(3600)


def peak_memory_kb() -> int | None:
    """The most memory this process has held at once (its peak resident set) in KiB, since it
    started or since `reset_peak_memory`; None where the OS does not say (Windows). Linux
    reports KiB, macOS bytes."""
    since_reset = _proc_status_kb("VmHWM")
    if since_reset is not None:
        return since_reset
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak


def reset_peak_memory() -> int | None:
    """Start this process's peak over from the memory it holds now, and return that (KiB), so
    `peak_memory_kb` then says how far above it the process went. Linux only (its `clear_refs`
    sets the peak resident set back); None elsewhere, where the peak stays the one since the
    process started (memory freed before is reused unseen, so what comes after looks smaller)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as control:
            control.write("5")
    except OSError:
        return None
    return _proc_status_kb("VmRSS")


def _proc_status_kb(field: str) -> int | None:
    """A `field: N kB` line of /proc/self/status, or None where there is none."""
    try:
        with open("/proc/self/status", encoding="utf-8", errors="replace") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def log_log_slope(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of log(y) against log(x): 0 is flat, 1 linear, 2 quadratic."""
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(y) for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def growth_exponent(rows: Sequence[dict[str, float]], base: float = 0) -> float:
    """Least-squares slope of log(bytes - base) against log(N): 1.0 is linear, 2.0 quadratic."""
    return log_log_slope([(r["n"], r["bytes"] - base) for r in rows])
