"""Every exception the library raises, in one tree.

    SynaptumError                      base of everything raised on purpose
    ├── ConfigurationError             misuse: a bad argument, an undescribable tool
    │   ├── ToolDefinitionError        a tool signature that cannot become a JSON schema
    │   └── RecordingError             recorded HTTP exchanges unusable (in gateways.recording)
    │       ├── SecretInRecording      one holds a credential: never written, nor read back
    │       └── RecordingMismatch      a request is not the recorded one (in gateways.replay)
    ├── JournalError                   the journal cannot be used as asked
    │   ├── NotAJournal                the file is not a synaptum_lite journal
    │   ├── UnsupportedFormat          written by a newer format version
    │   ├── CorruptJournal             a record that cannot be decoded
    │   ├── DamagedStore               the store's file is damaged: nothing more is written to it
    │   ├── LockFailed                 the store cannot lock a run (not because it is held)
    │   ├── StoreForbidden             the store's server refuses what the journal needs
    │   ├── ForkRefused                a fork that cannot be made as asked (in forking)
    │   └── StoreUnavailable           the store went away (connection lost, disk error)
    │       ├── StoreFull              the disk holding the store is full
    │       ├── StoreUnreachable       it cannot be connected to at all (down, wrong URL)
    │       ├── StoreReplaced          the journal file was replaced or deleted under it
    │       └── StoreProtocolError     a store server answered what none does (in http_client)
    ├── RunBusy                        another driver holds the run
    ├── ConfigurationChanged           the agent differs from the one that started the run
    ├── VersionNotHeld                 no agent has the version a run runs on (in migration)
    ├── MigrationRefused               a run that cannot move to another agent (in migration)
    ├── ReplayDivergence               the journal holds another step at this position
    ├── UncertainEffect                a non-idempotent tool may or may not have run
    ├── ToolResultNotSerializable      a tool returned what cannot be journaled
    ├── StepLimitExceeded              the run reached `max_steps`
    ├── BudgetExceeded                 the run spent its `Budget` (in budget)
    ├── BudgetUnmeasured               its `Budget` cannot measure what it spent (in budget)
    ├── NothingToResolve               an operator decision that matches no pending step
    ├── RemoteAgentError               a remote agent (A2A) could not be used as asked
    │   ├── RemoteUnavailable          it cannot be reached: down, refusing, timing out
    │   ├── RemoteProtocolError        it answered what A2A 1.0 does not allow
    │   ├── RemoteTaskLost             it no longer knows a task it accepted
    │   └── RemoteTaskTimeout          its task did not end within `max_wait` (in a2a_wire)
    ├── McpServerLost                  an MCP server went away, or went silent, mid-call
    └── ProviderError                  a model provider failed (`retryable` says if retrying helps)

Failures caused by the model (a call to an unknown tool, unreadable arguments) or by a tool
(an exception it raised) are not exceptions of the caller: they become tool results that the
model reads in its next turn. `InvalidToolCall` is raised inside the loop and turned into such
a result; it never escapes `Agent.run`.

Constructing an exception has no side effects; every one carries the fields it names.
"""

from __future__ import annotations

from typing import Any


class SynaptumError(Exception):
    """Base class of every exception raised on purpose by synaptum_lite."""


class ConfigurationError(SynaptumError):
    """The library was called with something it cannot use."""


class ToolDefinitionError(ConfigurationError):
    """A function cannot be described to a model as a tool."""

    def __init__(self, tool: str, problem: str) -> None:
        self.tool, self.problem = tool, problem
        super().__init__(f"tool {tool!r} cannot be described to a model: {problem}")


class JournalError(SynaptumError):
    """The journal cannot be used as asked."""


class NotAJournal(JournalError):
    """The store exists but holds something else."""

    def __init__(self, location: str, detail: str) -> None:
        self.location, self.detail = location, detail
        super().__init__(
            f"{location} is not a synaptum_lite journal ({detail}); "
            "point the checkpointer at a new file or at a journal it wrote"
        )


class UnsupportedFormat(JournalError):
    """The journal was written by a newer version of the format."""

    def __init__(self, location: str, found: int, supported: int) -> None:
        self.location, self.found, self.supported = location, found, supported
        super().__init__(
            f"{location} uses journal format {found}, newer than the {supported} this "
            "synaptum_lite reads; upgrade synaptum_lite to open it (nothing was changed)"
        )


class CorruptJournal(JournalError):
    """A record exists but cannot be decoded. `seq` is None when it is the run's header."""

    def __init__(self, run_id: str, seq: int | None, detail: str) -> None:
        self.run_id, self.seq, self.detail = run_id, seq, detail
        what = "the run's header" if seq is None else f"journal record {seq}"
        super().__init__(
            f"run {run_id!r}: {what} cannot be decoded ({detail}); "
            "restore it from a backup or export the run and inspect the record"
        )


class DamagedStore(JournalError):
    """The store's file is damaged; nothing more is written to it.

    Runs whose records still read can be read and copied out (`synaptum_lite.stores.transfer`); a
    damaged run raises `CorruptJournal` naming it and the position.
    """

    def __init__(self, location: str, detail: str) -> None:
        self.location, self.detail = location, detail
        super().__init__(
            f"the journal store {location} is damaged ({detail}); nothing more is written to "
            "it: restore it from a backup, or copy the runs that still read into a new store "
            "with synaptum_lite.stores.transfer.copy_run"
        )


class LockFailed(JournalError):
    """The store could not lock a run for a reason other than another driver holding it."""

    def __init__(self, location: str, run_id: str, cause: str) -> None:
        self.location, self.run_id, self.cause = location, run_id, cause
        super().__init__(
            f"cannot lock run {run_id!r} in {location}: {cause}; nothing was run. The lock "
            "needs a local file system that supports file locks (not NFS without a lock "
            "service) and a file this process may open"
        )


class StoreUnavailable(JournalError):
    """The store cannot be reached; what was appended before stays appended."""

    condition = "is unavailable"
    remedy = "run the agent again with the same run_id once it is back"

    def __init__(self, location: str, detail: str) -> None:
        self.location, self.detail = location, detail
        super().__init__(
            f"the journal store {location} {self.condition} ({detail}); every event appended "
            f"before this is kept: {self.remedy}"
        )


class StoreFull(StoreUnavailable):
    """The disk holding the store is full (or the store reached the size it may have)."""

    condition = "cannot grow: its disk is full"
    remedy = "free space, then run the agent again with the same run_id"


class StoreUnreachable(StoreUnavailable):
    """The store could not be connected to at all: the server is down, or the address, the
    user, the password or the database is wrong (its message says which)."""

    condition = "cannot be reached"
    remedy = (
        "check that the server runs there and that the URL's host, port, user, password and "
        "database are right, then run the agent again with the same run_id"
    )


class StoreForbidden(JournalError):
    """The store's server refused what the journal needs: the user it connects as may not
    create or write its tables, or the server accepts no writes (a standby)."""

    def __init__(self, location: str, detail: str, remedy: str) -> None:
        self.location, self.detail = location, detail
        super().__init__(
            f"the journal store {location} refused the journal ({detail}); nothing was "
            f"written: {remedy}"
        )


class StoreReplaced(StoreUnavailable):
    """The journal file was replaced or deleted under a store that had it open."""

    def __init__(self, location: str, detail: str) -> None:
        self.location, self.detail = location, detail
        JournalError.__init__(
            self,
            f"the journal file {location} was replaced or deleted while this store had it "
            f"open ({detail}); restore the file that was moved away to go on from where this "
            "store was, or open the journal again to go on from what the file now holds",
        )


class RunBusy(SynaptumError):
    """Another driver holds the run: two workers must not drive one run at once."""

    def __init__(self, run_id: str, location: str) -> None:
        self.run_id, self.location = run_id, location
        super().__init__(
            f"run {run_id!r} is being driven by another worker ({location}); "
            "wait for it to finish or stop it, then run again with the same run_id "
            "(a lock dies with its owner, so a killed worker never blocks the resume)"
        )


class ConfigurationChanged(SynaptumError):
    """The agent resuming a run is not configured like the one the run runs on."""

    def __init__(self, run_id: str, changes: dict[str, tuple[Any, Any]]) -> None:
        self.run_id, self.changes = run_id, changes
        described = "; ".join(
            _tools_changed(*c) if n == "tools" else f"{n}: journaled {c[0]!r}, now {c[1]!r}"
            for n, c in changes.items()
        )
        super().__init__(
            f"run {run_id!r} runs on an agent configured differently ({described}); "
            "a journal never mixes two configurations: resume it on the agent that started it "
            "(agent_for), migrate it (synaptum-lite migrate), or start a new run_id"
        )

    @property
    def fields(self) -> list[str]:
        """The names of the fields that changed."""
        return list(self.changes)


def _tools_changed(before: list[str], after: list[str]) -> str:
    """The tools gone, new, and declared otherwise (a name in both lists), in words."""
    both = "declared otherwise (description, parameters, risk or idempotency)"
    kinds = {"gone": {*before} - {*after}, "new": {*after} - {*before}, both: {*before} & {*after}}
    return "tools: " + ", ".join(f"{k} {sorted(v)!r}" for k, v in kinds.items() if v)


class ReplayDivergence(SynaptumError):
    """The journal holds, at a position, a different step than the loop now produces."""

    def __init__(self, run_id: str, step_id: str, recorded: str, produced: str) -> None:
        self.run_id, self.step_id = run_id, step_id
        self.recorded, self.produced = recorded, produced
        super().__init__(
            f"run {run_id!r} diverges from its journal at step {step_id}: the journal "
            f"recorded {recorded}, the agent now produces {produced}; nothing was executed. "
            "Resume with the agent that started the run, or start a new run_id"
        )


class UncertainEffect(SynaptumError):
    """A non-idempotent tool step was attempted and never completed.

    The tool may or may not have had its effect. The runtime does not guess: an operator
    resolves it with `Session.record_result` (the effect is known) or `Session.allow_retry`.
    """

    def __init__(
        self, run_id: str, step_id: str, tool: str, arguments: dict[str, Any] | str
    ) -> None:
        self.run_id, self.step_id, self.tool, self.arguments = run_id, step_id, tool, arguments
        super().__init__(
            f"run {run_id!r}, step {step_id}: tool {tool!r} with arguments {arguments!r} "
            "was attempted and never completed, and it is not idempotent, so running it "
            "again could repeat its effect. Find out whether it happened, then call "
            "session.record_result(step_id, result, by=...) or session.allow_retry(step_id, by=...)"
        )


class ToolResultNotSerializable(SynaptumError):
    """A tool returned a value that cannot be journaled as JSON."""

    def __init__(
        self, run_id: str, step_id: str, tool: str, value_type: str, problem: str | None = None
    ) -> None:
        self.run_id, self.step_id, self.tool = run_id, step_id, tool
        self.value_type, self.problem = value_type, problem
        returned = f"a {value_type}" + (f" ({problem})" if problem else "")
        super().__init__(
            f"run {run_id!r}, step {step_id}: tool {tool!r} returned {returned}, which "
            "cannot be journaled; return str, a JSON value or a dataclass. The step stays "
            "attempted: on resume it runs again if idempotent, or is reported as uncertain"
        )


class StepLimitExceeded(SynaptumError):
    """The run reached its `max_steps` before the model gave a final answer."""

    def __init__(self, run_id: str, max_steps: int, last_step_id: str) -> None:
        self.run_id, self.max_steps, self.last_step_id = run_id, max_steps, last_step_id
        super().__init__(
            f"run {run_id!r} reached max_steps={max_steps} without a final answer; the "
            f"last journaled step is {last_step_id}. Raise max_steps and run the same "
            "run_id again to continue, or inspect the journal to see why the model loops"
        )


class NothingToResolve(SynaptumError):
    """An operator decision names a step that is not waiting for one."""

    def __init__(self, run_id: str, step_id: str, state: str) -> None:
        self.run_id, self.step_id, self.state = run_id, step_id, state
        super().__init__(
            f"run {run_id!r}, step {step_id} is {state}, so there is nothing to resolve; "
            "read the journal (load_events(checkpointer, run_id)) to find the pending step"
        )


#: How much of a value a message quotes: a model's or a server's value can be megabytes, and
#: a message is logged, journaled or sent back in every later request.
QUOTED = 200


def quoted(value: Any, *, as_repr: bool = True) -> str:
    """`value`'s repr (or the text `value`), cut to `QUOTED` characters, saying how long it
    was: a value in a message."""
    try:
        shown = repr(value) if as_repr else str(value)
    except RecursionError:
        return f"a {type(value).__name__} nested too deeply to show"
    if len(shown) <= QUOTED:
        return shown
    return f"{shown[:QUOTED]}… ({len(shown)} characters in all)"


class McpServerLost(SynaptumError):
    """An MCP server (`synaptum_lite.integrations.mcp`) went away, or did not answer, with a call
    in flight, or before it finished starting.

    Whether the call had its effect is unknown: its step stays attempted, never completed, and
    nothing is retried. `tool`, `arguments`, `run_id` and `step_id` name the call (all None
    when the server was starting); `detail` is what the SDK reported.
    """

    def __init__(
        self,
        server: str,
        detail: str,
        *,
        tool: str | None = None,
        arguments: dict[str, Any] | None = None,
        run_id: str | None = None,
        step_id: str | None = None,
    ) -> None:
        self.server, self.detail, self.tool, self.arguments = server, detail, tool, arguments
        self.run_id, self.step_id = run_id, step_id
        super().__init__(
            f"MCP server {server!r} went away during its start-up ({detail}); no tool was "
            "called: check its command and what it wrote to stderr, then connect again"
            if tool is None
            else f"MCP server {server!r} was lost during the call to tool {tool!r} (run "
            f"{run_id!r}, step {step_id}) with arguments {quoted(arguments)} ({detail}); whether "
            "the call had its effect is unknown, so nothing was retried and the step stays "
            "attempted. Start the server again and run the same run_id: an idempotent tool "
            "runs again, a non-idempotent one raises UncertainEffect for a person to resolve"
        )


class RemoteAgentError(SynaptumError):
    """A remote agent (`synaptum_lite.integrations.a2a`) could not be used as asked. Nothing was
    sent twice.

    `run_id` and `step_id` name the sub-run step that was waiting on it (None when the card
    was being read), `url` where it was asked, `problem` what went wrong, and `code` the
    JSON-RPC error code the server answered with, if it answered with one.
    """

    def __init__(
        self,
        agent: str,
        url: str,
        problem: str,
        *,
        run_id: str | None = None,
        step_id: str | None = None,
        code: int | None = None,
        then: str = "",
    ) -> None:
        self.agent, self.url, self.problem, self.code = agent, url, problem, code
        self.run_id, self.step_id = run_id, step_id
        where = f"run {run_id!r}, step {step_id}: " if run_id is not None else ""
        super().__init__(f"{where}remote agent {agent!r} at {url}: {problem}" + then)


class RemoteUnavailable(RemoteAgentError):
    """The remote agent cannot be reached (connection refused, timed out, HTTP 5xx)."""


class RemoteProtocolError(RemoteAgentError):
    """The remote agent answered something the A2A protocol (1.0, JSON-RPC) does not allow."""


class RemoteTaskLost(RemoteAgentError):
    """The remote agent no longer knows a task the journal says it accepted (`task_id`).

    Nothing is sent again on its own: a person finds out whether the work was done and
    records its answer with `Session.record_result` on the sub-run's waiting step.
    """

    def __init__(self, agent: str, url: str, task_id: str, *, run_id: str, step_id: str) -> None:
        self.task_id = task_id
        super().__init__(
            agent,
            url,
            f"it no longer knows task {task_id!r}, which it accepted and the journal keeps "
            "(TaskNotFoundError); the message was not sent again",
            run_id=run_id,
            step_id=step_id,
            then=(
                ". Find out whether the work was done, then record its answer with "
                f"Session({run_id!r}, ...).record_result({step_id!r}, answer, by=...), "
                "or start a new run_id to send the task anew"
            ),
        )


class InvalidToolCall(SynaptumError):
    """The model called a tool that does not exist or with arguments that do not fit.

    Raised and caught inside the loop: the model reads the message as the tool's result.
    """

    def __init__(self, tool: str, problem: str) -> None:
        self.tool, self.problem = tool, problem
        super().__init__(f"invalid call to tool {tool!r}: {problem}")


class ProviderError(SynaptumError):
    """A model provider failed. `retryable` is True for timeouts, 429 and 5xx."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.retryable, self.status, self.retry_after = retryable, status, retry_after
        super().__init__(message)
