"""The site's three diagrams, written as SVG from this source: nothing in them is drawn by hand.

    uv run python -m scripts.diagramas            # write docs/diagramas/*.svg (and copies)
    uv run python -m scripts.diagramas --check    # change nothing; exit 1 if a file differs

- `fases.svg`: the phases of a step and who moves each one (the loop, the runtime, a person),
  as the runtime does it: `observe` runs an agent through each case in memory (a process that
  dies between attempted and completed, one that stops iterating, a person's decisions, an
  approval) and the figure draws what the journal then holds and what a resume did; only the
  Spanish words are here, keyed by `Phase` and the core's kinds of steps, and a member without
  one stops the figure. Each box carries what it says as `data-*`, and `--check` compares
  that with the runtime (`phase_problems`), so a figure drawn wrong is caught even when the
  script drew it;
- `costuras.svg`: the two seams (gateway, checkpointer) and which notebook touches what there,
  found by reading each notebook's code (and its helper scripts), not listed by hand;
- `fila.svg`: one row of a SQLite journal, made by really journaling a step in a throwaway
  file and reading the row back with `sqlite3`.

The pages include the files inline (`--8<--`), so their CSS follows the site's light and dark
schemes: colours come from Material's variables (`--md-default-fg-color`, …), with a fallback
for a file opened on its own, and the one colour of their own (a person's arrows) has a value
for each scheme (`[data-md-color-scheme="slate"]`). A test regenerates them and compares bytes
(tests/docs/test_diagramas.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import re
import sqlite3
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

from synaptum_lite import (
    Agent,
    ApprovalStep,
    FinalStep,
    MemoryCheckpointer,
    ModelStep,
    Phase,
    Proposal,
    Session,
    Step,
    ToolStep,
    UncertainEffect,
    Verdict,
    load_events,
    tool,
)
from synaptum_lite.events import KINDS
from synaptum_lite.testing import ScriptedGateway, calls, says

REPO = Path(__file__).resolve().parents[1]
FOLDER = REPO / "docs" / "diagramas"
NOTEBOOKS = REPO / "notebooks" / "propiedades"
#: The same files beside the notebooks that show them (05, 16): JupyterLab opened on
#: notebooks/propiedades, as the README opens it, serves nothing above that folder.
COPIES = NOTEBOOKS / "figuras"

# ── drawing ──────────────────────────────────────────────────────────────────────────────────

#: CSS shared by the three figures, as (selector, declarations); `{p}` is each figure's
#: prefix, so two figures on one page never share a class by accident.
_FONT = "var(--md-text-font-family, sans-serif)"
_CODE = "var(--md-code-font-family, monospace)"
_FG = "var(--md-default-fg-color, #222)"
_LIGHT = "var(--md-default-fg-color--light, #666)"
_PRIMARY = "var(--md-primary-fg-color, #3f51b5)"
_LINK = "var(--md-typeset-a-color, #5e8bde)"
_RULES = (
    (".{p}-t", f"fill: {_FG}; font: 13px {_FONT};"),
    (".{p}-b", f"fill: {_FG}; font: bold 13px {_FONT};"),
    (".{p}-c", f"fill: {_FG}; font: 12px {_CODE};"),
    (".{p}-n", f"fill: {_LIGHT}; font: 12px {_FONT};"),
    (".{p}-caja", f"fill: var(--md-default-bg-color, #fff); stroke: {_LIGHT}; stroke-width: 1.5;"),
    (".{p}-bucle", f"fill: none; stroke: {_PRIMARY}; stroke-width: 2;"),
    (".{p}-runtime", f"fill: none; stroke: {_LIGHT}; stroke-width: 2; stroke-dasharray: 6 4;"),
    (".{p}-persona", "fill: none; stroke: #c2410c; stroke-width: 2.5; stroke-dasharray: 2 3;"),
    (".{p}-punta-bucle", f"fill: {_PRIMARY};"),
    (".{p}-punta-runtime", f"fill: {_LIGHT};"),
    (".{p}-punta-persona", "fill: #c2410c;"),
    (".{p}-raya", "stroke: var(--md-default-fg-color--lighter, #bbb); stroke-width: 1;"),
    # the figure scrolls inside itself on a phone instead of shrinking its text to nothing
    (".md-typeset figure.diagrama", "width: 100%; overflow-x: auto;"),
    (".md-typeset figure.diagrama > svg", "width: 100%; min-width: 560px; height: auto;"),
    # the dark scheme: the primary colour is too dark on slate; a person's orange, lighter
    ('[data-md-color-scheme="slate"] .{p}-bucle', f"stroke: {_LINK};"),
    ('[data-md-color-scheme="slate"] .{p}-punta-bucle', f"fill: {_LINK};"),
    ('[data-md-color-scheme="slate"] .{p}-persona', "stroke: #fdba74;"),
    ('[data-md-color-scheme="slate"] .{p}-punta-persona', "fill: #fdba74;"),
)


def _style(prefix: str) -> str:
    return "\n".join(f"{selector.format(p=prefix)} {{ {rule} }}" for selector, rule in _RULES)


WHO = ("bucle", "runtime", "persona")


class Figure:
    """An SVG document built element by element, in the order they are drawn."""

    def __init__(self, prefix: str, width: int, height: int, title: str, desc: str) -> None:
        self.p = prefix
        self.width, self.height = width, height
        self.parts: list[str] = []
        self.title, self.desc = title, desc

    def text(self, x: float, y: float, words: str, style: str = "t", anchor: str = "") -> None:
        where = f' text-anchor="{anchor}"' if anchor else ""
        self.parts.append(
            f'<text class="{self.p}-{style}" x="{x:g}" y="{y:g}"{where}>{escape(words)}</text>'
        )

    def lines(self, x: float, y: float, rows: Iterable[tuple[str, str]], step: int = 17) -> None:
        """Several lines of text, each `(style, words)`, from baseline `y` down."""
        for n, (style, words) in enumerate(rows):
            self.text(x, y + n * step, words, style)

    def box(self, x: float, y: float, w: float, h: float, **facts: str) -> None:
        """A box; `facts` are what it says about the runtime, as `data-*` attributes that the
        check compares with the runtime (`phase_problems`)."""
        data = "".join(f' data-{name}="{escape(value)}"' for name, value in facts.items())
        self.parts.append(
            f'<rect class="{self.p}-caja" x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" '
            f'rx="6"{data}/>'
        )

    def rule(self, x1: float, y1: float, x2: float, y2: float) -> None:
        self.parts.append(
            f'<line class="{self.p}-raya" x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}"/>'
        )

    def arrow(self, who: str, *points: tuple[float, float]) -> None:
        """A line through `points` drawn in `who`'s style, with its head at the last point."""
        assert who in WHO, who
        path = " ".join(f"{x:g},{y:g}" for x, y in points)
        self.parts.append(f'<polyline class="{self.p}-{who}" points="{path}"/>')
        (x1, y1), (x2, y2) = points[-2], points[-1]
        length = ((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5
        ux, uy = (x2 - x1) / length, (y2 - y1) / length
        back = (x2 - 10 * ux, y2 - 10 * uy)
        left = (back[0] - 5 * uy, back[1] + 5 * ux)
        right = (back[0] + 5 * uy, back[1] - 5 * ux)
        head = " ".join(f"{round(x, 1):g},{round(y, 1):g}" for x, y in ((x2, y2), left, right))
        self.parts.append(f'<polygon class="{self.p}-punta-{who}" points="{head}"/>')

    def legend(self, y: float) -> None:
        """Who moves what: one sample line per mover."""
        labels = {
            "bucle": "lo escribe el bucle",
            "runtime": "lo escribe el runtime, solo",
            "persona": "lo decide una persona",
        }
        x = 0.0
        for who in WHO:
            self.arrow(who, (x, y - 4), (x + 40, y - 4))
            self.text(x + 48, y, labels[who], "n")
            x += 240

    def svg(self) -> str:
        p = self.p
        head = (
            f'<svg viewBox="0 0 {self.width} {self.height}" role="img" '
            f'aria-labelledby="{p}-titulo {p}-desc" xmlns="http://www.w3.org/2000/svg">'
        )
        body = [
            head,
            f'<title id="{p}-titulo">{escape(self.title)}</title>',
            f'<desc id="{p}-desc">{escape(self.desc)}</desc>',
            "<style>",
            _style(p),
            "</style>",
            *self.parts,
            "</svg>",
        ]
        # no blank line anywhere: Markdown would end the HTML block there
        return "\n".join(line for line in body if line.strip()) + "\n"


# ── (a) the phases of a step: the rules, as the runtime applies them ─────────────────────────

#: The Spanish name of each phase, keyed by the core's enum (`synaptum_lite.Phase`): a phase
#: without one stops the figure, so a new phase is never silently missing from it.
PHASE_LABELS: dict[Phase, str] = {
    Phase.ATTEMPTED: "intentado",
    Phase.COMPLETED: "completado",
    Phase.RESOLVED: "resuelto",
}
#: The Spanish name of each kind of step, keyed by the core's table of kinds (`KINDS`).
KIND_LABELS: dict[str, str] = {
    "model": "un paso de modelo",
    "tool": "una herramienta",
    "delegate": "una delegación",
    "approval": "una aprobación",
    "migration": "una migración",
    "final": "el paso final",
}
#: The cases a resume can find a step in, as the figure names them (Spanish).
CASES = {
    "model": "un paso de modelo",
    "idempotent": "una herramienta idempotente",
    "not_idempotent": "una herramienta no idempotente",
}
#: What a resume does, as observed (the keys `observe` uses), and how the figure says it.
OUTCOMES = {
    "repeats": "se ejecuta otra vez",
    "uncertain": "el runtime no adivina",
    "replays": "sigue con el resultado apuntado",
    "suspends": "el run se suspende",
}


class FigureError(Exception):
    """The figure cannot say what the runtime does: a label is missing, or a rule changed."""


def phase_label(phase: Phase) -> str:
    if phase not in PHASE_LABELS:
        raise FigureError(
            f"scripts/diagramas.py has no Spanish label for Phase.{phase.name} "
            f"({phase.value!r}): add it to PHASE_LABELS, and draw the phase in fases.svg"
        )
    return PHASE_LABELS[phase]


def kind_label(kind: str) -> str:
    if kind not in KIND_LABELS:
        raise FigureError(
            f"scripts/diagramas.py has no Spanish label for the kind of step {kind!r} "
            "(synaptum_lite.events.KINDS): add it to KIND_LABELS"
        )
    return KIND_LABELS[kind]


@dataclass(frozen=True)
class Decision:
    """An event written about a step by someone other than the loop, as the journal holds it."""

    phase: Phase
    action: str  # the decision's `action` (tool steps), or what `decide` answered (approvals)
    by: str  # "runtime", or the person who decided


@dataclass(frozen=True)
class Rules:
    """What the runtime does, observed by running it: nothing here is typed in this script."""

    order: tuple[Phase, ...]  # a step's phases as the loop journals them, first to last
    after_crash: dict[str, tuple[str, int | None]]  # case → (outcome, attempt of the rerun)
    uncertain_error: str  # what a resume raises on an uncertain step
    not_started: Decision  # the runtime's own event when iteration stops before the tool
    after_not_started: str  # outcome
    record: Decision  # Session.record_result
    after_record: str
    retry: Decision  # Session.allow_retry
    after_retry: str
    approval: Phase  # the request's phase
    after_approval: str
    granted: Decision  # Session.decide(granted=True)
    denied: Decision  # Session.decide(granted=False)
    not_now: Decision  # Session.decide(granted=False, final=False)
    kinds: tuple[str, ...]  # every kind of step the core journals

    def phases_shown(self) -> set[Phase]:
        decided = (self.not_started, self.record, self.retry, self.granted, self.not_now)
        return {*self.order, self.approval, *(d.phase for d in decided)}


PERSON = "ana"
TRANSFER = "Transfiere 100 € a ES91."


class _Store(MemoryCheckpointer):
    """A run's store whose process can die: once `die()` is called, nothing more reaches it,
    so the journal ends where a SIGKILL would end it (what the runtime would write on its way
    out is lost; notebooks 05 and 06 show the same with a real process and a real kill). A
    resume is then a new driver on the same store: `revive()`."""

    dead = False

    def die(self) -> bool:
        self.dead = True
        return True

    def revive(self) -> None:
        self.dead = False

    async def append(self, run_id: str, events: Any) -> int:
        if self.dead:
            raise OSError("the process died")
        return await super().append(run_id, events)


class _Bank:
    """One agent with one tool that moves money, and the record of each time the tool ran."""

    def __init__(self, *, idempotent: bool, approval: bool = False) -> None:
        self.done: list[str] = []
        self.approval = approval
        self.raised = ""  # the name of what a resume raised

        @tool(idempotent=idempotent)
        def transferir(cuenta: str) -> str:
            """Transfiere 100 € a una cuenta."""
            self.done.append(cuenta)
            return "hecho"

        self.tool = transferir
        self.agent = Agent("banco", model="guion", instructions="Transfiere.", tools=[transferir])
        self.store = _Store()

    def _policy(self, proposal: Proposal) -> Verdict:
        if self.approval and proposal.kind == "tool":
            return Verdict.require_approval("mueve dinero")
        return Verdict.allow()

    def session(self, run_id: str, *, answered: bool = False) -> Session:
        """A session on the run; `answered`: the model already asked for the tool (journaled),
        so the script holds only the answer that follows it."""
        script = (
            [says("Hecho.")] if answered else [calls("transferir", cuenta="ES91"), says("Hecho.")]
        )
        gateway = ScriptedGateway(script, tools=[self.tool], policy=self._policy)
        return Session(run_id, gateway, self.store, clock=lambda: _NOON)

    async def drive(self, session: Session, stop: Any = None) -> list[Step]:
        """The run until `stop(step)` is true for a step (included), or to its end."""
        seen: list[Step] = []
        async with contextlib.aclosing(self.agent.run(TRANSFER, session=session)) as steps:  # type: ignore[type-var]
            async for step in steps:
                seen.append(step)
                if stop is not None and stop(step):
                    break
        return seen

    def dies_at(self, kind: type[Step]) -> Any:
        """Stop at the attempted event of a `kind` step, the process dying there."""
        attempted = _attempted(kind)
        return lambda step: attempted(step) and self.store.die()

    async def events(self, run_id: str) -> list[Step]:
        return [
            e
            for e in await load_events(self.store, run_id)
            if isinstance(e, (ToolStep, ApprovalStep))
        ]

    async def last_decision(self, run_id: str) -> Decision:
        event = (await self.events(run_id))[-1]
        decision: dict[str, Any] = dict(getattr(event, "decision", None) or {})
        action = decision.get("action") or ("granted" if decision.get("granted") else "denied")
        return Decision(event.phase, str(action), str(decision.get("by")))


def _attempted(kind: type[Step]) -> Any:
    return lambda step: isinstance(step, kind) and step.phase is Phase.ATTEMPTED


async def _after_resume(bank: _Bank, run_id: str, *, answered: bool) -> tuple[str, int | None]:
    """What a resume does with the step it finds unfinished: `repeats` it (and which attempt
    that is), `replays` its recorded result, stops on an `uncertain` one, or `suspends`."""
    ran = len(bank.done)
    try:
        steps = await bank.drive(bank.session(run_id, answered=answered))
    except UncertainEffect as exc:
        bank.raised = type(exc).__name__
        return "uncertain", None
    if not any(isinstance(step, FinalStep) for step in steps):
        return "suspends", None
    again = [s for s in steps if not s.replayed and s.phase is Phase.ATTEMPTED and s.attempt > 1]
    if again:
        return "repeats", again[0].attempt
    assert len(bank.done) == ran, "a step neither repeated nor replayed ran its tool"
    return "replays", None


async def _observe() -> Rules:
    # a run to its end: the order in which the loop journals a tool step's phases
    bank = _Bank(idempotent=True)
    await bank.drive(bank.session("entero"))
    order = tuple(dict.fromkeys(event.phase for event in await bank.events("entero")))

    # the process dies between attempted and completed, in each case
    after_crash = {}
    for case, idempotent, kind in (
        ("model", True, ModelStep),
        ("idempotent", True, ToolStep),
        ("not_idempotent", False, ToolStep),
    ):
        bank = _Bank(idempotent=idempotent)
        await bank.drive(bank.session(case), bank.dies_at(kind))
        bank.store.revive()
        after_crash[case] = await _after_resume(bank, case, answered=kind is ToolStep)
    uncertain_error = bank.raised

    # iteration stops at the attempted event of a tool that is not idempotent
    bank = _Bank(idempotent=False)
    await bank.drive(bank.session("parado"), _attempted(ToolStep))
    not_started = await bank.last_decision("parado")
    after_not_started = (await _after_resume(bank, "parado", answered=True))[0]

    # a person resolves an uncertain step, one way or the other
    decided = {}
    for method in (Session.record_result, Session.allow_retry):
        bank = _Bank(idempotent=False)
        run_id = method.__name__
        await bank.drive(bank.session(run_id), bank.dies_at(ToolStep))
        bank.store.revive()
        session = bank.session(run_id, answered=True)
        pending = (await bank.events(run_id))[-1].step_id
        if method is Session.record_result:
            await session.record_result(pending, "hecho", by=PERSON)
        else:
            await session.allow_retry(pending, by=PERSON)
        event = await bank.last_decision(run_id)
        decided[run_id] = (event, (await _after_resume(bank, run_id, answered=True))[0])

    # an approval: the request, and each answer a person can give
    answers = {}
    for name, granted, final in (
        ("granted", True, True),
        ("denied", False, True),
        ("not_now", False, False),
    ):
        bank = _Bank(idempotent=False, approval=True)
        steps = await bank.drive(bank.session(name))
        request = steps[-1]
        after_approval = "suspends" if not any(isinstance(s, FinalStep) for s in steps) else "ends"
        session = bank.session(name)
        await session.decide(request.step_id, granted=granted, by=PERSON, final=final)
        answers[name] = await bank.last_decision(name)

    return Rules(
        order=order,
        after_crash=after_crash,
        uncertain_error=uncertain_error,
        not_started=not_started,
        after_not_started=after_not_started,
        record=decided["record_result"][0],
        after_record=decided["record_result"][1],
        retry=decided["allow_retry"][0],
        after_retry=decided["allow_retry"][1],
        approval=request.phase,
        after_approval=after_approval,
        granted=answers["granted"],
        denied=answers["denied"],
        not_now=answers["not_now"],
        kinds=tuple(KINDS),
    )


_NOON = datetime(2026, 1, 1, 12, tzinfo=UTC)


@functools.cache
def observe() -> Rules:
    """The rules of a resume, found by running the runtime through each case (in memory)."""
    return asyncio.run(_observe())


def _who(decision: Decision) -> str:
    """Who writes a decision, as the figure's arrows say it."""
    return "runtime" if decision.by == "runtime" else "persona"


def _phase_lines(phase: Phase, *more: tuple[str, str]) -> list[tuple[str, str]]:
    return [("b", phase_label(phase)), ("c", phase.value), *more]


def _cases(rules: Rules, outcome: str) -> list[str]:
    return [case for case, (did, _) in rules.after_crash.items() if did == outcome]


def _says(rules: Rules, outcome: str) -> str:
    """What the figure says a resume does, refused when it is not what the runtime did."""
    if outcome not in OUTCOMES:
        raise FigureError(f"a resume now {outcome!r}s: say it in OUTCOMES, and in fases.svg")
    return OUTCOMES[outcome]


def phases(rules: Rules | None = None) -> str:
    rules = rules or observe()
    for kind in rules.kinds:
        kind_label(kind)  # every kind the core journals has a name here
    missing = set(Phase) - rules.phases_shown()
    if missing:
        raise FigureError(
            "the runtime writes no event with phase "
            + ", ".join(f"Phase.{p.name}" for p in sorted(missing, key=list(Phase).index))
            + " in the cases fases.svg draws: draw the case that writes it"
        )
    for phase in Phase:
        phase_label(phase)
    if rules.granted.phase != rules.denied.phase:
        raise FigureError("fases.svg draws a granted and a denied approval in one box")
    first, then = rules.order
    repeats, uncertain = _cases(rules, "repeats"), _cases(rules, "uncertain")
    attempts = " o ".join(sorted({str(rules.after_crash[case][1]) for case in repeats}))
    ns, record, retry = rules.not_started, rules.record, rules.retry
    granted, denied, not_now = rules.granted, rules.denied, rules.not_now
    f = Figure(
        "fas",
        760,
        577,
        "Las fases de un paso y quién lo mueve de una a otra",
        f"El bucle escribe el paso {phase_label(first)} antes del trabajo y {phase_label(then)} "
        "después. Si el proceso muere en medio, al reanudar el bucle repite "
        + " y ".join(CASES[case] for case in repeats)
        + "; "
        + " y ".join(CASES[case] for case in uncertain)
        + f" queda incierta ({rules.uncertain_error}) y una persona la resuelve con "
        f"record_result ({phase_label(record.phase)}) o allow_retry "
        f"({phase_label(retry.phase)}). Si quien itera deja de iterar antes de que la "
        f"herramienta empiece, el runtime escribe {phase_label(ns.phase)}, {ns.action}. Una "
        "aprobación pendiente la cierra una persona con decide. Tipos de paso: "
        + ", ".join(kind_label(kind) for kind in rules.kinds)
        + ".",
    )
    # row 1: the normal life of a step, in the order the loop journals it
    f.box(0, 20, 150, 48)
    f.lines(12, 41, [("b", "sin rastro"), ("n", "nada en el journal")])
    f.box(300, 20, 150, 48, fase=first.value, ciclo="1")
    f.lines(312, 41, _phase_lines(first))
    f.box(600, 20, 160, 48, fase=then.value, ciclo="2")
    f.lines(612, 41, _phase_lines(then))
    f.arrow("bucle", (150, 44), (300, 44))
    f.lines(158, 30, [("n", "antes del trabajo")])
    f.arrow("bucle", (450, 44), (600, 44))
    f.lines(458, 30, [("n", "después del trabajo")])

    # row 2: what a resume finds between the two
    f.text(0, 145, f"entre {phase_label(first)} y {phase_label(then)}:", "n")
    f.arrow("bucle", (340, 68), (120, 170))
    f.arrow("bucle", (375, 68), (375, 170))
    f.arrow(_who(ns), (410, 68), (640, 170))
    f.text(255, 100, "el proceso muere", "n", "end")
    f.text(383, 125, "el proceso muere", "n")
    f.text(530, 110, "se deja de iterar ahí", "n")
    f.box(0, 170, 240, 109, casos=" ".join(repeats), hace="repeats")
    f.lines(
        10,
        190,
        [
            ("b", "se repite"),
            *(("n", CASES[case]) for case in repeats),
            ("n", f"al reanudar, {_says(rules, 'repeats')}"),
            ("n", f"(intento {attempts})"),
        ],
    )
    f.box(260, 170, 230, 109, casos=" ".join(uncertain), hace="uncertain")
    f.lines(
        270,
        190,
        [
            ("b", "incierto"),
            *(("n", CASES[case] + ":") for case in uncertain),
            ("n", f"al reanudar, {rules.uncertain_error};"),
            ("n", _says(rules, "uncertain")),
        ],
    )
    f.box(
        510, 170, 250, 109,
        fase=ns.phase.value, accion=ns.action, por=_who(ns), hace=rules.after_not_started,
    )  # fmt: skip
    f.lines(
        520,
        190,
        [
            ("b", f"{phase_label(ns.phase)} · no empezada"),
            ("c", f"{ns.phase.value} · {ns.action}"),
            ("n", "la herramienta no llegó a empezar:"),
            ("n", f"al reanudar, {_says(rules, rules.after_not_started)}"),
            ("n", "sin preguntar a nadie"),
        ],
    )

    # row 3: a person resolves the uncertain step
    f.arrow(_who(record), (330, 279), (170, 347))
    f.arrow(_who(retry), (420, 279), (580, 347))
    f.text(235, 307, Session.record_result.__name__, "c", "end")
    f.text(515, 307, Session.allow_retry.__name__, "c")
    f.box(
        40, 347, 260, 74,
        fase=record.phase.value, accion=record.action, por=_who(record), hace=rules.after_record,
    )  # fmt: skip
    f.lines(
        50,
        367,
        [
            ("b", f"{phase_label(record.phase)} · {record.action}"),
            ("n", "el efecto ocurrió: al reanudar,"),
            ("n", _says(rules, rules.after_record)),
        ],
    )
    f.box(
        460, 347, 260, 74,
        fase=retry.phase.value, accion=retry.action, por=_who(retry), hace=rules.after_retry,
    )  # fmt: skip
    f.lines(
        470,
        367,
        [
            ("b", f"{phase_label(retry.phase)} · {retry.action}"),
            ("n", "no ocurrió: al reanudar,"),
            ("n", f"{_says(rules, rules.after_retry)} (intento + 1)"),
        ],
    )

    # row 4: an approval
    f.rule(0, 441, 760, 441)
    f.box(
        0, 457, 200, 74,
        fase=rules.approval.value, paso=ApprovalStep.kind, hace=rules.after_approval,
    )  # fmt: skip
    f.lines(
        10,
        477,
        [
            ("b", "aprobación pendiente"),
            ("n", f"{ApprovalStep.__name__} {phase_label(rules.approval)}:"),
            ("n", _says(rules, rules.after_approval)),
        ],
    )
    f.arrow(_who(granted), (200, 479), (300, 479))
    f.arrow(_who(not_now), (200, 515), (520, 515))
    f.text(250, 469, Session.decide.__name__, "c", "middle")
    f.box(
        300, 457, 200, 48,
        fase=granted.phase.value, accion=f"{granted.action} {denied.action}", por=_who(granted),
    )  # fmt: skip
    f.lines(310, 477, [("b", phase_label(granted.phase)), ("n", "concedida, o denegada")])
    f.box(520, 491, 240, 48, fase=not_now.phase.value, accion="not_now", por=_who(not_now))
    f.lines(530, 511, [("b", phase_label(not_now.phase)), ("n", "«ahora no» (final=False)")])

    f.legend(565)
    return f.svg()


_BOX = re.compile(r'<rect class="fas-caja" x="([\d.]+)"[^>]*?((?: data-[a-z]+="[^"]*")+)/>')


def drawn_facts(svg: str) -> list[dict[str, str]]:
    """What each box of fases.svg says about the runtime (its `data-*`), with its `x`."""
    return [
        {"x": x, **dict(re.findall(r'data-([a-z]+)="([^"]*)"', data))}
        for x, data in _BOX.findall(svg)
    ]


def phase_problems(svg: str, rules: Rules | None = None) -> list[str]:
    """Where fases.svg says something else than what the runtime does now."""
    rules = rules or observe()
    boxes = drawn_facts(svg)
    found = []
    cycle = [Phase(b["fase"]) for b in sorted(boxes, key=lambda b: float(b["x"])) if "ciclo" in b]
    if tuple(cycle) != rules.order:
        found.append(
            "fases.svg draws a step's phases in the order "
            + " → ".join(p.value for p in cycle)
            + "; the runtime journals them "
            + " → ".join(p.value for p in rules.order)
        )
    shown = {b["fase"] for b in boxes if "fase" in b}
    for phase in Phase:
        if phase.value not in shown:
            found.append(f"fases.svg does not draw Phase.{phase.name} ({phase.value!r})")
    decisions = {
        rules.not_started.action: (rules.not_started, rules.after_not_started),
        rules.record.action: (rules.record, rules.after_record),
        rules.retry.action: (rules.retry, rules.after_retry),
    }
    cases_drawn = set()
    for b in boxes:
        for case in b.get("casos", "").split():
            cases_drawn.add(case)
            did = rules.after_crash.get(case, ("nothing: no such case", None))[0]
            if did != b["hace"]:
                found.append(
                    f"fases.svg says a resume after a crash {b['hace']} {case!r}; the runtime {did}"
                )
        if b.get("accion") in decisions:
            decision, after = decisions[b["accion"]]
            drawn = (b["fase"], b["por"], b["hace"])
            runtime = (decision.phase.value, _who(decision), after)
            if drawn != runtime:
                found.append(
                    f"fases.svg says {b['accion']!r} is written as (phase, by, then a resume) "
                    f"{drawn}; the runtime: {runtime}"
                )
        answered = {
            f"{rules.granted.action} {rules.denied.action}": rules.granted.phase,
            "not_now": rules.not_now.phase,
        }
        if b.get("accion") in answered and b["fase"] != answered[b["accion"]].value:
            found.append(
                f"fases.svg says decide writes {b['accion']!r} as {b['fase']}; the runtime "
                f"writes {answered[b['accion']].value}"
            )
        if b.get("paso") == ApprovalStep.kind and (b["fase"], b["hace"]) != (
            rules.approval.value,
            rules.after_approval,
        ):
            found.append(
                f"fases.svg says an approval request is {b['fase']} and the run then "
                f"{b['hace']}; the runtime: {rules.approval.value}, {rules.after_approval}"
            )
    for case in rules.after_crash:
        if case not in cases_drawn:
            found.append(f"fases.svg does not say what a resume does with {CASES[case]}")
    return found


# ── (b) the two seams ────────────────────────────────────────────────────────────────────────

#: What a notebook does at each seam, and the code that shows it does it (read from the
#: notebook's code cells and its helper scripts, `_*_NN.py`).
GATEWAY_TOUCHES = (
    ("un guion o un modelo de verdad", r"(?<![\w.])gateway\(|comun\.gateway\(|ScriptedGateway[()]"),
    ("una política: denegar, aprobar, terminar", r"\bpolicy="),
    ("fragmentos del stream", r"\.stream\("),
    ("errores del proveedor y reintentos", r"\bProviderError\b"),
)
CHECKPOINTER_TOUCHES = (
    ("un fichero SQLite", r"\bSqliteCheckpointer\("),
    ("la memoria del proceso", r"\bMemoryCheckpointer\("),
    ("los registros tal cual (records)", r"\.records\("),
    ("exportar e importar un run", r"\b(?:export_run|import_run)\("),
    ("un solo conductor (RunBusy)", r"\bRunBusy\b"),
    # by the API, or by the command line (its `resolve` command calls the same API)
    ("la decisión de una persona", r"\.(?:record_result|allow_retry|decide)\(|[\"']resolve[\"'],"),
)


def notebook_code(path: Path) -> str:
    """A property notebook's code cells, and the helper scripts that carry its number."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    code = ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]
    number = path.stem[:2]
    code += [p.read_text(encoding="utf-8") for p in sorted(NOTEBOOKS.glob(f"_*_{number}.py"))]
    return "\n".join(code)


def touches(patterns: tuple[tuple[str, str], ...]) -> list[tuple[str, list[str]]]:
    """For each `(what, pattern)`, the numbers of the notebooks whose code matches."""
    codes = {path.stem[:2]: notebook_code(path) for path in sorted(NOTEBOOKS.glob("[0-9]*.ipynb"))}
    return [
        (what, [n for n, code in codes.items() if re.search(pattern, code)])
        for what, pattern in patterns
    ]


def _numbers(found: list[str], total: int) -> str:
    """The notebooks' numbers, three or more in a row as a range: «01–16 · 18»."""
    if len(found) == total:
        return "todos"
    groups: list[list[int]] = []
    for number in map(int, found):
        if groups and number == groups[-1][-1] + 1:
            groups[-1].append(number)
        else:
            groups.append([number])
    return (
        " · ".join(
            f"{g[0]:02d}–{g[-1]:02d}" if len(g) >= 3 else " · ".join(f"{n:02d}" for n in g)
            for g in groups
        )
        or "ninguno"
    )


def seams() -> str:
    total = len(list(NOTEBOOKS.glob("[0-9]*.ipynb")))
    gateway, checkpointer = touches(GATEWAY_TOUCHES), touches(CHECKPOINTER_TOUCHES)
    rows = max(len(gateway), len(checkpointer))
    height = 150 + rows * 40 + 20
    f = Figure(
        "cos",
        760,
        height,
        "Las dos costuras: el gateway y el checkpointer, y qué cuaderno toca cada una",
        "El bucle, Agent.run, manda las llamadas al modelo y a las herramientas por el gateway "
        "y escribe y lee el journal en el checkpointer. Debajo de cada costura, lo que hacen "
        "ahí los cuadernos y sus números, leídos de su código.",
    )
    f.box(280, 10, 200, 56)
    f.text(380, 34, "el bucle", "b", "middle")
    f.text(380, 54, "Agent.run", "c", "middle")
    f.arrow("bucle", (280, 38), (200, 70))
    f.arrow("bucle", (480, 38), (560, 70))
    f.text(250, 30, "llamadas", "n", "end")
    f.text(510, 30, "eventos", "n")
    f.box(0, 70, 360, 56)
    f.lines(
        10, 92, [("b", "gateway · por dónde sale todo"), ("c", "complete · stream · call_tool")]
    )
    f.box(400, 70, 360, 56)
    f.lines(
        410, 92, [("b", "checkpointer · dónde se guarda"), ("c", "start · append · load · hold")]
    )
    for x, found in ((0, gateway), (400, checkpointer)):
        for n, (what, numbers) in enumerate(found):
            y = 160 + n * 40
            f.text(x + 10, y, what, "t")
            f.text(x + 10, y + 17, "cuadernos: " + _numbers(numbers, total), "n")
            f.rule(x, y + 25, x + 360, y + 25)
    return f.svg()


# ── (c) one journal row ──────────────────────────────────────────────────────────────────────

TASK = "¿Saldo de ES91?"


async def _journal_one_tool_step(database: Path) -> None:
    """Run a one-tool agent on the double until its tool step is completed, then stop."""
    from synaptum_lite import SqliteCheckpointer

    @tool
    def consultar_saldo(cuenta: str) -> str:
        """El saldo de una cuenta."""
        return "4.200,00 €"

    agente = Agent(
        "cajero", model="guion", instructions="Contesta con el saldo.", tools=[consultar_saldo]
    )
    puerta = ScriptedGateway(
        [calls("consultar_saldo", cuenta="ES91"), says("4.200,00 €")], tools=[consultar_saldo]
    )
    sesion = Session("saldo-es91", puerta, SqliteCheckpointer(database))
    async for paso in agente.run(TASK, session=sesion):
        if isinstance(paso, ToolStep) and paso.phase is Phase.COMPLETED:
            break


def journaled_row() -> dict[str, object]:
    """The SQLite row of a tool's completed event, as the file really holds it."""
    with tempfile.TemporaryDirectory() as folder:
        database = Path(folder) / "runs.db"
        asyncio.run(_journal_one_tool_step(database))
        connection = sqlite3.connect(database)
        try:
            columns = ("run_id", "seq", "step_id", "phase", "attempt", "data")
            row = connection.execute(
                f"SELECT {', '.join(columns)}, typeof(data) FROM events "
                "WHERE step_id = '000001-tool' AND phase = 'completed'"
            ).fetchone()
            (next_seq,) = connection.execute(
                "SELECT next_seq FROM runs WHERE run_id = ?", (row[0],)
            ).fetchone()
        finally:
            connection.close()
    found = dict(zip(columns, row, strict=False))
    found["typeof_data"] = row[-1]
    found["next_seq"] = next_seq
    return found


def row() -> str:
    r = journaled_row()
    data = str(r["data"])
    f = Figure(
        "fil",
        760,
        330,
        "Una fila del journal en SQLite, con lo que guarda cada columna",
        f"La fila del evento {r['step_id']} {r['phase']} de la tabla events: run_id "
        f"{r['run_id']}, seq {r['seq']}, step_id {r['step_id']}, phase {r['phase']}, attempt "
        f"{r['attempt']} y data {data}.",
    )
    f.text(
        0,
        16,
        "tabla events · una fila por evento (escrita por este script, leída con sqlite3)",
        "n",
    )
    columns = [
        ("run_id", str(r["run_id"]), "el run: su fila en la tabla runs"),
        ("seq", str(r["seq"]), f"la posición del evento en el journal (de {r['next_seq']})"),
        ("step_id", str(r["step_id"]), "la posición del paso y su tipo"),
        ("phase", str(r["phase"]), "la fase: attempted, completed o resolved"),
        ("attempt", str(r["attempt"]), "el intento: 2 si el paso se repitió"),
        ("data", f"{r['typeof_data']} · JSON", "lo que la reanudación necesita, y nada más"),
    ]
    for n, (name, value, meaning) in enumerate(columns):
        y = 50 + n * 34
        f.text(0, y, name, "c")
        f.text(90, y, value, "b")
        f.text(330, y, meaning, "n")
        f.rule(0, y + 12, 760, y + 12)
    f.text(0, 270, "data, tal cual:", "n")
    f.text(0, 292, data, "c")
    f.text(
        0,
        318,
        "La clave (run_id, step_id, phase, attempt) es única: "
        "escribir otra vez el mismo evento no hace nada.",
        "n",
    )
    return f.svg()


# ── the command ──────────────────────────────────────────────────────────────────────────────

FIGURES = {"fases.svg": phases, "costuras.svg": seams, "fila.svg": row}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.diagramas", description=__doc__)
    parser.add_argument("--check", action="store_true", help="change nothing; fail on drift")
    args = parser.parse_args(argv)
    stale, wrong = [], []
    for name, draw in FIGURES.items():
        try:
            svg = draw()
        except FigureError as exc:
            print(f"{name}: {exc}", file=sys.stderr)
            return 1
        for folder in (FOLDER, COPIES):
            path = folder / name
            if args.check:
                if not path.exists() or path.read_text(encoding="utf-8") != svg:
                    stale.append(str(path.relative_to(folder.parents[1])))
                elif name == "fases.svg":
                    # what it says of the runtime, against the runtime (not against the script)
                    wrong += phase_problems(path.read_text(encoding="utf-8"))
            else:
                folder.mkdir(parents=True, exist_ok=True)
                path.write_text(svg, encoding="utf-8")
    for problem in dict.fromkeys(wrong):
        print(problem, file=sys.stderr)
    if stale:
        print(
            f"{', '.join(stale)} differ from what scripts/diagramas.py draws; "
            "run `uv run python -m scripts.diagramas`",
            file=sys.stderr,
        )
    return 1 if stale or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
