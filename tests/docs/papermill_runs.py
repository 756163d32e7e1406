"""Running property notebooks as a learner does with papermill: by number, from their folder,
several at once, on the scripted double (`test_parametros.py`, `test_pruebalo.py`)."""

from __future__ import annotations

import multiprocessing
import os
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
    """Run `source` with `parameters` into `output`; papermill's error if a cell raised."""
    import papermill

    try:
        papermill.execute_notebook(
            str(source),
            str(output),
            parameters=parameters,
            cwd=str(PROPERTY_NOTEBOOKS),  # as the page's --cwd notebooks/propiedades
            progress_bar=False,
        )
    except papermill.PapermillExecutionError as error:
        return error
    return None


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
