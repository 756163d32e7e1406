"""Runs notebooks, each in a fresh Jupyter kernel, all at once, and records what each cell printed.

The only module that talks to a kernel. The check (`tests/docs`) and the update command
(`scripts/update_pages.py`) both call `run_notebooks`, so what the test compares is exactly
what the update writes.

Why not nbclient: it is correct but spends most of a short notebook's time waiting. It polls
`kernel_info` and then waits 0.2 s for IOPub to go quiet before the first cell, and shuts the
kernel down politely at the end. Here the kernel is an ordinary `ipykernel` kernel, the one
JupyterLab starts, and the client:

- waits for the kernel's `iopub_welcome` (sent when our IOPub subscription is live, so no
  output can be lost), then sends every code cell at once with `stop_on_error`, which is what
  "Run All" does;
- when the last cell is idle, waits for the kernel to go quiet (at most
  `QUIET_AFTER_LAST_CELL`) and asks it which threads and child processes the notebook left
  behind: output that arrives after the last cell, or a thread or process that could still
  print, is a failure, because a reader in JupyterLab would see text the page does not show;
- kills the kernel then: a throwaway kernel has nothing to save.

Where kernels come from. Importing ipykernel is most of a kernel's start-up (about 0.4 s of
CPU). On Linux one warm parent (`scripts/kernel_zygote.py`) imports it once per check and forks
a kernel per notebook; elsewhere each kernel is `python -m ipykernel_launcher`. Either way every
notebook gets a new process in which no other code has run, started in the notebook's folder
(as in JupyterLab), with its own empty IPython directory (nobody's startup files or history
run) and an environment without the variables that select a real model.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import sys
import tempfile
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

#: Environment variables removed before a kernel starts: any of them selects a real model.
MODEL_VARIABLE_PREFIXES = ("SYNAPTUM_", "AXONIUM_")

#: A notebook that takes longer than this fails the check (seconds, whole notebook).
DEFAULT_TIMEOUT = 120.0

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


def kernel_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a kernel: the caller's, minus every model variable."""
    base = dict(os.environ if base is None else base)
    return {
        name: value for name, value in base.items() if not name.startswith(MODEL_VARIABLE_PREFIXES)
    }


def code_cells(notebook: dict) -> list[CellRun]:
    """The code cells of a notebook (as read with `json`), in order, not yet run."""
    cells = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "code":
            source = cell["source"]
            cells.append(
                CellRun(
                    index=index,
                    cell_id=cell.get("id"),
                    source="".join(source) if isinstance(source, list) else source,
                )
            )
    return cells


async def run_notebooks(
    paths: Iterable[Path],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    parallel: int | None = None,
    fork: bool | None = None,
    model: dict[str, str] | None = None,
) -> list[NotebookRun]:
    """Run every notebook in its own fresh kernel, at most `parallel` at a time.

    Kernels never inherit the caller's model variables; `model` gives them some on purpose
    (e.g. `{"SYNAPTUM_BASE_URL": …}` to run the notebooks on a real model).
    `fork` chooses where kernels come from (default: the warm parent on Linux). Returns one
    `NotebookRun` per path, in the order given. Never raises for what a notebook does: a cell
    that fails, a kernel that dies or a timeout is recorded in the result.
    """
    paths = list(paths)
    # Twice the cores: a notebook often waits (on a child process, a lock, a file).
    limit = asyncio.Semaphore(parallel or 2 * (os.cpu_count() or 1))
    env = kernel_environment()
    env.update(model or {})
    # debugpy warns on stderr about frozen modules; the check needs no debugger.
    env.update(PYDEVD_DISABLE_FILE_VALIDATION="1", JUPYTER_PLATFORM_DIRS="1")
    use_fork = sys.platform == "linux" if fork is None else fork
    launcher = await _Zygote.start(env) if use_fork else _Spawner(env)

    async def one(path: Path) -> NotebookRun:
        async with limit:
            return await _run_one(path, launcher, timeout=timeout)

    try:
        return list(await asyncio.gather(*(one(path) for path in paths)))
    finally:
        await launcher.close()


def run_notebooks_sync(paths: Sequence[Path], **options: Any) -> list[NotebookRun]:
    """`run_notebooks` for callers without an event loop."""
    return asyncio.run(run_notebooks(paths, **options))


async def _run_one(path: Path, launcher: _Launcher, *, timeout: float) -> NotebookRun:
    started = time.perf_counter()
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cells = code_cells(notebook)
    scratch = Path(tempfile.mkdtemp(prefix="synaptum-kernel-"))
    connection = _write_connection_file(scratch)
    stderr = scratch / "kernel.stderr"
    kernel, client, failure = None, None, None
    try:
        kernel = await launcher.launch(
            connection, cwd=path.parent, ipython_dir=scratch / "ipython", stderr=stderr
        )
        # Imported here, on purpose: the kernel is already starting on the other core.
        from jupyter_client.asynchronous import AsyncKernelClient

        client = AsyncKernelClient(connection_file=str(connection))
        client.load_connection_file()
        client.start_channels(hb=False)
        left_behind: list[str] = []
        await asyncio.wait_for(_execute(client, kernel, cells, left_behind), timeout)
    except TimeoutError:
        failure = f"{path.name} did not finish within {timeout:.0f} s"
    except _KernelDied as died:
        log = stderr.read_text(errors="replace").strip() if stderr.exists() else ""
        failure = f"the kernel of {path.name} {died}" + (f":\n{log}" if log else "")
    finally:
        if kernel:
            await kernel.kill()
        if client:
            client.stop_channels()
        shutil.rmtree(scratch, ignore_errors=True)
    run = NotebookRun(path, cells, time.perf_counter() - started, failure)
    if failure is None:
        run.left_behind = left_behind
    return run


# ── Where kernels come from ──────────────────────────────────────────────────


class _Kernel(Protocol):
    returncode: int | None  # None while it runs

    async def kill(self) -> None: ...


class _Launcher(Protocol):
    async def launch(
        self, connection: Path, *, cwd: Path, ipython_dir: Path, stderr: Path
    ) -> _Kernel: ...

    async def close(self) -> None: ...


class _SpawnedKernel:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
        await self.process.wait()


class _Spawner:
    """Each kernel is its own `python -m ipykernel_launcher`: portable, pays every import."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    async def launch(
        self, connection: Path, *, cwd: Path, ipython_dir: Path, stderr: Path
    ) -> _SpawnedKernel:
        with stderr.open("wb") as log:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "ipykernel_launcher",
                "-f",
                str(connection),
                "--HistoryManager.enabled=False",
                cwd=cwd,
                env={**self.env, "IPYTHONDIR": str(ipython_dir)},
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=log,
            )
        return _SpawnedKernel(process)

    async def close(self) -> None:
        pass


class _ForkedKernel:
    def __init__(self, zygote: _Zygote, pid: int) -> None:
        self.zygote, self.pid = zygote, pid
        self.returncode: int | None = None
        self.ended = asyncio.Event()

    async def kill(self) -> None:
        if self.returncode is None:
            self.zygote.send({"kill": self.pid})
        await self.ended.wait()


class _Zygote:
    """The warm parent of `scripts/kernel_zygote.py`: one fork per kernel (Linux)."""

    PROGRAM = Path(__file__).with_name("kernel_zygote.py")

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.forks: deque[asyncio.Future[_ForkedKernel]] = deque()
        self.kernels: dict[int, _ForkedKernel] = {}
        self.reader: asyncio.Task[None] | None = None

    @classmethod
    async def start(cls, env: dict[str, str]) -> _Zygote:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(cls.PROGRAM),
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        zygote = cls(process)
        zygote.reader = asyncio.create_task(zygote._read())
        return zygote

    def send(self, order: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(order) + "\n").encode())

    async def launch(
        self, connection: Path, *, cwd: Path, ipython_dir: Path, stderr: Path
    ) -> _ForkedKernel:
        forked: asyncio.Future[_ForkedKernel] = asyncio.get_running_loop().create_future()
        self.forks.append(forked)
        paths = {"connection": connection, "cwd": cwd, "ipython_dir": ipython_dir, "stderr": stderr}
        self.send({"fork": {name: str(path) for name, path in paths.items()}})
        return await forked

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            message = json.loads(line)
            if "forked" in message:
                kernel = _ForkedKernel(self, message["forked"])
                self.kernels[kernel.pid] = kernel
                self.forks.popleft().set_result(kernel)
            elif "exited" in message:
                kernel = self.kernels.pop(message["exited"])
                kernel.returncode = message["code"]
                kernel.ended.set()
        # The warm parent is gone: every kernel it had is gone with it.
        for kernel in self.kernels.values():
            kernel.returncode = -9 if kernel.returncode is None else kernel.returncode
            kernel.ended.set()
        while self.forks:
            self.forks.popleft().set_exception(_KernelDied("could not start: no warm parent"))

    async def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        await self.process.wait()
        if self.reader:
            await self.reader


class _KernelDied(Exception):
    pass


async def _execute(
    client: Any, kernel: _Kernel, cells: list[CellRun], left_behind: list[str]
) -> None:
    """Send every cell, then read IOPub until the last cell (or the first failure) is idle;
    then wait for quiet and record in `left_behind` what the notebook leaves running."""
    await _wait_for_welcome(client, kernel)
    before = client.execute("", silent=True, store_history=False, user_expressions=_LEFT_BEHIND)
    by_message = {
        client.execute(cell.source, store_history=True, allow_stdin=False, stop_on_error=True): cell
        for cell in cells
    }
    pending = len(cells)
    while pending:
        message = await _next_iopub(client, kernel)
        cell = by_message.get(message["parent_header"].get("msg_id"))
        if cell is None:
            continue
        kind, content = message["msg_type"], message["content"]
        if kind == "stream":
            if content["name"] == "stdout":
                cell.stdout += content["text"]
            else:
                cell.stderr += content["text"]
        elif kind in ("execute_result", "display_data"):
            cell.shown.append(kind)
        elif kind == "clear_output":
            cell.cleared = True
        elif kind == "error":
            cell.error = _ANSI.sub("", "\n".join(content["traceback"]))
        elif kind == "status" and content["execution_state"] == "idle":
            pending -= 1
            if cell.error:
                return  # stop_on_error: the kernel aborts the cells after this one
    await _after_the_last_cell(client, kernel, before, cells[-1] if cells else None, left_behind)


async def _after_the_last_cell(
    client: Any, kernel: _Kernel, before: str, last: CellRun | None, left_behind: list[str]
) -> None:
    """What a reader of JupyterLab would still see after the last cell: output arriving
    within `QUIET_AFTER_LAST_CELL`, and threads or child processes still alive then."""
    from queue import Empty

    late: list[str] = []

    def note(message: dict[str, Any]) -> None:
        if message["msg_type"] == "stream":
            late.append(message["content"]["text"])
        elif message["msg_type"] in ("execute_result", "display_data", "clear_output"):
            late.append(f"[{message['msg_type']}]\n")

    deadline = time.monotonic() + QUIET_AFTER_LAST_CELL
    while (left := deadline - time.monotonic()) > 0:
        try:
            note(await client.get_iopub_msg(timeout=left))
        except Empty:
            break
    after = client.execute("", silent=True, store_history=False, user_expressions=_LEFT_BEHIND)
    replies = {}
    while len(replies) < 2:
        try:
            reply = await client.get_shell_msg(timeout=0.25)
        except Empty:
            if kernel.returncode is not None:
                raise _KernelDied(f"exited with code {kernel.returncode}") from None
            continue
        msg_id = reply["parent_header"].get("msg_id")
        if msg_id in (before, after):
            replies[msg_id] = reply["content"].get("user_expressions", {})
    # Output that arrived between the quiet wait and the question counts too: read IOPub up
    # to the question's own idle status.
    while True:
        message = await _next_iopub(client, kernel)
        note(message)
        if (
            message["msg_type"] == "status"
            and message["content"]["execution_state"] == "idle"
            and message["parent_header"].get("msg_id") == after
        ):
            break
    start, end = replies[before], replies[after]
    where = f" (after {last.describe()})" if last else ""
    if late:
        left_behind.append(
            f"output arrived after the last cell was idle{where}, which JupyterLab shows and "
            f"the page cannot:\n{''.join(late)}"
        )
    threads = _value(end, "threads") - _value(start, "threads")
    if threads:
        names = ", ".join(sorted(name for _, name in threads))
        left_behind.append(
            f"the notebook leaves threads running after its last cell{where}: {names}; "
            "whatever they print later reaches JupyterLab, not the page: join them"
        )
    children = _value(end, "children") - _value(start, "children")
    if children:
        left_behind.append(
            f"the notebook leaves {len(children)} child process(es) running after its last "
            f"cell{where}: wait for them (or kill them) before the notebook ends"
        )


def _value(expressions: dict[str, Any], name: str) -> set[Any]:
    """A user expression's value as a set (of tuples): `[(1, 'x')]` → `{(1, 'x')}`."""
    import ast

    result = expressions.get(name, {})
    if result.get("status") != "ok":
        return set()
    value = ast.literal_eval(result["data"]["text/plain"])
    return {tuple(item) if isinstance(item, list) else item for item in value}


async def _wait_for_welcome(client: Any, kernel: _Kernel) -> None:
    while (await _next_iopub(client, kernel))["msg_type"] != "iopub_welcome":
        pass


async def _next_iopub(client: Any, kernel: _Kernel) -> dict[str, Any]:
    from queue import Empty

    while True:
        try:
            return await client.get_iopub_msg(timeout=0.25)
        except Empty:
            if kernel.returncode is not None:
                raise _KernelDied(f"exited with code {kernel.returncode}") from None


def _write_connection_file(folder: Path) -> Path:
    """A connection file for IPC transport: sockets are files in `folder`, no TCP ports."""
    info = {
        "transport": "ipc",
        "ip": str(folder / "kernel"),
        "shell_port": 1,
        "iopub_port": 2,
        "stdin_port": 3,
        "control_port": 4,
        "hb_port": 5,
        "key": secrets.token_hex(16),
        "signature_scheme": "hmac-sha256",
        "kernel_name": "python3",
    }
    path = folder / "kernel.json"
    path.write_text(json.dumps(info), encoding="utf-8")
    return path
