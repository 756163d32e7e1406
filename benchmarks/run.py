"""The one benchmark command: every measurement side by side, in one process tree and one
sitting, then the results (JSON) and the page that shows them (docs/rendimiento.md).

    uv run --group bench python -m benchmarks.run

- durable runs: the workload of `benchmarks.workload` at N = 10, 50, 200, 400 for
  synaptum_lite on SQLite (and on PostgreSQL when SYNAPTUM_BENCH_POSTGRES_URL is set),
  upstream Synaptum 1.0.0rc6 and LangGraph's SqliteSaver, each anchor in a virtual
  environment of its own (`benchmarks.anchors`); see `benchmarks.durable_runs`;
- the docs check on the property notebooks against nbval and nbmake (`benchmarks.docs_check`);
- import time (`benchmarks.imports`);
- what syncing every commit costs a step (`benchmarks.sync_cost`);
- many runs in one store, and a PostgreSQL worker pool (`benchmarks.many_runs`).

Every figure is a median over repeats and is shown as a ratio to ours. Not a test: times
here are only compared with each other, measured in the same run on the same machine. The
results keep every repeat (`raw`), the commit and the machine they were measured on, and the
digest of the raw timings; the tables are made from the raw timings (`benchmarks.provenance`).
`--quick` is for working on the benchmark itself (small N, one repeat, the docs check on three
notebooks, no page);
`--page-only` regenerates the page from the JSON without measuring.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks import (
    anchors,
    durable_runs,
    imports,
    long_runs,
    many_runs,
    page,
    provenance,
    sync_cost,
)

RESULTS = Path(__file__).resolve().parent / "results" / "latest.json"
COMMAND = "uv run --group bench python -m benchmarks.run"
PARTS = ("runs", "long", "docs", "imports", "many")


def postgres_settings(url: str) -> dict[str, str]:
    """What decides how much a PostgreSQL commit costs on that server."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        return {
            name: connection.execute(f"SHOW {name}").fetchone()[0]
            for name in ("server_version", "fsync", "synchronous_commit")
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 200, 400])
    parser.add_argument(
        "--repeats", type=int, default=3, help="repeats of each durable-run measurement"
    )
    parser.add_argument("--docs-repeats", type=int, default=3)
    parser.add_argument("--import-repeats", type=int, default=15)
    parser.add_argument(
        "--long-sizes",
        type=int,
        nargs="+",
        default=list(long_runs.SIZES),
        help="the N of the long runs (one repeat each)",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=PARTS,
        default=list(PARTS),
    )
    parser.add_argument("--quick", action="store_true", help="N = 10 and 50, one repeat, no page")
    parser.add_argument(
        "--json", type=Path, default=RESULTS, help=f"where the results go (default {RESULTS})"
    )
    parser.add_argument(
        "--page-only", action="store_true", help="regenerate the page from --json only"
    )
    options = parser.parse_args()

    if options.page_only:
        page.write(json.loads(options.json.read_text()))
        print(f"wrote {page.PAGE}")
        return
    if options.quick:
        options.sizes, options.repeats, options.docs_repeats, options.import_repeats = (
            [10, 50],
            1,
            1,
            3,
        )
        options.long_sizes = [100]
        if options.json == RESULTS:
            options.json = Path(tempfile.gettempdir()) / "synaptum-lite-bench-quick.json"

    drawing = not options.quick and set(options.only) == set(PARTS)
    if drawing and importlib.util.find_spec("matplotlib") is None:
        raise SystemExit(
            "matplotlib draws the page's plots and is not installed here: run with the bench "
            "group (or add `--with matplotlib` to `uv run`)"
        )
    started = time.perf_counter()
    postgres_url = os.environ.get("SYNAPTUM_BENCH_POSTGRES_URL") or None
    print("contenders:", flush=True)
    contenders, skipped = anchors.contenders(postgres_url)
    for contender in contenders:
        print(f"  {contender.label} (Python {contender.python_version})", flush=True)
    for message in skipped:
        print(f"  {message}", flush=True)
    arguments = sys.argv[1:]
    results: dict[str, Any] = {
        "command": " ".join([COMMAND, *arguments]),
        "date": datetime.date.today().isoformat(),
        "provenance": {**provenance.commit(), "machine": provenance.machine()},
        "settings": {
            "sizes": options.sizes,
            "long_sizes": options.long_sizes,
            "repeats": options.repeats,
            "docs_repeats": options.docs_repeats,
            "import_repeats": options.import_repeats,
        },
        "contenders": {c.key: {"label": c.label, "python": c.python_version} for c in contenders},
        "skipped": skipped,
    }

    raw: dict[str, Any] = {}
    results["raw"] = raw  # every repeat, as measured; the tables are made from it at the end
    took: dict[str, float] = {}
    results["parts_s"] = took  # where the sitting's time went, part by part

    @contextlib.contextmanager
    def part(name: str, header: str) -> Iterator[None]:
        print(header, flush=True)
        began = time.perf_counter()
        try:
            yield
        finally:
            took[name] = round(time.perf_counter() - began, 1)
            print(f"  ({name}: {took[name]:.0f} s)", flush=True)

    if any(c.store == "postgres" for c in contenders):
        results["postgres"] = postgres_settings(postgres_url)
    if "imports" in options.only:
        with part("imports", "import time"):
            raw["imports"] = imports.measure(contenders, options.import_repeats)
    if "runs" in options.only:
        header = f"durable runs, N = {options.sizes}, {options.repeats} repeat(s)"
        with (
            part("durable_runs", header),
            tempfile.TemporaryDirectory(prefix="synaptum-bench-") as scratch,
        ):
            raw["durable_runs"] = durable_runs.measure(
                contenders, options.sizes, options.repeats, Path(scratch), postgres_url, _log
            )
    if "long" in options.only:
        durable = provenance.durable_runs(raw["durable_runs"]) if "durable_runs" in raw else {}
        header = f"long runs, N = {options.long_sizes}, one repeat each"
        with (
            part("long_runs", header),
            tempfile.TemporaryDirectory(prefix="synaptum-bench-") as scratch,
        ):
            raw["long_runs"] = {
                "sizes": options.long_sizes,
                "contenders": long_runs.measure(
                    contenders, durable, options.long_sizes, Path(scratch), postgres_url, _log
                ),
            }
    if "runs" in options.only:
        with part("sync_cost", "what waiting for the disk costs a step"):
            raw["sync_cost"] = sync_cost.measure(repeats=1 if options.quick else 7)
    if "docs" in options.only:
        header = f"docs check against nbval and nbmake, {options.docs_repeats} repeat(s)"
        with part("docs_check", header):
            raw["docs_check"] = _docs_check(options.docs_repeats, 3 if options.quick else None)
    if "many" in options.only:
        with part("many_runs", "many runs in one store, and a worker pool"):
            raw["many_runs"] = many_runs.main(["--quick"] if options.quick else [])

    results["provenance"]["machine"]["load_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results["elapsed_s"] = round(time.perf_counter() - started, 1)
    options.json.parent.mkdir(parents=True, exist_ok=True)
    # the raw timings first: a table that cannot be made from them loses no measurement
    options.json.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    results = provenance.seal(results)
    options.json.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {options.json} after {results['elapsed_s']:.0f} s", flush=True)
    if drawing:
        page.write(results)
        print(f"wrote {page.PAGE}", flush=True)


def _docs_check(repeats: int, first: int | None) -> dict[str, object]:
    from benchmarks import docs_check

    try:
        return docs_check.measure(repeats, first=first)
    except SystemExit as exc:  # a notebook that does not run cleanly: say so, keep the rest
        print(f"  docs check not measured: {exc}", file=sys.stderr, flush=True)
        return {"failure": str(exc)}


def _log(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    main()
