"""Synaptum Lite: durable agent runs. Every model call and tool call is journaled, so a run
whose process dies resumes without paying for inference again or repeating an effect."""

from .agent import Agent, TextFragment
from .errors import (
    ConfigurationChanged,
    ConfigurationError,
    CorruptJournal,
    InvalidToolCall,
    JournalError,
    NothingToResolve,
    NotAJournal,
    ProviderError,
    ReplayDivergence,
    RunBusy,
    StepLimitExceeded,
    StoreUnavailable,
    SynaptumError,
    ToolDefinitionError,
    ToolResultNotSerializable,
    UncertainEffect,
    UnsupportedFormat,
)
from .events import FinalStep, ModelStep, Phase, Step, ToolStep
from .gateway import Gateway, LocalGateway
from .journal import Checkpointer, MemoryCheckpointer, RunState, load_events
from .messages import Message, ModelRequest, ModelResponse, Role, ToolCall, ToolResult, ToolSpec, Usage
from .session import RetryPolicy, Session
from .sqlite import SqliteCheckpointer
from .tools import Risk, Tool, ToolContext, tool

__all__ = [
    "Agent",
    "Checkpointer",
    "ConfigurationChanged",
    "ConfigurationError",
    "CorruptJournal",
    "FinalStep",
    "Gateway",
    "InvalidToolCall",
    "JournalError",
    "LocalGateway",
    "MemoryCheckpointer",
    "Message",
    "ModelRequest",
    "ModelResponse",
    "ModelStep",
    "NotAJournal",
    "NothingToResolve",
    "Phase",
    "ProviderError",
    "ReplayDivergence",
    "RetryPolicy",
    "Risk",
    "Role",
    "RunBusy",
    "RunState",
    "Session",
    "SqliteCheckpointer",
    "Step",
    "StepLimitExceeded",
    "StoreUnavailable",
    "SynaptumError",
    "TextFragment",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolDefinitionError",
    "ToolResult",
    "ToolResultNotSerializable",
    "ToolSpec",
    "ToolStep",
    "UncertainEffect",
    "UnsupportedFormat",
    "Usage",
    "load_events",
    "tool",
]
