"""Synaptum Lite: durable agent runs. Every model call and tool call is journaled, so a run
whose process dies resumes without paying for inference again or repeating an effect."""

import typing

from .agent import Agent
from .budget import Budget, BudgetExceeded, BudgetUnmeasured, Spent
from .checkpointer import Checkpointer, RunState, load_events
from .errors import (
    ConfigurationChanged,
    ConfigurationError,
    CorruptJournal,
    DamagedStore,
    InvalidToolCall,
    JournalError,
    LockFailed,
    McpServerLost,
    NotAJournal,
    NothingToResolve,
    ProviderError,
    RemoteAgentError,
    RemoteProtocolError,
    RemoteTaskLost,
    RemoteUnavailable,
    ReplayDivergence,
    RunBusy,
    StepLimitExceeded,
    StoreForbidden,
    StoreFull,
    StoreReplaced,
    StoreUnavailable,
    StoreUnreachable,
    SynaptumError,
    ToolDefinitionError,
    ToolResultNotSerializable,
    UncertainEffect,
    UnsupportedFormat,
)
from .events import (
    ApprovalStep,
    DelegationStep,
    FinalStep,
    MigrationStep,
    ModelStep,
    Phase,
    Step,
    ToolStep,
)
from .forking import Forked, ForkRefused, NewEffect, fork
from .gateway import Gateway, LocalGateway
from .loop import TextFragment
from .messages import (
    Message,
    ModelRequest,
    ModelResponse,
    Role,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
)
from .migration import MigrationRefused, VersionNotHeld, agent_for, migrate
from .policy import Action, Proposal, Verdict
from .prompt import Sampling, Template
from .session import RetryPolicy, Session
from .stores.memory import MemoryCheckpointer
from .tools import Risk, Tool, ToolContext, tool
from .usage import RunUsage, TurnUsage, run_usage

if typing.TYPE_CHECKING:  # loaded on first use by `__getattr__` below
    from .stores.postgres import PostgresCheckpointer
    from .stores.sqlite import SqliteCheckpointer

__all__ = [
    "Action",
    "Agent",
    "ApprovalStep",
    "Budget",
    "BudgetExceeded",
    "BudgetUnmeasured",
    "Checkpointer",
    "ConfigurationChanged",
    "ConfigurationError",
    "CorruptJournal",
    "DamagedStore",
    "DelegationStep",
    "FinalStep",
    "ForkRefused",
    "Forked",
    "Gateway",
    "InvalidToolCall",
    "JournalError",
    "LockFailed",
    "LocalGateway",
    "McpServerLost",
    "MemoryCheckpointer",
    "Message",
    "MigrationRefused",
    "MigrationStep",
    "ModelRequest",
    "ModelResponse",
    "ModelStep",
    "NewEffect",
    "NotAJournal",
    "NothingToResolve",
    "Phase",
    "PostgresCheckpointer",
    "Proposal",
    "ProviderError",
    "RemoteAgentError",
    "RemoteProtocolError",
    "RemoteTaskLost",
    "RemoteUnavailable",
    "ReplayDivergence",
    "RetryPolicy",
    "Risk",
    "Role",
    "RunBusy",
    "RunState",
    "RunUsage",
    "Sampling",
    "Session",
    "Spent",
    "SqliteCheckpointer",
    "Step",
    "StepLimitExceeded",
    "StoreForbidden",
    "StoreFull",
    "StoreReplaced",
    "StoreUnavailable",
    "StoreUnreachable",
    "SynaptumError",
    "Template",
    "TextFragment",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolDefinitionError",
    "ToolResult",
    "ToolResultNotSerializable",
    "ToolSpec",
    "ToolStep",
    "TurnUsage",
    "UncertainEffect",
    "UnsupportedFormat",
    "Usage",
    "Verdict",
    "VersionNotHeld",
    "agent_for",
    "fork",
    "load_events",
    "migrate",
    "run_usage",
    "tool",
]


def __getattr__(name: str) -> object:
    # The two file and server stores load when first asked for: in the browser (Pyodide)
    # sqlite3 is a package of its own, fetched only when a page uses SqliteCheckpointer, and
    # PostgreSQL is an optional extra.
    if name == "SqliteCheckpointer":
        from .stores.sqlite import SqliteCheckpointer

        return SqliteCheckpointer
    if name == "PostgresCheckpointer":
        from .stores.postgres import PostgresCheckpointer

        return PostgresCheckpointer
    raise AttributeError(f"module 'synaptum_lite' has no attribute {name!r}")
