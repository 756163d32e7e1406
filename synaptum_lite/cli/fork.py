"""The command line's `fork`: a new run from a past step of another, said before it runs.

`synaptum-lite fork STORE RUN STEP NEW` starts run NEW with the steps of RUN before STEP (a
number, or an id as `show` lists it); `--answer TEXT` journals a person's answer at STEP (a
model step) in place of the model's. It prints what it copied and, before anything runs, the
calls to non-idempotent tools RUN made from STEP on: made again by NEW, each is a new, real
effect, under an idempotency key of its own.
"""

from __future__ import annotations

import argparse

from .. import ForkRefused, fork
from .output import say
from .runview import Failure, Store, quoted

#: `ForkRefused.reason` as an exit code (see `parser.EXIT_CODES`).
CODES = {"busy": 5, "no run": 3, "no step": 3, "taken": 2, "not a model step": 2}


async def command_fork(args: argparse.Namespace, store: Store, width: int) -> None:
    at: int | str = int(args.step) if args.step.isdigit() else args.step
    try:
        forked = await fork(
            store.checkpointer, args.run, at=at, new_run_id=args.new, answer=args.answer, by=args.by
        )
    except ForkRefused as exc:
        raise Failure(CODES.get(exc.reason, 1), str(exc)) from None
    args.written = f"run {args.new} was written"
    say(f"forked {args.run} at {forked.at} into {forked.run_id}: {forked.events} events")
    for sub_run in forked.sub_runs:
        say(f"  with its sub-run {sub_run}")
    if forked.replaced:
        say(f"  step {forked.at}: the answer of {args.by}, in place of the model's (no model call)")
    if forked.new_effects:
        say("made again by the fork, each of these is a new, real effect (a key of its own):")
    for effect in forked.new_effects:
        say(f"  {effect.step_id}  {effect.tool}  key {effect.original_key} → {effect.fork_key}")
    say(f"the fork goes on when its agent runs it with run_id {quoted(forked.run_id)}")
