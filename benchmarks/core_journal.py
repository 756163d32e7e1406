"""Benchmark of the core's journal: storage, closed-run return and CPU per step.

Workload: N turns of one model call answering 200 B of text plus one tool call, whose tool
returns 1 KB; then a final answer. Measured on SQLite (the default, power-loss safe), with
prose-like payloads and with incompressible ones (the journal compresses large records).

    uv run python benchmarks/core_journal.py [--sizes 10 50 200 400] [--repeats 5] [--json out.json]

Reports, per N: bytes of the journal file (after closing), the ratio to the raw payload
(N × 1,224 B), the growth exponent of bytes against N (least squares on log-log), the median
time to return the closed run, and the median process CPU per step (all threads included).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import platform
import random
import statistics
import string
import tempfile
import time
from pathlib import Path

from synaptum_lite import Agent, Risk, Session, SqliteCheckpointer, tool
from synaptum_lite.testing import ScriptedGateway, calls, says

TEXT_BYTES, RESULT_BYTES = 200, 1024
PAYLOAD_PER_STEP = TEXT_BYTES + RESULT_BYTES
_WORDS = (
    "el saldo de la cuenta es de euros según el extracto del banco con fecha y concepto "
    "transferencia recibida pago tarjeta comisión mantenimiento nómina recibo luz agua"
).split()


def payload(kind: str, size: int, seed: int) -> str:
    """`size` characters of prose-like text (compresses like real text, about 3×) or of
    random letters and digits (does not compress): the honest worst case."""
    rng = random.Random(seed)
    if kind == "random":
        return "".join(rng.choices(string.ascii_letters + string.digits, k=size))
    words: list[str] = []
    while sum(map(len, words)) + len(words) < size:
        words.append(rng.choice(_WORDS) if rng.random() < 0.8 else str(rng.randint(0, 99999)))
    return " ".join(words)[:size]


def workload(n: int, kind: str) -> tuple[Agent, ScriptedGateway]:
    texts = [payload(kind, TEXT_BYTES, 2 * i) for i in range(n + 1)]  # made before the clock runs
    results = [payload(kind, RESULT_BYTES, 2 * i + 1) for i in range(n)]

    @tool(risk=Risk.READ, idempotent=True)
    def leer(n: int) -> str:
        """Devuelve 1 KB."""
        return results[n]

    def responder(request):
        done = (len(request.messages) - 2) // 2  # system, task, then (answer, result) per turn
        return calls("leer", text=texts[done], n=done) if done < n else says(texts[done])

    agent = Agent("bench", model="stub", instructions="bench", tools=[leer], max_steps=n + 1)
    return agent, ScriptedGateway([responder] * (n + 1))


async def drive(agent: Agent, session: Session) -> int:
    count = 0
    async for _ in agent.run("go", session=session):
        count += 1
    return count


def measure(n: int, repeats: int, durability: str, kind: str) -> dict[str, float]:
    sizes, cpus, closed = [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "runs.db"
            agent, gateway = workload(n, kind)
            store = SqliteCheckpointer(path, durability=durability)
            cpu = time.process_time()
            asyncio.run(drive(agent, Session("r", gateway, store)))
            cpus.append((time.process_time() - cpu) / n)
            asyncio.run(store.close())
            sizes.append(path.stat().st_size)

            async def return_closed() -> float:
                reopened = SqliteCheckpointer(path, durability=durability)
                await reopened.load("warm-up")  # open the file outside the timing
                start = time.perf_counter()
                steps = await drive(agent, Session("r", ScriptedGateway([]), reopened))
                elapsed = time.perf_counter() - start
                assert steps == 1
                await reopened.close()
                return elapsed

            closed.append(asyncio.run(return_closed()))
    return {
        "n": n,
        "bytes": statistics.median(sizes),
        "raw_payload": n * PAYLOAD_PER_STEP,
        "ratio_to_payload": statistics.median(sizes) / (n * PAYLOAD_PER_STEP),
        "closed_run_ms": statistics.median(closed) * 1000,
        "cpu_per_step_ms": statistics.median(cpus) * 1000,
    }


def empty_journal_bytes() -> int:
    """The size of a journal file holding one started run and no events: the fixed cost."""
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteCheckpointer(Path(tmp) / "runs.db")
        asyncio.run(store.start("r", {}))
        asyncio.run(store.close())
        return (Path(tmp) / "runs.db").stat().st_size


def growth_exponent(rows: list[dict[str, float]], base: float = 0) -> float:
    """Least-squares slope of log(bytes - base) against log(N): 1.0 is linear, 2.0 quadratic."""
    xs = [math.log(r["n"]) for r in rows]
    ys = [math.log(r["bytes"] - base) for r in rows]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 200, 400])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report = {"machine": f"{platform.machine()} · {platform.python_implementation()} {platform.python_version()}"}
    for durability, kind in (("full", "text"), ("full", "random"), ("normal", "text")):
        rows = [measure(n, args.repeats, durability, kind) for n in args.sizes]
        name = f"{durability}/{kind}"
        base = empty_journal_bytes()
        report[name] = {
            "rows": rows,
            "growth_exponent": growth_exponent(rows),
            "empty_journal_bytes": base,
            "growth_exponent_above_empty": growth_exponent(rows, base),
        }
        print(f"\nSQLite, durability={durability!r}, payload {kind} ({report['machine']}; medians of {args.repeats})")
        print(f"{'N':>5} {'bytes':>10} {'× payload':>10} {'closed run':>11} {'CPU/step':>9}")
        for r in rows:
            print(
                f"{r['n']:>5} {r['bytes']:>10,.0f} {r['ratio_to_payload']:>10.2f} "
                f"{r['closed_run_ms']:>8.2f} ms {r['cpu_per_step_ms']:>6.3f} ms"
            )
        print(
            f"growth exponent of bytes in N: {report[name]['growth_exponent']:.3f}; above the "
            f"{base:,} B of an empty journal: {report[name]['growth_exponent_above_empty']:.3f}"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
