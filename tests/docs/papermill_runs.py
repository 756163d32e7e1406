"""Running property notebooks as a learner does with papermill: by number, from their folder,
several at once, on the scripted double (`test_parametros.py`, `test_pruebalo.py`).

One thing differs from the learner's command: the kernel's sockets. jupyter_client gives a TCP
kernel five ports it found free by binding and releasing them, and the kernel binds them again
a moment later; with four kernels starting at once, another one can take a port in between, and
that kernel dies with `ZMQError: Address already in use` before it answers (2 in 400 starts, 8
at a time, on this machine; once in CI). Here each kernel's sockets are files in its run's own
folder (IPC transport, as in the docs check): nothing to find, nothing to share. The notebook,
the kernel and papermill are the learner's; `test_parametros.py` also runs the page's own
papermill command, as typed, over TCP.

And what a notebook leaves: with `carpeta = None` it makes its folder with `tempfile.mkdtemp()`,
and papermill's kernel is stopped without cleaning anything. Each kernel's `TMPDIR` is a folder
of its run's own, and each run's folder is in pytest's temporary folder (`in_the_session`), which
pytest clears itself, keeping the last three sessions'.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest

from scripts.kernel import MODEL_VARIABLE_PREFIXES
from scripts.pages import PROPERTY_NOTEBOOKS

T = TypeVar("T")
R = TypeVar("R")


def notebook(number: str) -> Path:
    """The property notebook whose name starts with `number` ("06")."""
    (path,) = PROPERTY_NOTEBOOKS.glob(f"{number}_*.ipynb")
    return path


def execute(source: Path, output: Path, parameters: dict[str, Any]) -> Any:
    """Run `source` with `parameters` into `output`; papermill's error if a cell raised.

    The kernel's sockets are files next to `output` (`output`'s folder is the run's own), and
    so is its temporary folder: `tmp`, its `TMPDIR`, which its child processes inherit."""
    import papermill
    from jupyter_client.manager import AsyncKernelManager

    temporary = output.parent / "tmp"
    temporary.mkdir(exist_ok=True)

    class KernelOverIpc(AsyncKernelManager):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(transport="ipc", ip=str(output.parent / "kernel"), **kwargs)

        async def start_kernel(self, **kwargs: Any) -> None:
            kwargs["env"] = {**kwargs.get("env", os.environ), "TMPDIR": str(temporary)}
            await super().start_kernel(**kwargs)

    try:
        papermill.execute_notebook(
            str(source),
            str(output),
            parameters=parameters,
            cwd=str(PROPERTY_NOTEBOOKS),  # as the page's --cwd notebooks/propiedades
            progress_bar=False,
            kernel_manager_class=KernelOverIpc,
        )
    except papermill.PapermillExecutionError as error:
        return error
    return None


def in_the_session(
    function: Callable[[T, Path], R], factory: pytest.TempPathFactory, name: str
) -> Callable[[T], R]:
    """`function(item, root)` with `root` a new folder of pytest's for the runs' folders."""
    return functools.partial(function, root=factory.mktemp(name))


def run_folder(root: Path, prefix: str) -> Path:
    """A new folder for one run, in `root`: any number of processes can ask at once."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=root))


def on_the_double(function: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """`function` over `items`, four processes at a time, without the variables that pick a
    real model (the notebooks answer from their scripts, as in the docs check)."""
    with pytest.MonkeyPatch.context() as environment:
        for name in list(os.environ):
            if name.startswith(MODEL_VARIABLE_PREFIXES):
                environment.delenv(name)
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=4, mp_context=spawn) as pool:
            return list(pool.map(function, items))
