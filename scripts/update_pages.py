"""Rewrite every property page's *Lo que imprime* block from what its notebook really prints.

    uv run python -m scripts.update_pages            # run the notebooks, rewrite the blocks
    uv run python -m scripts.update_pages --check    # run them, change nothing, fail on drift
    uv run python -m scripts.update_pages notebooks/propiedades/02_durabilidad.ipynb

Run on every notebook, it also rewrites the package's layout (each folder's size, and the tree
on Conceptos: `scripts/layout.py`) and the facts about the kit on the home page, *Probar* and
the README (which notebooks kill a process, run in the browser, how long each takes to read
and to run: `scripts/hechos.py`; run times are recorded only when every notebook ran and
passed); run on named notebooks, it touches only them.

Each notebook runs in a fresh kernel (the same runner as `tests/docs`), without the variables
that select a real model. A notebook that fails is reported and left untouched. Updating also
stores each notebook in its committed form: no outputs, no execution counts, no volatile
metadata. Authors never type an expected output by hand.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scripts import kernel_zygote

if __name__ == "__main__":
    # The warm parent imports ipykernel while this process imports nbclient, below.
    kernel_zygote.start_early(kernel_zygote.check_environment())

from scripts import hechos, layout  # noqa: E402
from scripts.kernel import run_notebooks_sync  # noqa: E402
from scripts.pages import (  # noqa: E402
    PROPERTY_NOTEBOOKS,
    PageFormatError,
    dumps,
    expected_output_of,
    mismatch,
    property_notebooks,
    read_notebook,
    relative,
    stored_form,
    with_expected,
)


def _named(path: Path) -> Path:
    """A notebook given by path, or by name from notebooks/propiedades/ (`02_durabilidad`)."""
    if not path.exists():
        by_name = PROPERTY_NOTEBOOKS / path.with_suffix(".ipynb").name
        if by_name.exists():
            return by_name
    return path.resolve()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.update_pages", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "notebooks",
        nargs="*",
        type=Path,
        help="paths or names (02_durabilidad); default: every property notebook",
    )
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if a page disagrees"
    )
    options = parser.parse_args(argv)
    paths = [_named(path) for path in options.notebooks] or property_notebooks()

    failed = 0
    seconds: dict[str, float] = {}
    for path, run in zip(paths, run_notebooks_sync(paths), strict=True):
        seconds[path.stem] = run.seconds
        notebook = read_notebook(path)
        name = f"{relative(path)} ({run.seconds:.2f} s)"
        if run.problems():
            failed += 1
            print(f"FAILED  {name}\n", file=sys.stderr)
            print(mismatch(path, notebook, run), file=sys.stderr)
            continue
        if options.check:
            report = mismatch(path, notebook, run)
            stored = path.read_text(encoding="utf-8") == dumps(stored_form(notebook))
            if report:
                failed += 1
                print(f"DIFFERS {name}\n\n{report}\n", file=sys.stderr)
            elif not stored:
                failed += 1
                print(f"UNCLEAN {name}: stored with outputs or volatile metadata", file=sys.stderr)
            else:
                print(f"ok      {name}")
            continue
        try:
            updated = dumps(stored_form(with_expected(notebook, expected_output_of(run))))
        except PageFormatError as error:
            failed += 1
            print(f"FAILED  {name}: {error}", file=sys.stderr)
            continue
        if updated == path.read_text(encoding="utf-8"):
            print(f"same    {name}")
        else:
            path.write_text(updated, encoding="utf-8")
            print(f"updated {name}")
    # the package's layout: each folder's size, and the tree on Conceptos (scripts/layout.py);
    # only when every notebook was run: naming notebooks touches only them
    for stale in layout.write(check=options.check) if not options.notebooks else []:
        failed += options.check
        print(f"{'DIFFERS' if options.check else 'updated'} {stale} (the package's layout)")
    # the facts about the kit (scripts/hechos.py): the run times are recorded from this run
    # only when every notebook ran and passed; --check compares the pages with the recorded
    # times and never with a clock
    if not options.notebooks:
        if not options.check and not failed and hechos.record_times(seconds):
            print(f"updated {relative(hechos.TIMES)} (each notebook's run time, as a class)")
        for stale in hechos.write(check=options.check):
            failed += options.check
            print(f"{'DIFFERS' if options.check else 'updated'} {stale} (facts about the kit)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
