"""What importing each contender costs: `python -c "<imports>"` against `python -c pass` under
the same interpreter, as subprocesses, alternating. Every repeat is kept (the raw timings); the
cost is the difference of their medians (`benchmarks.provenance`), and the interpreter's own
start-up is reported beside it.

For ours, a third command alternates with them: importing only the standard-library modules
our import loads, as it loads them (`stdlib_modules`). That is the floor of our import: what
any package needs that uses those modules, before a line of its own runs.
"""

from __future__ import annotations

import os
import subprocess
import time

from benchmarks.anchors import Contender
from benchmarks.durable_runs import REPO

# Bytecode is cached for every contender, as on any installation: without this, a machine that
# sets PYTHONDONTWRITEBYTECODE would compile our (editable, source) package at every import
# and not the anchors' (compiled when installed).
_ENVIRONMENT = {
    name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"
}


def _seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=REPO, check=True, capture_output=True, env=_ENVIRONMENT)
    return time.perf_counter() - started


_LOADED = (
    "import sys\n"
    "before = set(sys.modules)\n"
    "{imports}\n"
    "print(' '.join(m for m in sys.modules if m not in before\n"
    "      and m.partition('.')[0] in sys.stdlib_module_names))\n"
)


def stdlib_modules(contender: Contender) -> list[str]:
    """The standard-library modules `contender.imports` loads, in the order it loads them."""
    done = subprocess.run(
        [contender.python, "-c", _LOADED.format(imports=contender.imports)],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
        env=_ENVIRONMENT,
    )
    return done.stdout.split()


def measure(contenders: list[Contender], repeats: int) -> dict[str, dict[str, object]]:
    report = {}
    for contender in contenders:
        if contender.key == "lite_postgres":
            continue  # the same package as `lite`
        commands = {
            "with_import_s": [contender.python, "-c", contender.imports],
            "python_start_s": [contender.python, "-c", "pass"],
        }
        stdlib = stdlib_modules(contender) if contender.key == "lite" else []
        if stdlib:
            commands["stdlib_s"] = [contender.python, "-c", "import " + ", ".join(stdlib)]
        for command in commands.values():
            _seconds(command)  # bytecode and the disk cache warm, for every side
        times: dict[str, list[float]] = {name: [] for name in commands}
        names = list(commands)
        for repeat in range(repeats):
            shift = repeat % len(names)  # each side goes first in turn
            for name in names[shift:] + names[:shift]:
                times[name].append(_seconds(commands[name]))
        # every repeat as measured; `benchmarks.provenance.derive` makes the medians of them
        report[contender.key] = {"statement": contender.imports, **times}
        if stdlib:
            report[contender.key]["stdlib_modules"] = stdlib
    return report
