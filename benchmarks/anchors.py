"""The contenders of the durable-run benchmark, and the environments the anchors run in.

Each anchor gets a virtual environment of its own under the cache folder
(`$SYNAPTUM_BENCH_CACHE`, by default `~/.cache/synaptum-lite/bench/`), created on first use
with pinned versions from PyPI and reused while its pins are unchanged. Nothing of theirs
enters this project's lock file. An anchor that cannot be had (no Python 3.13, no network)
is skipped with a message saying why and how to get it.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(
    os.environ.get("SYNAPTUM_BENCH_CACHE", Path.home() / ".cache" / "synaptum-lite" / "bench")
)
PYTHON_313 = Path(
    os.environ.get("SYNAPTUM_BENCH_PYTHON313", Path.home() / ".pyenv/versions/3.13.0/bin/python")
)


@dataclass(frozen=True)
class Contender:
    """One side of the comparison: the module of `benchmarks/contenders/` that drives it, the
    interpreter that runs it, and what its import costs (`imports`, a Python statement)."""

    key: str
    label: str
    module: str
    python: str
    python_version: str
    imports: str
    store: str = "sqlite"  # or "postgres"


@dataclass(frozen=True)
class Environment:
    name: str
    base: Path  # the interpreter the environment is made from
    requirements: tuple[str, ...]

    @property
    def folder(self) -> Path:
        return CACHE / self.name

    @property
    def python(self) -> Path:
        return self.folder / "bin" / "python"


SYNAPTUM = Environment("synaptum-1.0.0rc6", PYTHON_313, ("synaptum==1.0.0rc6",))
LANGGRAPH = Environment(
    "langgraph-1.2.24",
    Path(getattr(sys, "_base_executable", sys.executable)),  # the Python our side runs on
    ("langgraph==1.2.24", "langgraph-checkpoint-sqlite==3.1.2"),
)
DBOS = Environment(
    "dbos-3.4.0",
    Path(getattr(sys, "_base_executable", sys.executable)),  # the Python our side runs on
    ("dbos==3.4.0",),
)


class Unavailable(Exception):
    """An anchor that cannot run here; the message says why and what to do."""


def ensure(environment: Environment) -> Path:
    """The interpreter of `environment`, creating the environment when it is missing or its
    pins changed. Raises `Unavailable`."""
    stamp = environment.folder / "requirements.txt"
    wanted = "\n".join(environment.requirements) + "\n"
    if environment.python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return environment.python
    if not environment.base.exists():
        raise Unavailable(
            f"{environment.name}: needs the interpreter {environment.base}, which is missing "
            "(set SYNAPTUM_BENCH_PYTHON313 to a Python 3.13)"
        )
    print(f"  creating {environment.folder} ({', '.join(environment.requirements)})", flush=True)
    shutil.rmtree(environment.folder, ignore_errors=True)
    steps = (
        [str(environment.base), "-m", "venv", str(environment.folder)],
        [
            str(environment.python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            *environment.requirements,
        ],
    )
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            shutil.rmtree(environment.folder, ignore_errors=True)
            raise Unavailable(
                f"{environment.name}: `{' '.join(step)}` failed:\n{done.stderr.strip()[-2000:]}"
            )
    stamp.write_text(wanted)
    return environment.python


def contenders(postgres_url: str | None) -> tuple[list[Contender], list[str]]:
    """Ours first, then every anchor that can run here; and a message per one skipped."""
    ours = Contender(
        "lite",
        "synaptum_lite · SQLite",
        "lite",
        sys.executable,
        platform.python_version(),
        # What a program of ours imports, the SQLite store included, as LangGraph's statement
        # includes its SQLite checkpointer: the package loads the store on first use, so a
        # bare `import synaptum_lite` would leave sqlite3 out and flatter us.
        "from synaptum_lite import Agent, Session, SqliteCheckpointer",
    )
    found, skipped = [ours], []
    if postgres_url:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            skipped.append(
                "synaptum_lite · PostgreSQL: SYNAPTUM_BENCH_POSTGRES_URL is set but psycopg is not "
                "installed here (run with the postgres extra)"
            )
        else:
            found.append(
                Contender(
                    "lite_postgres",
                    "synaptum_lite · PostgreSQL",
                    "lite_postgres",
                    sys.executable,
                    ours.python_version,
                    ours.imports,
                    store="postgres",
                )
            )
    for environment, key, label, module, imports in (
        (
            SYNAPTUM,
            "synaptum",
            "Synaptum 1.0.0rc6 · SQLite",
            "upstream",
            "import synaptum, synaptum.testing",
        ),
        (
            LANGGRAPH,
            "langgraph",
            "LangGraph 1.2.24 · SqliteSaver",
            "langgraph_sqlite",
            "import langgraph.graph, langgraph.prebuilt, langgraph.checkpoint.sqlite",
        ),
        (DBOS, "dbos", "DBOS 3.4.0 · SQLite", "dbos_sqlite", "import dbos"),
    ):
        try:
            python = ensure(environment)
        except Unavailable as exc:
            skipped.append(f"{label}: skipped. {exc}")
            continue
        python_version = subprocess.run(
            [str(python), "-c", "import platform; print(platform.python_version())"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        found.append(Contender(key, label, module, str(python), python_version, imports))
    return found, skipped
