"""What importing each contender costs: `python -c "<imports>"` against `python -c pass` under
the same interpreter, as subprocesses, alternating. Every repeat is kept (the raw timings); the
cost is the difference of their medians (`benchmarks.provenance`), and the interpreter's own
start-up is reported beside it.
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


def measure(contenders: list[Contender], repeats: int) -> dict[str, dict[str, object]]:
    report = {}
    for contender in contenders:
        if contender.key == "lite_postgres":
            continue  # the same package as `lite`
        statement = [contender.python, "-c", contender.imports]
        baseline = [contender.python, "-c", "pass"]
        _seconds(statement)  # bytecode and the disk cache warm, for both
        with_import, bare = [], []
        for repeat in range(repeats):
            pair = (statement, baseline) if repeat % 2 == 0 else (baseline, statement)
            first, second = (_seconds(command) for command in pair)
            with_import.append(first if repeat % 2 == 0 else second)
            bare.append(second if repeat % 2 == 0 else first)
        # every repeat as measured; `benchmarks.provenance.derive` makes the medians of them
        report[contender.key] = {
            "statement": contender.imports,
            "python_start_s": bare,
            "with_import_s": with_import,
        }
    return report
