"""How long verifying the notebooks takes: our docs check next to nbval and nbmake, in one run.

    uv run --group bench python benchmarks/docs_check.py [--repeats 7] [--copies 1]

    # in an environment with exactly CI's packages plus nbval, apart from the project's .venv:
    UV_PROJECT_ENVIRONMENT=/tmp/bench-env uv run --exact --group bench \
        python benchmarks/docs_check.py

Not a test. Both sides verify the same notebooks, each notebook in a fresh kernel, with the
model variables removed from the environment, and are timed as the command a person would
type (interpreter start-up included), alternating, `--repeats` times each:

- docs check: `python -m scripts.update_pages --check` (runs every notebook and compares its
  output with its page's *Lo que imprime* block);
- nbval: `python -m pytest --nbval` on copies of the same notebooks that carry their outputs
  (nbval compares against stored outputs, which our notebooks do not store), and
  `--nbval-lax`, which only checks that no cell raises.

- nbmake: `python -m pytest --nbmake` on the clean copies (it only checks that no cell
  raises), when nbmake is installed; with pytest-xdist installed too, also `-n 2` (two
  workers, the cores our check uses).

`--copies N` verifies every notebook N times over (as N differently named files), to see
how both sides grow towards the sixteen notebooks of the curriculum. `measure` is the same
measurement for `benchmarks.run`.

Prints the median and the fastest time of each, the ratios, and the time and CPU of each
notebook inside our runner. Our check runs several kernels at once (`KERNELS_AT_ONCE`, on
every core); nbval and nbmake run one notebook at a time, as pytest does without xdist.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from scripts.kernel import KERNELS_AT_ONCE, kernel_environment, run_notebooks_sync  # noqa: E402
from scripts.pages import NOTEBOOKS, mismatch, property_notebooks, read_notebook  # noqa: E402


def with_outputs(notebook: dict, run) -> dict:
    """A copy of `notebook` storing what each code cell printed, as nbval expects."""
    copy = json.loads(json.dumps(notebook))
    printed = {cell.index: cell.stdout for cell in run.cells}
    counter = 0
    for index, cell in enumerate(copy["cells"]):
        if cell["cell_type"] != "code":
            continue
        counter += 1
        cell["execution_count"] = counter
        text = printed.get(index, "")
        cell["outputs"] = (
            [{"output_type": "stream", "name": "stdout", "text": text}] if text else []
        )
    return copy


def timed(
    command: list[str], cwd: Path, env: dict[str, str], *, tries: int = 3
) -> tuple[float, float]:
    """The wall time of one successful run, and the CPU time of the command and every process
    it waited for (kernels, and the processes the notebooks start): on a busy machine the wall
    time says more about the neighbours than about the command, the CPU time less.

    A run that fails is run again, at most `tries` times in all, and said on stderr: nbmake's
    kernels sometimes lose a race for a TCP port ("Address already in use") on a busy machine;
    a failure that repeats stops the benchmark."""
    for attempt in range(1, tries + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        if result.returncode == 0:
            return elapsed, cpu
        failure = f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}"
        if attempt == tries:
            raise SystemExit(failure)
        print(f"run {attempt} of {tries} failed, timed again: {failure[:300]}", file=sys.stderr)
    raise AssertionError("unreachable")


def measure(
    repeats: int = 7,
    copies: int = 1,
    *,
    nbval: bool = True,
    baseline: Path | None = None,
    first: int | None = None,
) -> dict:
    """Wall times of each contender (`times`, one per repeat), the notebooks verified, the
    environment, and the time of each notebook inside our runner (`per_notebook`).

    `nbval=False` leaves nbval out; `baseline`, another checkout of this repository (e.g.
    `git archive` of an older commit), adds its docs check on the same notebooks, so a change
    to the runner is measured before and after in the same sitting; `first` verifies only the
    first that many notebooks (`benchmarks.run --quick`: the machinery, not the figures)."""
    notebooks = property_notebooks()[:first]
    env = kernel_environment()
    env.update(JUPYTER_PLATFORM_DIRS="1", PYDEVD_DISABLE_FILE_VALIDATION="1")
    # As on a machine that caches bytecode (the usual one): with PYTHONDONTWRITEBYTECODE set,
    # every kernel and every child process of every side would compile the package again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    # Two trees with the same notebooks and layout (comun.py one folder up, the notebooks'
    # helper modules beside them): clean copies for the docs check and nbmake, copies that
    # store their outputs for nbval. A notebook that does not pass our check (it raises, or
    # its page shows something else) is left out of every side, and named.
    runs = run_notebooks_sync(notebooks)
    scratch = Path(tempfile.mkdtemp(prefix="docs-check-bench-"))
    ours, theirs = scratch / "ours" / "propiedades", scratch / "nbval" / "propiedades"
    for folder in (ours, theirs):
        folder.mkdir(parents=True)
        shutil.copy(NOTEBOOKS / "comun.py", folder.parent / "comun.py")
        for helper in (NOTEBOOKS / "propiedades").glob("*.py"):
            shutil.copy(helper, folder / helper.name)
    names, checked_notebooks, left_out = [], [], {}
    for path, run in zip(notebooks, runs, strict=True):
        problem = "\n".join(run.problems()) or mismatch(path, read_notebook(path), run)
        if problem:
            left_out[path.stem] = problem
            continue
        checked_notebooks.append(path)
        for copy in range(copies):
            name = path.name if copies == 1 else f"{path.stem}_{copy}.ipynb"
            shutil.copy(path, ours / name)
            (theirs / name).write_text(json.dumps(with_outputs(read_notebook(path), run)))
            names.append(name)

    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    checked = [str(ours / name) for name in names]
    contenders = {
        "docs check": ([sys.executable, "-m", "scripts.update_pages", "--check", *checked], REPO),
    }
    if baseline is not None:
        contenders["docs check (baseline)"] = (
            [sys.executable, "-m", "scripts.update_pages", "--check", *checked],
            baseline,
        )
    if nbval:
        contenders["nbval --nbval"] = ([*pytest, "--nbval", *names], theirs)
        contenders["nbval --nbval-lax"] = ([*pytest, "--nbval-lax", *names], theirs)
    if importlib.util.find_spec("nbmake"):
        contenders["nbmake"] = ([*pytest, "--nbmake", *names], ours)
        if importlib.util.find_spec("xdist"):  # pytest-xdist, in the bench group
            # On as many cores as our check uses: two pytest workers, notebooks shared out.
            contenders["nbmake -n 2"] = ([*pytest, "--nbmake", "-n", "2", *names], ours)
    times: dict[str, list[float]] = {name: [] for name in contenders}
    cpu: dict[str, list[float]] = {name: [] for name in contenders}
    for repeat in range(repeats):
        order = list(contenders) if repeat % 2 == 0 else list(reversed(contenders))
        for name in order:
            command, cwd = contenders[name]
            wall, used = timed(command, cwd, env)
            times[name].append(wall)
            cpu[name].append(used)
    shutil.rmtree(scratch, ignore_errors=True)

    if importlib.util.find_spec("jupyterlab"):
        # With the lab group installed, jsonschema's format checkers come along (rfc3987-syntax
        # builds a grammar on import, about 1 s of CPU), and every side pays for them when it
        # imports nbformat at start-up: nbval, nbmake and our check (nbclient) alike.
        environment = "test + bench + lab (every side starts slower here than in CI's env)"
    else:
        environment = "test + bench, as CI's"
    if not names:
        raise SystemExit("no notebook passes the docs check:\n" + "\n".join(left_out.values()))
    last = run_notebooks_sync(checked_notebooks)
    return {
        "notebooks": [path.stem for path in checked_notebooks],
        "left_out": left_out,
        "copies": copies,
        "repeats": repeats,
        "environment": environment,
        "times": times,
        "cpu": cpu,
        "per_notebook": {run.path.stem: run.seconds for run in last},
        # CPU seconds of each notebook's kernel with the processes it waited for (None where
        # kernels are not forked by the warm parent, i.e. not on Linux).
        "per_notebook_cpu": {run.path.stem: run.cpu_seconds for run in last},
        # Our check runs this many kernels at once on `cores` cores; nbval and nbmake run one
        # notebook at a time (pytest without xdist).
        "kernels_at_once": KERNELS_AT_ONCE,
        "cores": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--without-nbval", action="store_true", help="time nbmake only")
    parser.add_argument(
        "--baseline", type=Path, help="another checkout whose docs check runs beside this one"
    )
    options = parser.parse_args()
    result = measure(
        options.repeats, options.copies, nbval=not options.without_nbval, baseline=options.baseline
    )
    times = result["times"]

    stems = ", ".join(result["notebooks"])
    print(f"{len(result['notebooks']) * options.copies} notebook(s): {stems} ×{options.copies}")
    print(f"{os.cpu_count()} cores, {options.repeats} runs each, wall time of the whole command")
    print(f"environment: {result['environment']}")
    for stem, problem in result["left_out"].items():
        print(f"left out, does not pass the docs check: {stem}\n  " + problem.splitlines()[0])
    print()
    print(f"{'':<24}{'median':>9}{'fastest':>10}{'CPU, median':>14}")
    for name, values in times.items():
        used = statistics.median(result["cpu"][name])
        print(f"{name:<24}{statistics.median(values):>8.2f}s{min(values):>9.2f}s{used:>13.2f}s")
    ours = statistics.median(times["docs check"])
    print()
    for name in times:
        if name != "docs check":
            wall = statistics.median(times[name]) / ours
            used = statistics.median(result["cpu"][name]) / statistics.median(
                result["cpu"]["docs check"]
            )
            print(f"{name} / docs check: {wall:.1f}× wall, {used:.1f}× CPU")
    print(
        f"\nour check runs {result['kernels_at_once']} kernels at once on {result['cores']} "
        "cores; nbval and nbmake, one notebook at a time"
    )
    print("\nper notebook, inside our runner (kernel start to last cell; CPU of its kernel):")
    for stem, seconds in result["per_notebook"].items():
        cpu = result["per_notebook_cpu"].get(stem)
        print(f"  {stem:<24}{seconds:6.2f} s" + (f"{cpu:8.2f} s CPU" if cpu is not None else ""))


if __name__ == "__main__":
    main()
