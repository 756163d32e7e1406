"""The operator's command line, `synaptum-lite`: list runs, read one, resolve what waits, move
runs between stores. `main` is the command; `run` is the same, awaited, for a notebook.

It holds 1,310 lines (`wc -l` of its modules).
"""

from .main import main, run

__all__ = ["main", "run"]
