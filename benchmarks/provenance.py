"""Where the benchmark's figures come from, and the check that they still do.

`benchmarks.run` saves, in `results/latest.json`:

- `raw`: every repeat of every measurement, as measured (the raw timings);
- `provenance`: the commit the code was at, the files under measure that differed from it,
  the machine (CPU model, cores, memory, system, Python, load average at the start and the
  end), and the sha256 of the raw timings (`raw_sha256`, over `canonical(raw)`);
- the tables the page shows (`imports`, `durable_runs`, `long_runs`, `sync_cost`,
  `docs_check`, `many_runs`): medians, ratios' inputs and exponents, made from `raw` by
  `derive` here and nowhere else.

`problems(results)` recomputes both: a raw timing edited without its digest, and a table edited
without its raw timings, each fail naming what disagrees (tests/docs/test_rendimiento.py).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.workload import growth_exponent, log_log_slope

REPO = Path(__file__).resolve().parent.parent
#: What a measurement runs: a change here that is not committed is named in the provenance.
MEASURED = ("synaptum_lite", "benchmarks", "scripts", "notebooks", "pyproject.toml", "uv.lock")
#: The durable-run figures that are medians over the repeats of one N.
DURABLE_MEDIANS = (
    "bytes",
    "cpu_per_step_ms",
    "closed_run_ms",
    "first_call_after_kill_ms",
    "repeated_tools_after_kill",
    "repeated_model_calls_after_kill",
    "race_duplicate_tools",
    "race_duplicate_model_calls",
)
MANY_MEASURES = ("open_ms", "return_closed_ms", "list_open_ms")
REMEASURE = "uv run --group bench python -m benchmarks.run"


# ── the provenance ───────────────────────────────────────────────────────────────────────────


def canonical(raw: Any) -> bytes:
    """The bytes the digest is taken of: sorted keys, no spaces, UTF-8."""
    return json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest(raw: Any) -> str:
    return hashlib.sha256(canonical(raw)).hexdigest()


def _git(*arguments: str) -> str:
    done = subprocess.run(
        ["git", *arguments], cwd=REPO, capture_output=True, text=True, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else ""


def commit() -> dict[str, Any]:
    """The commit checked out, and the measured files that differ from it."""
    changed = _git("status", "--porcelain", "--untracked-files=no", "--", *MEASURED)
    return {
        "commit": _git("rev-parse", "HEAD") or "unknown",
        "uncommitted": sorted(line[3:] for line in changed.splitlines() if line.strip()),
    }


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def machine() -> dict[str, Any]:
    """The machine as the measurement starts (`load_at_end` is added when it ends)."""
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in _read("/proc/cpuinfo").splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown",
    )
    memory = next(
        (
            line.split()[1]
            for line in _read("/proc/meminfo").splitlines()
            if line.startswith("MemTotal")
        ),
        "0",
    )
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory_gib": round(int(memory) / 2**20, 1),
        "system": f"{platform.system()} {platform.release()}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "load_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def seal(results: dict[str, Any]) -> dict[str, Any]:
    """`results` with its tables made from its raw timings and the digest of those."""
    sealed = {key: value for key, value in results.items() if key not in TABLES}
    sealed.update(derive(results["raw"]))
    sealed["provenance"] = {**results["provenance"], "raw_sha256": digest(results["raw"])}
    return sealed


# ── the tables, from the raw timings ─────────────────────────────────────────────────────────


def _median(values: list[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


def durable_runs(raw: dict[str, Any]) -> dict[str, Any]:
    """Per contender: a row of medians per N that has repeats, and the growth exponent."""
    report = {}
    for key, contender in raw.items():
        rows = []
        for n, taken in contender["samples"].items():
            if not taken:
                continue
            row: dict[str, Any] = {"n": int(n), "repeats": len(taken)}
            for name in DURABLE_MEDIANS:
                row[name] = _median([sample[name] for sample in taken])
            row["race_outcomes"] = [sample["race_outcomes"] for sample in taken]
            rows.append(row)
        report[key] = {
            "label": contender["label"],
            "python": contender["python"],
            "rows": rows,
            "growth_exponent": growth_exponent(rows) if len(rows) >= 2 else None,
            "failure": contender["failure"],
        }
    return report


def imports(raw: dict[str, Any]) -> dict[str, Any]:
    """The medians of each side, and the cost: the difference of the medians."""
    report = {}
    for key, item in raw.items():
        bare, with_import = (
            statistics.median(item[k]) for k in ("python_start_s", "with_import_s")
        )
        report[key] = {
            "statement": item["statement"],
            "python_start_ms": bare * 1000,
            "with_import_ms": with_import * 1000,
            "import_ms": max(with_import - bare, 0.0) * 1000,
        }
        if item.get("stdlib_s"):  # the floor: the standard library our import loads, alone
            stdlib = statistics.median(item["stdlib_s"])
            report[key]["stdlib_modules"] = len(item["stdlib_modules"])
            report[key]["stdlib_ms"] = max(stdlib - bare, 0.0) * 1000
    return report


def sync_cost(raw: dict[str, Any]) -> dict[str, Any]:
    return {
        "n": raw["n"],
        "repeats": raw["repeats"],
        "step_cpu_ms": {key: statistics.median(v) for key, v in raw["step_cpu_ms"].items()},
        "commits_per_step": statistics.median(raw["commits_per_step"]),
        "commit_cpu_ms": {key: statistics.median(v) for key, v in raw["commit_cpu_ms"].items()},
    }


def docs_check(raw: dict[str, Any]) -> dict[str, Any]:
    """The median and the fastest of each command's wall times, in seconds."""
    if "failure" in raw:
        return {"failure": raw["failure"]}
    return {
        "median_s": {name: statistics.median(values) for name, values in raw["times"].items()},
        "fastest_s": {name: min(values) for name, values in raw["times"].items()},
    }


def many_runs_row(row: dict[str, Any]) -> dict[str, Any]:
    """One size of one store: the medians of its samples, in ms."""
    return {
        "runs": row["runs"],
        **{
            name: round(statistics.median(row[name.removesuffix("_ms") + "_s"]) * 1000, 3)
            for name in MANY_MEASURES
        },
        "fill_s": round(row["fill_s"], 1),
    }


def pool(raw: dict[str, Any]) -> dict[str, Any]:
    """The worker pool: its two drains, the speedup, and the wall time per run of each."""
    one, four = raw["one_process_s"], raw["four_processes_s"]
    return {
        **raw,
        "one_process_s": round(one, 2),
        "four_processes_s": round(four, 2),
        "speedup": round(one / four, 2),
        "one_process": {
            **raw["one_process"],
            "wall_ms_per_run": round(one / raw["runs"] * 1000, 2),
        },
        "four_processes": {
            **raw["four_processes"],
            "wall_ms_per_run": round(four / raw["runs"] * 1000, 2),
        },
    }


def many_runs(raw: dict[str, Any]) -> dict[str, Any]:
    report = {key: value for key, value in raw.items() if key not in ("sqlite", "postgres", "pool")}
    for store in ("sqlite", "postgres"):
        if store not in raw:
            continue
        rows = [many_runs_row(row) for row in raw[store]["rows"]]
        report[store] = {
            "rows": rows,
            "exponents": {
                name: round(log_log_slope([(r["runs"], r[name]) for r in rows]), 2)
                for name in MANY_MEASURES
            },
        }
        if "file_bytes" in raw[store]:
            report[store]["file_mb"] = round(raw[store]["file_bytes"] / 1e6, 1)
    if "pool" in raw:
        report["pool"] = pool(raw["pool"])
    return report


SECTIONS = {
    "imports": imports,
    "durable_runs": durable_runs,
    "sync_cost": sync_cost,
    "docs_check": docs_check,
    "many_runs": many_runs,
}


#: The long-run figures, measured or extrapolated at each N.
LONG_FIGURES = ("bytes", "cpu_per_step_ms", "closed_run_ms", "first_call_after_kill_ms")


def long_runs(raw: dict[str, Any], durable: dict[str, Any] | None) -> dict[str, Any]:
    """Per contender, a row per long N: measured, or extrapolated (and marked so) with the
    exponent over the largest N measured (`long_runs.exponent`), the durable-run rows'
    medians included; and
    each figure's exponent. The memory a resume adds is measured only in long runs."""
    from benchmarks.long_runs import exponent, predict

    report = {}
    for key, contender in raw["contenders"].items():
        measured = contender["rows"]
        shorter = (durable or {}).get(key, {}).get("rows", [])
        points = {name: [(r["n"], r[name]) for r in shorter + measured] for name in LONG_FIGURES}
        points["memory_kb"] = [(r["n"], _memory(r)) for r in measured if _memory(r) is not None]
        rows = []
        for n in raw["sizes"]:
            taken = next((r for r in measured if r["n"] == n), None)
            if taken is not None:
                row = {"n": n, "extrapolated": False, **{m: taken[m] for m in LONG_FIGURES}}
                row["memory_kb"] = _memory(taken)
                row["journal_bytes"] = taken["journal_bytes"]
                row["resume_floor_ms"] = taken.get("resume_floor_ms")
            else:
                row = {"n": n, "extrapolated": True}
                row.update({name: predict(points[name], n) for name in points})
                row["journal_bytes"] = row["resume_floor_ms"] = None
            rows.append(row)
        report[key] = {
            "label": contender["label"],
            "rows": rows,
            "exponents": {name: exponent(values) for name, values in points.items()},
            "stopped": contender["stopped"],
        }
    return report


def _memory(row: dict[str, Any]) -> float | None:
    """What the resuming process's peak memory grew by while it resumed, in KiB."""
    if row.get("peak_memory_kb") is None or row.get("memory_before_kb") is None:
        return None
    return float(row["peak_memory_kb"] - row["memory_before_kb"])


#: Every table `derive` makes: one per section, and the long runs (made with the durable runs).
TABLES = (*SECTIONS, "long_runs")


def derive(raw: dict[str, Any]) -> dict[str, Any]:
    """Every table of the page that `raw` has the timings of."""
    made = {name: table(raw[name]) for name, table in SECTIONS.items() if raw.get(name)}
    if raw.get("long_runs"):
        made["long_runs"] = long_runs(raw["long_runs"], made.get("durable_runs"))
    # through JSON, as the tables are saved: a float reads back the same, a key is a string
    return json.loads(json.dumps(made, ensure_ascii=False))


# ── the check ────────────────────────────────────────────────────────────────────────────────


def _differences(path: str, saved: Any, made: Any, found: list[str]) -> None:
    if isinstance(saved, dict) and isinstance(made, dict):
        for key in [*saved, *(k for k in made if k not in saved)]:
            where = f"{path}.{key}"
            if key not in made:
                found.append(f"{where}: in latest.json, but its raw timings make no such figure")
            elif key not in saved:
                found.append(
                    f"{where}: missing from latest.json; its raw timings give {_show(made[key])}"
                )
            else:
                _differences(where, saved[key], made[key], found)
    elif isinstance(saved, list) and isinstance(made, list) and len(saved) == len(made):
        for number, (a, b) in enumerate(zip(saved, made, strict=True)):
            _differences(f"{path}[{number}]", a, b, found)
    elif not _same(saved, made):
        found.append(f"{path}: latest.json says {_show(saved)}, its raw timings give {_show(made)}")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(a == b) and type(a) is type(b)


def problems(results: dict[str, Any], name: str = "benchmarks/results/latest.json") -> list[str]:
    """What in `results` does not come from its raw timings; empty when everything does."""
    raw, provenance = results.get("raw"), results.get("provenance") or {}
    if not raw:
        return [f"{name} has no raw timings (`raw`): nothing to recompute its tables from"]
    found = []
    recorded, computed = provenance.get("raw_sha256"), digest(raw)
    if recorded != computed:
        found.append(
            f"{name}: the raw timings hash to sha256 {computed}, the provenance records "
            f"{recorded}: a raw timing was changed after it was measured; measure again with "
            f"`{REMEASURE}`"
        )
    for field in ("commit", "machine"):
        if not provenance.get(field):
            found.append(f"{name}: the provenance does not say the {field} it was measured on")
    made = derive(raw)
    for section in TABLES:
        if section in made or section in results:
            differences: list[str] = []
            _differences(section, results.get(section), made.get(section), differences)
            found += [f"{name}: {line}" for line in differences]
    return found


def main() -> None:
    """`python -m benchmarks.provenance [FILE]`: say what does not come from its raw timings."""
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "benchmarks/results/latest.json"
    found = problems(json.loads(path.read_text(encoding="utf-8")), str(path))
    for line in found:
        print(line, file=sys.stderr)
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
