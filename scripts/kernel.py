"""Runs notebooks, each in a fresh Jupyter kernel, all at once, and records what each cell printed.

The only module that talks to a kernel. The check (`tests/docs`) and the update command
(`scripts/update_pages.py`) both call `run_notebooks`, so what the test compares is exactly
what the update writes.

nbclient runs each notebook, cell after cell, in an ordinary `ipykernel` kernel (the one
JupyterLab starts), and stops at the first cell that raises. Around it, this module adds what
the page contract needs:

- what each cell wrote to stdout and stderr, what it showed, whether it raised or called
  `clear_output`, read from the outputs nbclient records (`CellRun`);
- after the last cell, a wait for the kernel to go quiet (at most `QUIET_AFTER_LAST_CELL`) and
  a question to it: which threads and child processes the notebook left behind. Output that
  arrives after the last cell, or a thread or process that could still print, is a failure,
  because a reader in JupyterLab would see text the page does not show;
- the kernel is killed then: a throwaway kernel has nothing to save.

One limit comes with nbclient: it reads each cell's own messages, so text that an asyncio task
started by an earlier cell prints while a later cell runs is not recorded (a thread's text is:
it belongs to the cell running). Output after the last cell is caught whatever its cell.

Where kernels come from. Importing ipykernel is most of a kernel's start-up (about 0.4 s of
CPU). On Linux one warm parent (`scripts/kernel_zygote.py`) imports it once per check and forks
a kernel per notebook (`_ForkedKernelManager` hands nbclient such a kernel); elsewhere each
kernel is `python -m ipykernel_launcher`, started by jupyter_client's own kernel manager.
Either way every notebook gets a new process in which no other code has run, started in the
notebook's folder (as in JupyterLab), with its own empty IPython directory (nobody's startup
files or history run) and an environment without the variables that select a real model.
`python -m scripts.update_pages` starts the warm parent before it imports nbclient, so the two
imports overlap.

What a notebook leaves. A kernel is killed, so nothing it meant to clean at its exit is cleaned:
each notebook's `tempfile.mkdtemp()` (its `runs.db`, its effects) would stay in the machine's
temporary folder, run after run. Each kernel's `TMPDIR` is a folder of its own, removed with
the kernel's other files; the notebook's child processes inherit it.

In what order. `KERNELS_AT_ONCE` notebooks run at a time, the longest first by what each took
the last time (`LAST_SECONDS`): the check ends when its longest notebook does, and one that
starts last ends it alone. What a notebook does is its own cost, which any runner pays: the
warm parent saves only the kernel's start-up, and the order only the idle cores at the end.
"""

from __future__ import annotations

import ast
import asyncio
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any

from scripts import kernel_zygote
from scripts.kernel_zygote import (  # noqa: F401  (MODEL_VARIABLE_PREFIXES: for the tests)
    MODEL_VARIABLE_PREFIXES,
    check_environment,
    kernel_environment,
)

# nbformat imports jsonschema, whose format checkers import what is installed; with the lab
# group, rfc3987-syntax builds a grammar on import: 1.5 s of CPU, more than the rest of this
# module's imports together (0.3 s), for an `iri` format no notebook schema uses. It is kept out
# while nbformat is imported, and importable again afterwards.
_KEPT_OUT = "rfc3987_syntax"
_keep_out = _KEPT_OUT not in sys.modules
if _keep_out:
    sys.modules[_KEPT_OUT] = None  # type: ignore[assignment]  # import fails: not checked
try:
    import nbformat
    from jupyter_client import AsyncKernelManager
    from jupyter_client.asynchronous import AsyncKernelClient
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, DeadKernelError
finally:
    if _keep_out and sys.modules.get(_KEPT_OUT, 0) is None:
        del sys.modules[_KEPT_OUT]

#: How many notebooks run at once by default: twice the cores, because a notebook often waits
#: (on a child process, a lock, a file, the quiet after its last cell).
KERNELS_AT_ONCE = 2 * (os.cpu_count() or 1)


#: A cell that runs longer than this fails the check (seconds): a bound on a hang, not on how
#: long a notebook takes. Each cell gets it whole, so a notebook that a busy machine slows
#: down is never failed for its length: under eight CPU hogs, two notebooks on the real model
#: ran past a whole-notebook bound of 600 s with every cell progressing. Where a cell waits on
#: something outside the kernel that can say it is moving (`News`), the bound counts only the
#: seconds without news.
DEFAULT_TIMEOUT = 120.0

#: How often a running cell's bound and its `News` are looked at (seconds). Only a cell that
#: is past its bound waits for the next look; a cell that ends is seen at once.
WATCH_EVERY = 0.5

#: A kernel that takes longer than this to start fails its notebook (seconds): a hang's bound.
KERNEL_START_TIMEOUT = 600.0

#: After the last cell is idle, how long IOPub must stay silent (seconds). A bound, not a
#: proof: output later than this is caught only if its thread or process is still alive
#: when the kernel is asked (see `_LEFT_BEHIND`), which a `threading.Timer` or a child that
#: has not exited is.
QUIET_AFTER_LAST_CELL = 0.3

#: Evaluated in the kernel before the first cell and after the last one: the threads alive
#: and the child processes of the kernel (Linux reads them from /proc; elsewhere none are
#: listed, and only the quiet wait applies). synaptum_lite starts no thread.
_LEFT_BEHIND = {
    "threads": "sorted((t.ident, t.name) for t in __import__('threading').enumerate())",
    "children": (
        "sorted(int(p) for f in __import__('glob').glob('/proc/self/task/*/children')"
        " for p in open(f).read().split())"
    ),
}

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass(frozen=True)
class News:
    """Something outside the kernel whose change shows that a running cell is still getting
    somewhere: on the real model, the server's log, which gains lines with each request it
    takes or ends. A cell given news fails only after `timeout` seconds in which neither it
    started nor `read()` returned something new: a bound on a hang, not on a queue.

    Under eight CPU hogs, a cell of 12_salida_tipada made its model calls behind another
    kernel's at the server's one slot, each one answered, and ran past a 600 s bound on the
    cell's whole length."""

    what: str  # said in the failure: what did not change
    read: Callable[[], object]  # compared with `!=` to what it returned before

    @classmethod
    def of_file(cls, path: Path) -> News:
        """News when `path` is replaced or grows or shrinks (e.g. a server's log)."""

        def read() -> object:
            try:
                status = path.stat()
            except OSError:
                return None
            return status.st_ino, status.st_size

        return cls(path.name, read)


class CellWithoutNews(TimeoutError):
    """A cell ran past the bound, with no news (`News`) in that time if it had any."""


@dataclass
class CellRun:
    """What one code cell did. `index` counts every cell of the notebook, from 0."""

    index: int
    cell_id: str | None
    source: str
    stdout: str = ""
    stderr: str = ""
    shown: list[str] = field(default_factory=list)  # execute_result / display_data types
    error: str | None = None  # the traceback, without colours
    cleared: bool = False  # the cell called clear_output: it erases what a reader sees

    def describe(self) -> str:
        """`cell 7 (id "primera-vuelta")`: how failures name a cell."""
        if self.cell_id:
            return f'cell {self.index} (id "{self.cell_id}")'
        return f"cell {self.index}"


@dataclass
class NotebookRun:
    """The result of running one notebook top to bottom."""

    path: Path
    cells: list[CellRun]
    seconds: float
    failure: str | None = None  # the kernel died, timed out or could not start
    left_behind: list[str] = field(default_factory=list)  # output, threads, processes
    #: CPU seconds of the kernel and the processes it waited for (forked kernels only).
    cpu_seconds: float | None = None

    @property
    def printed(self) -> str:
        """Everything the notebook wrote to stdout, in order."""
        return "".join(cell.stdout for cell in self.cells)

    def cell_of_line(self, line_number: int) -> CellRun | None:
        """The cell that printed the start of the given line of `printed` (0-based)."""
        lines = self.printed.splitlines(keepends=True)
        if line_number >= len(lines):
            return None
        offset = sum(len(line) for line in lines[:line_number])
        end = 0
        for cell in self.cells:
            end += len(cell.stdout)
            if offset < end:
                return cell
        return None

    def problems(self) -> list[str]:
        """What makes this run unusable as a page's output, besides a different text.

        A cell that raised, wrote to stderr, or showed a value (a bare expression at the end
        of a cell) prints something the page cannot show: the contract is stdout only.
        """
        found = []
        if self.failure:
            found.append(self.failure)
        for cell in self.cells:
            if cell.error:
                found.append(f"{cell.describe()} raised:\n{cell.error}")
            if cell.stderr:
                found.append(f"{cell.describe()} wrote to stderr:\n{cell.stderr}")
            if cell.shown:
                kinds = ", ".join(sorted(set(cell.shown)))
                found.append(
                    f"{cell.describe()} shows a value ({kinds}) that the page cannot show: "
                    "print it, or end the line with `;`"
                )
            if cell.cleared:
                found.append(
                    f"{cell.describe()} calls clear_output: JupyterLab erases what it printed "
                    "and the page cannot; print only what stays"
                )
        found.extend(self.left_behind)
        return found


def code_cells(notebook: dict) -> list[CellRun]:
    """The code cells of a notebook (as read with `json` or nbformat), in order, with what
    their stored outputs say they did (nothing, for a notebook stored clean)."""
    cells = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        source = cell["source"]
        run = CellRun(
            index, cell.get("id"), "".join(source) if isinstance(source, list) else source
        )
        for output in cell.get("outputs", []):
            kind = output["output_type"]
            if kind == "stream" and output["name"] == "stdout":
                run.stdout += output["text"]
            elif kind == "stream":
                run.stderr += output["text"]
            elif kind == "error":
                run.error = _ANSI.sub("", "\n".join(output["traceback"]))
            else:  # execute_result, display_data
                run.shown.append(kind)
        cells.append(run)
    return cells


async def run_notebooks(
    paths: Iterable[Path],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    parallel: int | None = None,
    fork: bool | None = None,
    model: dict[str, str] | None = None,
    news: News | None = None,
) -> list[NotebookRun]:
    """Run every notebook in its own fresh kernel, at most `parallel` at a time.

    Kernels never inherit the caller's model variables; `model` gives them some on purpose
    (e.g. `{"SYNAPTUM_BASE_URL": …}` to run the notebooks on a real model). A cell fails after
    `timeout` seconds; with `news`, after `timeout` seconds without it (`News`).
    `fork` chooses where kernels come from (default: the warm parent on Linux). Returns one
    `NotebookRun` per path, in the order given; they start longest first (`LAST_SECONDS`).
    Never raises for what a notebook does: a cell that fails, a kernel that dies or a timeout
    is recorded in the result.
    """
    paths = list(paths)
    limit = asyncio.Semaphore(parallel or KERNELS_AT_ONCE)
    env = check_environment(model)
    use_fork = sys.platform == "linux" if fork is None else fork
    zygote = await _Zygote.start(env) if use_fork else None

    async def one(path: Path) -> NotebookRun:
        async with limit:
            return await _run_one(path, zygote, env, timeout=timeout, news=news)

    # The longest first, by what each notebook took last time: on two cores, a long notebook
    # that starts last decides alone when the check ends.
    last = _last_seconds()
    order = sorted(range(len(paths)), key=lambda i: -last.get(paths[i].name, math.inf))
    try:
        runs = await asyncio.gather(*(one(paths[i]) for i in order))
    finally:
        if zygote:
            await zygote.close()
    _remember_seconds(runs)
    by_index = dict(zip(order, runs, strict=True))
    return [by_index[i] for i in range(len(paths))]


#: What each notebook took the last time it ran here (seconds, by file name), so that the next
#: check starts the longest first. Only an order: a missing or unreadable file changes nothing
#: else, and notebooks never seen start first.
LAST_SECONDS = Path(tempfile.gettempdir()) / "synaptum-lite-notebook-seconds.json"


def _last_seconds() -> dict[str, float]:
    try:
        known = json.loads(LAST_SECONDS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return known if isinstance(known, dict) else {}


def _remember_seconds(runs: Iterable[NotebookRun]) -> None:
    known = _last_seconds()
    known.update({run.path.name: round(run.seconds, 2) for run in runs})
    scratch = LAST_SECONDS.with_name(f"{LAST_SECONDS.name}.{os.getpid()}")
    try:
        scratch.write_text(json.dumps(known, sort_keys=True), encoding="utf-8")
        os.replace(scratch, LAST_SECONDS)  # whole or not at all, with checks side by side
    except OSError:
        scratch.unlink(missing_ok=True)


def run_notebooks_sync(paths: Sequence[Path], **options: Any) -> list[NotebookRun]:
    """`run_notebooks` for callers without an event loop."""
    return asyncio.run(run_notebooks(paths, **options))


async def _run_one(
    path: Path, zygote: _Zygote | None, env: dict[str, str], *, timeout: float, news: News | None
) -> NotebookRun:
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="synaptum-kernel-"))
    km = _ForkedKernelManager(zygote) if zygote else AsyncKernelManager(kernel_name="python3")
    # IPC transport: the sockets are files in `scratch`, no TCP port to find or to leak.
    km.transport, km.ip = "ipc", str(scratch / "kernel")
    km.connection_file = str(scratch / "kernel.json")
    km.client_factory = _WelcomedClient
    client = _Notebook(nbformat.v4.reads(path.read_text(encoding="utf-8")), km, timeout)
    stderr = scratch / "kernel.stderr"
    tmp = scratch / "tmp"  # the notebook's temporary folder, removed with `scratch`
    tmp.mkdir()
    failure, left_behind = None, []
    try:
        with stderr.open("wb") as log:
            await km.start_kernel(
                cwd=str(path.parent),
                env={**env, "IPYTHONDIR": str(scratch / "ipython"), "TMPDIR": str(tmp)},
                extra_arguments=["--HistoryManager.enabled=False"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        await client.async_start_new_kernel_client()
        before = await _left_behind_now(client)
        await _execute_within_the_bound(client, timeout, news)
        left_behind = await _after_the_last_cell(client, before)
    except CellExecutionError:
        pass  # the traceback is among the cell's outputs; the cells after it never ran
    except KernelNotReady as silent:
        failure = f"the kernel of {path.name} {silent}"
    except CellWithoutNews as past:
        failure = f"a cell of {path.name} {past}"
    except TimeoutError as late:  # a question of ours, outside the cells
        failure = f"the kernel of {path.name} did not answer within {timeout:.0f} s ({late})"
    except DeadKernelError as died:
        log = stderr.read_text(errors="replace").strip()
        how = await _how_it_ended(km) or str(died)
        failure = f"the kernel of {path.name} {how}" + (f":\n{log}" if log else "")
    finally:
        if await km.is_alive():
            await km.shutdown_kernel(now=True)
        if client.kc:
            client.kc.stop_channels()
        shutil.rmtree(scratch, ignore_errors=True)
    cells = code_cells(client.nb)
    for cell in cells:
        cell.cleared = cell.index in client.cleared
    seconds = time.perf_counter() - started
    cpu = km.forked.cpu if isinstance(km, _ForkedKernelManager) and km.forked else None
    return NotebookRun(path, cells, seconds, failure, left_behind, cpu)


# ── nbclient, with what the check adds ───────────────────────────────────────


class _Notebook(NotebookClient):
    """nbclient as the check needs it: stop at the first error, even in a cell tagged
    `raises-exception`; skip no cell; keep no timing; the kernel's start within
    `KERNEL_START_TIMEOUT` and each other wait within `timeout` seconds; and note every cell
    that calls `clear_output` (its outputs are gone by the end). A cell itself has no bound
    here: `_execute_within_the_bound` gives it one, from `cell_started`."""

    def __init__(self, notebook: nbformat.NotebookNode, km: Any, timeout: float) -> None:
        super().__init__(
            notebook,
            km=km,
            force_raise_errors=True,
            skip_cells_with_tag="",
            record_timing=False,
            shell_timeout_interval=1,
            startup_timeout=int(KERNEL_START_TIMEOUT),
            timeout=math.ceil(timeout),
            timeout_func=lambda cell: None,  # a cell's bound is _execute_within_the_bound's
        )
        self.cleared: set[int] = set()
        self.cell_started = time.monotonic()

    async def async_execute_cell(self, *args: Any, **options: Any) -> Any:
        self.cell_started = time.monotonic()
        return await super().async_execute_cell(*args, **options)

    def clear_output(self, outs: list[Any], msg: dict[str, Any], cell_index: int) -> None:
        self.cleared.add(cell_index)
        super().clear_output(outs, msg, cell_index)


async def _execute_within_the_bound(client: _Notebook, bound: float, news: News | None) -> None:
    """Run the notebook's cells; `CellWithoutNews` once a cell has run `bound` seconds since it
    started or, with `news`, since the news last changed. The kernel is killed by the caller."""
    execution = asyncio.ensure_future(client.async_execute())
    last = news.read() if news else None
    heard = time.monotonic()
    try:
        while True:
            await asyncio.wait({execution}, timeout=WATCH_EVERY)
            if execution.done():
                execution.result()  # the notebook's own failure, if any
                return
            if news and (now := news.read()) != last:
                last, heard = now, time.monotonic()
            quiet = time.monotonic() - max(heard, client.cell_started)
            if quiet > bound:
                raise CellWithoutNews(
                    f"did not finish within {bound:.0f} s"
                    if news is None
                    else f"did not finish: no news for {bound:.0f} s ({news.what} did not change)"
                )
    finally:
        if not execution.done():
            execution.cancel()
            await asyncio.wait({execution})
        if not execution.cancelled():
            execution.exception()  # retrieved: the one that counts was raised above


class KernelNotReady(TimeoutError):
    """The kernel never showed that our IOPub subscription reached it, within the bound."""


class _WelcomedClient(AsyncKernelClient):
    """Ready once IOPub is shown to reach us: from then on no output can be lost.

    The proof is the kernel's welcome of our subscription (`iopub_welcome`, ipykernel 7), or,
    should the welcome never come, any IOPub message about a `kernel_info` request of ours
    (asked after each second without news, as jupyter_client asks). jupyter_client's own wait
    asks `kernel_info` and then waits 0.2 s for IOPub to go quiet, on every notebook: measured
    one at a time, a notebook that prints one line takes 0.8 s with the welcome and 1.0 s that
    way. The welcome alone was not enough: one CI run waited on a kernel that had bound its
    sockets and said nothing until CI was cut off, 87 minutes later, because the bound was
    checked only when a message came. Silence counts too now: `KernelNotReady` after
    `KERNEL_START_TIMEOUT`."""

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        bound = timeout or KERNEL_START_TIMEOUT
        until = time.monotonic() + bound
        asked: set[str] = set()
        seen = 0
        ask_at = time.monotonic() + 1.0
        while True:
            try:
                message = await self.get_iopub_msg(timeout=0.25)
            except Empty:
                if not await self.is_alive():
                    raise DeadKernelError("Kernel died") from None
                now = time.monotonic()
                if now > until:
                    raise KernelNotReady(
                        f"never showed it was ready within {bound:.0f} s: no iopub_welcome, "
                        f"and no IOPub news of the {len(asked)} kernel_info requests sent "
                        f"({seen} other IOPub messages)"
                    ) from None
                if now >= ask_at:
                    asked.add(self.kernel_info())
                    ask_at = now + 1.0
                continue
            if message["msg_type"] == "iopub_welcome":
                return
            if message["parent_header"].get("msg_id") in asked:
                return
            seen += 1


async def _next_iopub(kc: AsyncKernelClient, until: float) -> dict[str, Any]:
    """The next IOPub message; DeadKernelError if the kernel dies first, TimeoutError if none
    comes before `until` (a bound on a hang)."""
    while True:
        try:
            return await kc.get_iopub_msg(timeout=0.25)
        except Empty:
            if not await kc.is_alive():
                raise DeadKernelError("Kernel died") from None
            if time.monotonic() > until:
                raise TimeoutError("no IOPub message before the bound") from None


async def _left_behind_now(client: _Notebook) -> dict[str, Any]:
    """The threads and child processes alive in the kernel now (`_LEFT_BEHIND`)."""
    question = client.kc.execute(
        "", silent=True, store_history=False, user_expressions=_LEFT_BEHIND
    )
    reply = await client.async_wait_for_reply(question)
    return reply["content"].get("user_expressions", {})


async def _after_the_last_cell(client: _Notebook, before: dict[str, Any]) -> list[str]:
    """What a reader of JupyterLab would still see after the last cell: output arriving
    within `QUIET_AFTER_LAST_CELL`, and threads or child processes still alive then."""
    late: list[str] = []

    def note(message: dict[str, Any]) -> None:
        if message["msg_type"] == "stream":
            late.append(message["content"]["text"])
        elif message["msg_type"] in ("execute_result", "display_data", "clear_output"):
            late.append(f"[{message['msg_type']}]\n")

    deadline = time.monotonic() + QUIET_AFTER_LAST_CELL
    while (left := deadline - time.monotonic()) > 0:
        try:
            note(await client.kc.get_iopub_msg(timeout=left))
        except Empty:
            break
    question = client.kc.execute(
        "", silent=True, store_history=False, user_expressions=_LEFT_BEHIND
    )
    # Output that arrives between the quiet wait and the question counts too: read IOPub up
    # to the question's own idle status (a cell's bound: the question runs like a cell).
    until = time.monotonic() + client.timeout
    while True:
        message = await _next_iopub(client.kc, until)
        if message["parent_header"].get("msg_id") == question and message["msg_type"] == "status":
            if message["content"]["execution_state"] == "idle":
                break
        note(message)
    after = (await client.async_wait_for_reply(question))["content"].get("user_expressions", {})
    cells = code_cells(client.nb)
    where = f" (after {cells[-1].describe()})" if cells else ""
    found = []
    if late:
        found.append(
            f"output arrived after the last cell was idle{where}, which JupyterLab shows and "
            f"the page cannot:\n{''.join(late)}"
        )
    threads = _value(after, "threads") - _value(before, "threads")
    if threads:
        names = ", ".join(sorted(name for _, name in threads))
        found.append(
            f"the notebook leaves threads running after its last cell{where}: {names}; "
            "whatever they print later reaches JupyterLab, not the page: join them"
        )
    children = _value(after, "children") - _value(before, "children")
    if children:
        found.append(
            f"the notebook leaves {len(children)} child process(es) running after its last "
            f"cell{where}: wait for them (or kill them) before the notebook ends"
        )
    return found


def _value(expressions: dict[str, Any], name: str) -> set[Any]:
    """A user expression's value as a set (of tuples): `[(1, 'x')]` → `{(1, 'x')}`."""
    result = expressions.get(name, {})
    if result.get("status") != "ok":
        return set()
    value = ast.literal_eval(result["data"]["text/plain"])
    return {tuple(item) if isinstance(item, list) else item for item in value}


# ── Where kernels come from ──────────────────────────────────────────────────


class _ForkedKernelManager(AsyncKernelManager):
    """The kernel manager nbclient is given on Linux: its kernel is forked by the warm parent,
    so it has no provisioner and no kernel spec. Starting is one order to the parent (the
    connection file, the folder, the IPython directory, the stderr log); stopping is SIGKILL."""

    def __init__(self, zygote: _Zygote) -> None:
        super().__init__(kernel_name="python3")
        self.zygote, self.forked = zygote, None

    async def start_kernel(self, *, cwd: str, env: dict[str, str], stderr: Any, **_: Any) -> None:
        self.write_connection_file()
        self.forked = await self.zygote.launch(
            self.connection_file,
            cwd=cwd,
            ipython_dir=env["IPYTHONDIR"],
            tmpdir=env["TMPDIR"],
            stderr=stderr.name,
        )

    @property
    def has_kernel(self) -> bool:
        return self.forked is not None

    async def is_alive(self) -> bool:
        return self.forked is not None and self.forked.returncode is None

    _async_is_alive = is_alive  # what the client asks its manager

    async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:
        await self.forked.kill()
        await self.cleanup_resources()


async def _how_it_ended(km: AsyncKernelManager) -> str | None:
    """`exited with code 3` for a kernel that has ended; None for one that never started."""
    if isinstance(km, _ForkedKernelManager):
        code = km.forked.returncode if km.forked else None
    else:
        code = await km.provisioner.poll() if km.provisioner else None
    return None if code is None else f"exited with code {code}"


class _ForkedKernel:
    def __init__(self, zygote: _Zygote, pid: int) -> None:
        self.zygote, self.pid = zygote, pid
        self.returncode: int | None = None
        self.cpu: float | None = None  # CPU seconds, with its children, once it has ended
        self.ended = asyncio.Event()

    async def kill(self) -> None:
        if self.returncode is None:
            self.zygote.send({"kill": self.pid})
        await self.ended.wait()


class _Zygote:
    """The warm parent of `scripts/kernel_zygote.py`: one fork per kernel (Linux)."""

    def __init__(self, process: subprocess.Popen[bytes], answers: asyncio.StreamReader) -> None:
        self.process, self.answers = process, answers
        self.forks: deque[asyncio.Future[_ForkedKernel]] = deque()
        self.kernels: dict[int, _ForkedKernel] = {}
        self.reader: asyncio.Task[None] | None = None

    @classmethod
    async def start(cls, env: dict[str, str]) -> _Zygote:
        """The warm parent started early with `env` (`kernel_zygote.start_early`), or a new
        one."""
        process = kernel_zygote.take_early(env) or kernel_zygote.spawn(env)
        assert process.stdout is not None
        answers = asyncio.StreamReader()
        await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(answers), process.stdout
        )
        zygote = cls(process, answers)
        zygote.reader = asyncio.create_task(zygote._read())
        return zygote

    def send(self, order: dict[str, Any]) -> None:
        """One order: a line of a few hundred bytes, which a pipe takes whole at once."""
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(order) + "\n").encode())
        self.process.stdin.flush()

    async def launch(
        self, connection: str, *, cwd: str, ipython_dir: str, tmpdir: str, stderr: str
    ) -> _ForkedKernel:
        forked: asyncio.Future[_ForkedKernel] = asyncio.get_running_loop().create_future()
        self.forks.append(forked)
        self.send(
            {
                "fork": {
                    "connection": connection,
                    "cwd": cwd,
                    "ipython_dir": ipython_dir,
                    "tmpdir": tmpdir,
                    "stderr": stderr,
                }
            }
        )
        return await forked

    async def _read(self) -> None:
        while line := await self.answers.readline():
            message = json.loads(line)
            if "forked" in message:
                kernel = _ForkedKernel(self, message["forked"])
                self.kernels[kernel.pid] = kernel
                self.forks.popleft().set_result(kernel)
            elif "exited" in message:
                kernel = self.kernels.pop(message["exited"])
                kernel.returncode, kernel.cpu = message["code"], message.get("cpu")
                kernel.ended.set()
        # The warm parent is gone: every kernel it had is gone with it.
        for kernel in self.kernels.values():
            kernel.returncode = -9 if kernel.returncode is None else kernel.returncode
            kernel.ended.set()
        while self.forks:
            self.forks.popleft().set_exception(DeadKernelError("could not start: no warm parent"))

    async def close(self) -> None:
        """Close its orders: it kills the kernels left and ends, which closes its answers."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        if self.reader:
            await self.reader
        self.process.wait()  # its answers have ended: it has exited, or is about to
