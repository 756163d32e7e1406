"""The docs check itself: that it fails when it should, and says where."""

from __future__ import annotations

import asyncio
import difflib
import json
import sys
import time
from pathlib import Path

import nbformat
import pytest

from scripts import kernel, kernel_zygote, update_pages
from scripts.kernel import (
    CellRun,
    NotebookRun,
    check_environment,
    kernel_environment,
    run_notebooks,
)
from scripts.normalization import NORMALIZATION_RULES
from scripts.pages import (
    NOTEBOOKS,
    REPO,
    checked_name,
    dumps,
    expected_block,
    mismatch,
    read_notebook,
    stored_form,
    unknown_names,
    with_expected,
)
from scripts.site import rendered_block, start_build
from tests.bounds import HANG

NOTEBOOK_02 = NOTEBOOKS / "propiedades" / "02_durabilidad.ipynb"


def page(tmp_path: Path, name: str, *code: str, expected: str = "") -> Path:
    """A small notebook with the shape of a page."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    notebook.cells = [
        nbformat.v4.new_markdown_cell(
            f"# 99 · {name}\n\n## Lo que imprime\n\n```text\n{expected}```"
        ),
        *(nbformat.v4.new_code_cell(source) for source in code),
    ]
    for number, cell in enumerate(notebook.cells):
        cell.id = f"celda-{number}"
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(notebook, path)
    return path


#: What every notebook of the kit does with `carpeta = None`, in the kernel and in a child
#: process it starts: a temporary folder with a file in it, never removed (the kernel is killed).
LEAVES_TEMPORARY_FOLDERS = (
    "import subprocess, sys, tempfile\n"
    "from pathlib import Path\n"
    "mia = Path(tempfile.mkdtemp())\n"
    "(mia / 'runs.db').write_text('x')\n"
    "hijo = [sys.executable, '-c', 'import tempfile; print(tempfile.mkdtemp())']\n"
    "del_hijo = subprocess.run(hijo, capture_output=True, text=True, check=True).stdout\n"
    "print(mia)\n"
    "print(del_hijo.strip())"
)


@pytest.fixture(scope="module")
def small_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, NotebookRun]:
    """Tiny notebooks run at once, with model variables set in the caller's environment.

    Five run in spawned kernels (the portable path) and three in kernels forked from one warm
    parent (the Linux path, which the page check uses), both at the same time.
    """
    spawned, forked = tmp_path_factory.mktemp("spawned"), tmp_path_factory.mktemp("forked")
    spawned_pages = [
        page(
            spawned,
            "entorno",
            "import os\n"
            "print(sorted(k for k in os.environ if k.startswith(('SYNAPTUM_', 'AXONIUM_'))))\n"
            f"print(os.getcwd() == {str(spawned)!r})",
        ),
        page(
            spawned,
            "falla",
            "print('antes')",
            "raise ValueError('el saldo no cuadra')",
            "print('nunca')",
        ),
        page(spawned, "ruido", "import sys\nprint('a', file=sys.stderr)", "1 + 1"),
        page(spawned, "muere", "print('hasta aquí', flush=True)", "import os\nos._exit(3)"),
        page(spawned, "temporal", LEAVES_TEMPORARY_FOLDERS),
    ]
    leaves_a_mark = "import builtins\nimport synaptum_lite\nbuiltins.marca = 1\nprint('marcado')"
    looks_for_it = (
        "import builtins, os, sys\n"
        "print(hasattr(builtins, 'marca'), 'synaptum_lite' in sys.modules)\n"
        f"print(os.getcwd() == {str(forked)!r}, sys.path.count({str(REPO / 'scripts')!r}))"
    )
    forked_pages = [
        page(forked, "marca", leaves_a_mark),
        page(forked, "busca", looks_for_it),
        page(forked, "temporal-forked", LEAVES_TEMPORARY_FOLDERS),
    ]

    async def both() -> list[list[NotebookRun]]:
        return await asyncio.gather(
            run_notebooks(spawned_pages, fork=False), run_notebooks(forked_pages, fork=True)
        )

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SYNAPTUM_BASE_URL", "http://127.0.0.1:9")
        patch.setenv("AXONIUM_CLIENT_ID", "nadie")
        runs = [run for group in asyncio.run(both()) for run in group]
    return {run.path.stem: run for run in runs}


def test_forked_kernels_are_fresh_and_share_nothing(small_runs) -> None:
    assert small_runs["marca"].printed == "marcado\n"
    assert small_runs["busca"].problems() == []
    assert small_runs["busca"].printed == "False False\nTrue 0\n"


def test_kernels_run_in_the_notebook_folder_without_model_variables(small_runs) -> None:
    run = small_runs["entorno"]
    assert run.problems() == []
    assert run.printed == "[]\nTrue\n"


def test_a_notebook_that_raises_fails_and_shows_the_traceback(small_runs) -> None:
    run = small_runs["falla"]
    assert run.printed == "antes\n"  # the cells after the failure never ran
    [problem] = run.problems()
    assert problem.startswith('cell 2 (id "celda-2") raised:')
    assert "ValueError: el saldo no cuadra" in problem
    report = mismatch(run.path, read_notebook(run.path), run)
    assert "cannot be checked: its run failed" in report and "el saldo no cuadra" in report


def test_stderr_and_shown_values_are_problems_not_output(small_runs) -> None:
    problems = small_runs["ruido"].problems()
    assert len(problems) == 2
    assert "wrote to stderr" in problems[0]
    assert "shows a value (execute_result)" in problems[1]


def test_a_kernel_that_dies_fails_its_notebook(small_runs) -> None:
    run = small_runs["muere"]
    # What the first cell printed may die with the kernel, unsent: os._exit flushes nothing.
    assert run.printed in ("", "hasta aquí\n")
    [problem] = run.problems()
    assert problem.startswith("the kernel of muere.ipynb exited with code 3")


@pytest.mark.parametrize("name", ["temporal", "temporal-forked"])
def test_what_a_notebook_leaves_in_its_temporary_folder_is_removed_with_its_kernel(
    small_runs, name: str
) -> None:
    run = small_runs[name]
    assert run.problems() == []
    folders = [Path(line) for line in run.printed.splitlines()]
    assert len(folders) == 2  # the kernel's own and its child's
    assert all(folder.is_absolute() for folder in folders)
    left = [folder for folder in folders if folder.exists()]
    assert left == [], f"{name}.ipynb left {left} after its kernel ended"


def test_the_kernel_environment_drops_every_model_variable() -> None:
    env = kernel_environment({"SYNAPTUM_MODEL": "m", "AXONIUM_X": "1", "PATH": "/bin"})
    assert env == {"PATH": "/bin"}


def fake_run(path: Path, *stdout: str) -> NotebookRun:
    cells = [
        CellRun(index=4 + n, cell_id=f"c{n}", source="", stdout=text)
        for n, text in enumerate(stdout)
    ]
    return NotebookRun(path, cells, seconds=0.0)


def test_a_different_character_fails_with_a_diff_naming_page_notebook_and_cell() -> None:
    notebook = read_notebook(NOTEBOOK_02)
    block = expected_block(notebook).text
    lines = block.splitlines(keepends=True)
    changed = lines[:6] + [lines[6].replace("herramienta ×1", "herramienta ×2")] + lines[7:]
    report = mismatch(
        NOTEBOOK_02, notebook, fake_run(NOTEBOOK_02, "".join(lines[:5]), "".join(changed[5:]))
    )
    assert report is not None
    assert "Page «02 · Matar el proceso" in report
    assert "(propiedades/02_durabilidad/)" in report
    assert "notebooks/propiedades/02_durabilidad.ipynb" in report
    assert 'First difference at output line 7, printed by cell 5 (id "c1")' in report
    assert "-               modelo ×1 · herramienta ×1\n" in report
    assert "+               modelo ×1 · herramienta ×2\n" in report
    assert "python -m scripts.update_pages" in report


def test_the_update_command_on_named_notebooks_leaves_the_package_layout_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the layout (each folder's size, the tree on Conceptos) is rewritten by the run of every
    # notebook, never by one that names a few: others may be changing the package meanwhile
    called = []
    monkeypatch.setattr(update_pages.layout, "write", lambda check: called.append(check) or [])
    path = page(tmp_path, "uno", "print(1)", expected="1\n")
    assert update_pages.main([str(path)]) == 0
    assert update_pages.main(["--check", str(path)]) == 0
    assert called == []


def test_the_update_command_rewrites_exactly_the_changed_character(tmp_path: Path) -> None:
    printed = "\n  1ª vuelta    modelo ×1\n  fin\n"
    code = ("print()\nprint('  1ª vuelta    modelo ×1')", "print('  fin')")
    right = dumps(stored_form(read_notebook(page(tmp_path, "vueltas", *code, expected=printed))))
    broken = right.replace("modelo ×1", "modelo ×7", 1)  # the block comes before the code
    path = tmp_path / "vueltas.ipynb"
    path.write_text(broken, encoding="utf-8")

    assert update_pages.main(["--check", str(path)]) == 1
    assert update_pages.main([str(path)]) == 0
    repaired = path.read_text(encoding="utf-8")
    assert repaired == right
    changes = [
        line
        for line in difflib.ndiff(broken.splitlines(), repaired.splitlines())
        if line.startswith(("-", "+"))
    ]
    assert len(changes) == 2 and "×7" in changes[0] and "×1" in changes[1]


def test_the_block_can_hold_any_output() -> None:
    notebook = read_notebook(NOTEBOOK_02)
    for printed in ["", "\n", "\n  sangrado\n\n", "```\nuna valla\n```\n", "a\tb  \n"]:
        assert expected_block(with_expected(notebook, printed)).text == printed


def test_the_rendered_text_is_what_a_browser_shows() -> None:
    html = (
        '<h2 id="x">Lo que imprime<a class="anchor-link" href="#x">¶</a></h2>'
        "<pre>\nprimera &amp; <span>segunda</span>\n</pre><pre>otra</pre>"
    )
    assert rendered_block(html) == "primera & segunda\n"
    assert rendered_block("<h2>Lo que imprime</h2><pre><code>\n\n dos</code></pre>") == "\n\n dos"
    assert rendered_block("<h2>Otra cosa</h2><pre>x</pre>") is None


@pytest.mark.parametrize(
    ("span", "counted"),
    [
        ("Session", "Session"),
        ("FinalStep.output", "FinalStep.output"),
        ("SqliteCheckpointer(almacen)", "SqliteCheckpointer"),
        ("synaptum_lite.testing.says", "synaptum_lite.testing.says"),
        ("SYNAPTUM_BASE_URL", None),
        ("agente.run", None),
        ("runs.db", None),
        ("_Cortado", None),
        ("Exception", None),
        ("ES91 2100 0418 45", None),
    ],
)
def test_which_backticked_spans_count_as_names_of_the_package(span: str, counted) -> None:
    assert checked_name(span, own_classes=set()) == counted


def test_a_name_the_package_lacks_is_reported() -> None:
    text = (
        "`Agent.run`, `Role.TOOL`, `FinalStep.output`, `Agent.resume`, `Sesion` y `Sesion` otra vez"
    )
    assert unknown_names(text) == ["Agent.resume", "Sesion"]
    assert unknown_names("`Cortado`", own_code="class Cortado(Exception): ...") == []


def test_attributes_a_class_sets_in_init_are_names_of_the_package() -> None:
    text = "`ScriptedGateway.requests` `ProviderError.retryable` `RunBusy.run_id` `RunBusy.owner`"
    assert unknown_names(text) == ["RunBusy.owner"]


def test_every_normalization_rule_says_why() -> None:
    for rule in NORMALIZATION_RULES:
        assert rule.why.strip(), f"normalisation rule {rule.name!r} does not say why it exists"


def test_a_stored_notebook_is_valid_and_reads_back_unchanged() -> None:
    text = dumps(stored_form(with_expected(read_notebook(NOTEBOOK_02), "\n  dos\n")))
    notebook = nbformat.reads(text, as_version=4)
    nbformat.validate(notebook)
    assert expected_block(notebook).text == "\n  dos\n"
    assert nbformat.writes(notebook) + "\n" == text


def test_the_strict_build_fails_on_a_warning(tmp_path: Path) -> None:
    # A page left out of the nav is only a warning; strict mode must turn it into a failure.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Inicio\n")
    (tmp_path / "docs" / "huerfana.md").write_text("# Huérfana\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        "site_name: prueba\nstrict: true\nnav:\n  - index.md\n"
        "validation:\n  nav:\n    omitted_files: warn\n"
    )
    build = start_build(tmp_path / "site", config)
    log, _ = build.communicate(timeout=HANG)
    assert build.returncode != 0, log
    assert "huerfana.md" in log


@pytest.mark.skipif(sys.platform != "linux", reason="kernels are forked by a warm parent on Linux")
def test_a_warm_parent_started_early_forks_the_kernels_of_the_check(tmp_path: Path) -> None:
    env = check_environment()
    kernel_zygote.start_early(env)
    assert kernel_zygote._early is not None
    early = kernel_zygote._early[1]
    path = page(tmp_path, "padre", "import os\nprint(os.getppid())")
    [run] = asyncio.run(run_notebooks([path]))
    assert run.problems() == []
    assert run.printed == f"{early.pid}\n"
    assert kernel_zygote._early is None and early.wait(timeout=HANG) == 0


@pytest.mark.skipif(sys.platform != "linux", reason="kernels are forked by a warm parent on Linux")
def test_a_warm_parent_started_early_with_other_variables_is_stopped_not_used() -> None:
    env = check_environment()
    kernel_zygote.start_early({**env, "SYNAPTUM_BASE_URL": "http://127.0.0.1:9"})
    assert kernel_zygote._early is not None
    early = kernel_zygote._early[1]
    assert kernel_zygote.take_early(env) is None
    assert early.poll() is not None  # stopped: its kernels would have had a model variable


def test_notebooks_start_longest_first_by_what_they_took_last_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each notebook appends its name to one file as it starts; one kernel at a time.
    started = tmp_path / "orden.txt"
    paths = [
        page(tmp_path, name, f"open({str(started)!r}, 'a').write('{name} ')")
        for name in ("corto", "largo", "nuevo", "medio")
    ]
    last = tmp_path / "segundos.json"
    last.write_text(json.dumps({"corto.ipynb": 0.5, "largo.ipynb": 9.0, "medio.ipynb": 2.0}))
    monkeypatch.setattr(kernel, "LAST_SECONDS", last)
    runs = asyncio.run(run_notebooks(paths, parallel=1))
    assert [run.path.stem for run in runs] == ["corto", "largo", "nuevo", "medio"]  # as given
    assert started.read_text() == "nuevo largo medio corto "  # never seen: first
    assert set(json.loads(last.read_text())) == {f"{p.stem}.ipynb" for p in paths}


def test_an_unreadable_record_of_last_times_changes_no_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    last = tmp_path / "segundos.json"
    last.write_text("{no es json")
    monkeypatch.setattr(kernel, "LAST_SECONDS", last)
    [run] = asyncio.run(run_notebooks([page(tmp_path, "uno", "print(1)")]))
    assert run.printed == "1\n"
    assert json.loads(last.read_text()) == {"uno.ipynb": round(run.seconds, 2)}


def test_a_cell_that_never_ends_fails_the_notebook_naming_it_and_the_cells_before_ran(
    tmp_path: Path,
) -> None:
    """The check's bound is a hang's (`kernel.DEFAULT_TIMEOUT`, per cell): a cell that never
    ends fails its notebook, saying so; what the cells before it printed is kept."""
    path = page(tmp_path, "cuelga", "print('antes')", "import threading\nthreading.Event().wait()")
    [run] = asyncio.run(run_notebooks([path], timeout=5))  # the first cell needs milliseconds
    assert run.printed == "antes\n"
    assert run.failure == "a cell of cuelga.ipynb did not finish within 5 s"


def _waits_for(tmp_path: Path, name: str) -> tuple[Path, Path, Path]:
    """A notebook whose one cell says it started (a file), then waits, printing nothing, for
    another file to appear; the notebook and the two files."""
    started, release = tmp_path / f"{name}.empezó", tmp_path / f"{name}.suelta"
    path = page(
        tmp_path,
        name,
        "import pathlib, time\n"
        f"pathlib.Path({str(started)!r}).touch()\n"
        f"while not pathlib.Path({str(release)!r}).exists():\n"
        "    time.sleep(0.05)\n"
        "print('suelta')",
    )
    return path, started, release


def test_a_cell_with_news_runs_past_its_bound_and_fails_once_the_news_stops(
    tmp_path: Path,
) -> None:
    """Given `News` (on the real model, the server's log), a cell's bound counts the seconds
    without it. The news here changes each time it is read: the cell, silent, runs past three
    bounds (the news releases it then) and passes. Other news stops changing once the cell has
    started: that cell, never released, fails naming the bound and what did not change."""
    bound = 1.0
    moving, moving_started, release = _waits_for(tmp_path, "se-mueve")
    stuck, stuck_started, _ = _waits_for(tmp_path, "se-para")
    first_seen: list[float] = []
    reads = {"se-mueve": 0, "se-para": 0}

    def moving_news() -> object:
        reads["se-mueve"] += 1
        if moving_started.exists():
            first_seen.append(time.monotonic())
            if first_seen[-1] - first_seen[0] > 3 * bound:  # the cell has run three bounds
                release.touch()
        return reads["se-mueve"]

    def stuck_news() -> object:
        reads["se-para"] += 1
        return "quieto" if stuck_started.exists() else reads["se-para"]

    async def both() -> list[list[NotebookRun]]:
        return await asyncio.gather(
            run_notebooks([moving], timeout=bound, news=kernel.News("el registro", moving_news)),
            run_notebooks([stuck], timeout=bound, news=kernel.News("el registro", stuck_news)),
        )

    [[passed], [failed]] = asyncio.run(asyncio.wait_for(both(), HANG))
    assert release.exists() and passed.problems() == [], passed.problems()
    assert passed.printed == "suelta\n"
    assert failed.printed == ""
    assert failed.failure == (
        "a cell of se-para.ipynb did not finish: no news for 1 s (el registro did not change)"
    )


def test_news_of_a_file_changes_when_the_file_grows_or_is_replaced(tmp_path: Path) -> None:
    log = tmp_path / "llama-server.log"
    news = kernel.News.of_file(log)
    assert news.what == "llama-server.log"
    seen = [news.read()]
    log.write_text("una línea\n")
    seen.append(news.read())
    assert news.read() == seen[-1]  # nothing happened: no news
    with log.open("a") as more:
        more.write("otra\n")
    seen.append(news.read())
    (tmp_path / "nuevo").write_text("una línea\notra\n")  # the same size, another file
    (tmp_path / "nuevo").replace(log)
    seen.append(news.read())
    assert len(set(seen)) == len(seen), seen


def _iopub_without(monkeypatch: pytest.MonkeyPatch, dropped) -> list[str]:
    """The check's kernel client loses the IOPub messages `dropped(message)` names (what a
    subscription that reached the kernel late would lose); the kinds lost, in order."""
    lost: list[str] = []
    receive = kernel._WelcomedClient.get_iopub_msg

    async def get_iopub_msg(self, *args, **options):
        while True:
            message = await receive(self, *args, **options)
            if not dropped(message):
                return message
            lost.append(message["msg_type"])

    monkeypatch.setattr(kernel._WelcomedClient, "get_iopub_msg", get_iopub_msg)
    return lost


def test_a_kernel_whose_welcome_is_lost_is_ready_once_it_answers_on_iopub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without its `iopub_welcome`, a kernel is ready as soon as IOPub brings news of a
    `kernel_info` request of ours: the notebook runs and nothing it prints is lost. (Waiting
    for the welcome alone, the check waited on such a kernel until CI was cut off.)"""
    lost = _iopub_without(monkeypatch, lambda message: message["msg_type"] == "iopub_welcome")
    path = page(tmp_path, "sin-bienvenida", "print('hola')", "print('adiós')")
    [run] = asyncio.run(asyncio.wait_for(run_notebooks([path]), HANG))
    assert "iopub_welcome" in lost
    assert run.problems() == []
    assert run.printed == "hola\nadiós\n"


def test_a_kernel_that_says_nothing_fails_its_notebook_naming_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kernel alive and silent on IOPub fails its notebook at `KERNEL_START_TIMEOUT`, with
    what was tried, instead of holding the check (and CI) forever."""
    _iopub_without(monkeypatch, lambda message: True)
    monkeypatch.setattr(kernel, "KERNEL_START_TIMEOUT", 3.0)
    path = page(tmp_path, "muda", "print('nunca')")
    [run] = asyncio.run(asyncio.wait_for(run_notebooks([path]), HANG))
    assert run.printed == ""
    assert run.failure is not None
    assert run.failure.startswith(
        "the kernel of muda.ipynb never showed it was ready within 3 s: no iopub_welcome, "
        "and no IOPub news of the "
    ), run.failure
