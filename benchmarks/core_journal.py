"""Benchmark of the core's journal: storage, closed-run return and CPU per step.

Workload: N turns of one model call answering 200 B of text plus one tool call, whose tool
returns 1 KB; then a final answer. Measured on SQLite (the default, power-loss safe), with
prose-like payloads and with incompressible ones (the journal compresses large records).

    uv run python benchmarks/core_journal.py [--sizes 10 50 200 400] [--repeats 5] [--json out.json]
        [--configs full/text full/random normal/text]

Reports, per N: bytes of the journal file (after closing), the ratio to the raw payload
(N × 1,224 B), the growth exponent of bytes against N (least squares on log-log), the median
time to return the closed run, and the median process CPU per step (all threads included).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.contenders.lite import build  # noqa: E402  (importable from here on)
from benchmarks.workload import PAYLOAD_PER_STEP, Workload, growth_exponent  # noqa: E402
from synaptum_lite import Agent, Session, SqliteCheckpointer  # noqa: E402
from synaptum_lite.testing import ScriptedGateway  # noqa: E402


def workload(n: int, kind: str) -> tuple[Agent, ScriptedGateway]:
    """The workload of `benchmarks.workload`, as our agent and test double (payloads are made
    before the clock runs)."""
    return build(Workload(n, kind))


async def drive(agent: Agent, session: Session) -> int:
    count = 0
    async for _ in agent.run("go", session=session):
        count += 1
    return count


async def return_closed(agent: Agent, path: Path, durability: str) -> float:
    """Seconds to return the closed run journaled in `path` (the file already open)."""
    reopened = SqliteCheckpointer(path, durability=durability)
    await reopened.load("warm-up")  # open the file outside the timing
    start = time.perf_counter()
    steps = await drive(agent, Session("r", ScriptedGateway([]), reopened))
    elapsed = time.perf_counter() - start
    assert steps == 1
    await reopened.close()
    return elapsed


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

            closed.append(asyncio.run(return_closed(agent, path, durability)))
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 200, 400])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--configs",
        nargs="+",
        default=["full/text", "full/random", "normal/text"],
        choices=["full/text", "full/random", "normal/text"],
        help="durability/payload pairs to measure (default: all three)",
    )
    args = parser.parse_args()
    python = f"{platform.python_implementation()} {platform.python_version()}"
    report = {"machine": f"{platform.machine()} · {python}"}
    for durability, kind in (config.split("/") for config in args.configs):
        rows = [measure(n, args.repeats, durability, kind) for n in args.sizes]
        name = f"{durability}/{kind}"
        base = empty_journal_bytes()
        report[name] = {
            "rows": rows,
            "growth_exponent": growth_exponent(rows),
            "empty_journal_bytes": base,
            "growth_exponent_above_empty": growth_exponent(rows, base),
        }
        where = f"{report['machine']}; medians of {args.repeats}"
        print(f"\nSQLite, durability={durability!r}, payload {kind} ({where})")
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
