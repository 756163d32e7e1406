"""The command line's `migrate`: move an open run to another agent's configuration from its
next step on (`synaptum_lite.migrate`), the agent named as `MODULE:NAME` the way a worker
imports it. And how `show` and `migrate` say what a migration changed, one field a line.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

from .. import Agent, MigrationRefused, MigrationStep, migrate
from .output import say
from .runview import Failure, Store, quoted, read_run


async def command_migrate(args: argparse.Namespace, store: Store, width: int) -> None:
    agent = load_agent(args.to)
    await read_run(store, args.run, check_held=False)  # a run not there: exit 3, as elsewhere
    try:
        migration = await migrate(store.checkpointer, args.run, agent, by=args.by)
    except MigrationRefused as exc:
        raise Failure(4, str(exc)) from None
    args.written = f"the migration ({migration.step_id}) was written"
    say(f"{args.run} {migration.step_id}: migrated by {migration.by}")
    for line in changes(migration):
        say(f"  {line}")
    say("the run goes on from its next step when the new agent runs it with the same run_id")


def load_agent(spec: str) -> Agent:
    """The agent `MODULE:NAME` names: an `Agent`, or a function of no arguments returning one.
    MODULE is imported as Python would from the current folder. Raises `Failure` (2)."""
    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        raise Failure(2, f"--to {spec!r} names no agent; give MODULE:NAME, e.g. agentes:cajero_v2")
    if "" not in sys.path:
        sys.path.insert(0, "")  # the operator's folder, where the worker's modules live
    try:
        found: Any = getattr(importlib.import_module(module_name), name)
    except ImportError as exc:
        problem = f"module {module_name!r} cannot be imported ({exc})"
        raise Failure(2, f"--to {spec!r}: {problem}") from None
    except AttributeError:
        raise Failure(2, f"--to {spec!r}: module {module_name!r} has no {name!r}") from None
    if callable(found) and not isinstance(found, Agent):
        found = found()
    if not isinstance(found, Agent):
        raise Failure(2, f"--to {spec!r} is a {type(found).__name__}, not an Agent")
    return found


def changes(migration: MigrationStep) -> list[str]:
    """What the migration changed, one field a line: `version: 'v1' → 'v2'`."""
    lines = []
    for field, (before, after) in migration.changed.items():
        if field == "tools":
            kinds = {
                "gone": sorted({*before} - {*after}),
                "new": sorted({*after} - {*before}),
                "redeclared": sorted({*before} & {*after}),
            }
            lines.append("tools: " + ", ".join(f"{k} {v}" for k, v in kinds.items() if v))
        else:
            lines.append(f"{field}: {_shown(before)} → {_shown(after)}")
    return lines


def _shown(value: Any) -> str:
    """A value as Python writes it, cut when long (instructions can be pages)."""
    if isinstance(value, str):
        return quoted(value)
    text = repr(value)
    return text if len(text) <= 64 else f"{text[:60]}… ({len(text)} characters)"
