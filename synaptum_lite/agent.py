"""The agent: a model, its instructions and its tools. What a run of it does is the loop
(`loop.py`); `Agent` is its configuration, and `run`/`stream` hand that to the loop."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from typing import Any

from .agent_arguments import check_limits, checked_parts
from .errors import ConfigurationError
from .events import Step
from .execution import Delegate, as_tool
from .loop import Plan, TextFragment, drive
from .messages import check_text
from .output import OutputFormat
from .prompt import Sampling, Template
from .session import Session
from .tools import Risk, Tool


class Agent:
    """A model, its instructions and its tools: what a run executes.

    `output`, a dataclass, asks for a typed answer: the final text is parsed into it, and an
    invalid answer is shown to the model in a new turn. `max_steps` bounds the model turns of
    one run. `max_tool_output` caps each tool result where it enters the context.
    `delegates` are sub-agents the model can call like tools (`description` is how this agent
    is presented when it is a delegate); each call is a durable step running a sub-run of
    its own. `instructions` may be a `Template` (named and versioned); `sampling` sets the
    model's temperature, top_p and seed on every request. `version` labels this configuration,
    so that a worker holding several versions resumes each run on the one that started it
    (`agent_for`). Everything but `max_steps` is the agent's *configuration*: a run refuses
    to resume under a different one, unless an operator migrated it there (`migrate`).
    """

    def __init__(
        self,
        name: str,
        *,
        model: str,
        instructions: str | Template,
        tools: Iterable[Tool] = (),
        output: type | None = None,
        max_steps: int = 25,
        max_tool_output: int | None = None,
        delegates: Iterable[Delegate] = (),
        description: str | None = None,
        version: str | None = None,
        sampling: Sampling | None = None,
    ) -> None:
        self.template = instructions if isinstance(instructions, Template) else None
        if isinstance(instructions, Template):
            instructions = instructions.render()
        tools_by_name, delegates_by_name = checked_parts(
            name,
            model=model,
            instructions=instructions,
            description=description,
            tools=tools,
            delegates=delegates,
        )
        if version is not None and (not isinstance(version, str) or not version.strip()):
            raise ConfigurationError(
                f"agent {name!r}: version must be None or a non-empty str, got {version!r:.80}"
            )
        self.name = name
        self.version = version
        if sampling is not None and not isinstance(sampling, Sampling):
            raise ConfigurationError(
                f"agent {name!r}: sampling must be None or a Sampling(temperature=..., "
                f"top_p=..., seed=...), got {sampling!r:.80}"
            )
        self.sampling = sampling
        self.model = model
        self.instructions = instructions
        self.tools: dict[str, Tool] = tools_by_name
        self.delegates: dict[str, Delegate] = delegates_by_name
        lines = instructions.strip().splitlines()
        self.description: str = description or (lines[0] if lines else "")
        self._output = OutputFormat(name, output)
        check_limits(name, max_steps, max_tool_output)
        self.output = output
        self.max_steps = max_steps
        self.max_tool_output = max_tool_output
        self._callable = {**self.tools, **{d.name: as_tool(d) for d in self.delegates.values()}}
        self._specs = tuple(t.spec for t in self._callable.values())
        # refused before anything is paid: a journal's header could not keep it
        check_text(
            f"agent {name!r}: its configuration (name, model, instructions, tools' descriptions)",
            json.dumps(self.configuration, ensure_ascii=False, default=repr),
        )

    def __repr__(self) -> str:
        version = f", version={self.version!r}" if self.version is not None else ""
        return f"Agent({self.name!r}{version}, model={self.model!r}, tools={list(self.tools)})"

    @property
    def configuration(self) -> dict[str, Any]:
        """What a journal records of the agent that started a run, and checks on resume."""
        # each only when given: journals of agents without them keep the header they had
        template = self.template and {"name": self.template.name, "version": self.template.version}
        sampling = self.sampling and self.sampling.to_json()
        return {
            "name": self.name,
            **({"version": self.version} if self.version is not None else {}),
            "model": self.model,
            **({"template": template} if template else {}),
            "instructions": self.instructions,
            **({"sampling": sampling} if sampling else {}),
            "tools": {name: t.fingerprint() for name, t in self.tools.items()},
            "output": self._output.schema,
            "max_tool_output": self.max_tool_output,
            "delegates": {name: d.configuration for name, d in self.delegates.items()},
        }

    @property
    def risk(self) -> Risk:
        """The highest risk of what this agent can do, through its tools and its delegates."""
        risks = [t.risk for t in self.tools.values()] + [d.risk for d in self.delegates.values()]
        return max(risks, default=Risk.READ)

    def run(self, task: str, *, session: Session) -> AsyncIterator[Step]:
        """Drive the run `session.run_id` on `task`, yielding each step once it is journaled.

        A new run starts; a journaled one resumes (completed steps are yielded as replayed and
        cost nothing); a closed one yields its final step only. A run waiting for a person
        yields the pending `ApprovalStep` and ends without a final step. Raises `RunBusy`,
        `ConfigurationChanged`, `ReplayDivergence`, `UncertainEffect`, `StepLimitExceeded`,
        and `ProviderError` once retries are exhausted.
        """
        return drive(self._plan(), task, session, streaming=False)

    def stream(self, task: str, *, session: Session) -> AsyncIterator[Step | TextFragment]:
        """Like `run`, with each new model step's text yielded as `TextFragment`s as it arrives.

        Closing the iterator (`aclose()`) stops the generation upstream. A replayed model step
        is yielded once, as its recorded result, without fragments.
        """
        return drive(self._plan(), task, session, streaming=True)

    def _plan(self) -> Plan:
        return Plan(
            name=self.name,
            model=self.model,
            instructions=self._output.instructions(self.instructions),
            configuration=self.configuration,
            tools=self._callable,
            delegates=self.delegates,
            output=self._output,
            specs=self._specs,
            max_steps=self.max_steps,
            max_tool_output=self.max_tool_output,
            sampling=self.sampling,
        )
