"""The site's three diagrams, written as SVG from this source: nothing in them is drawn by hand.

    uv run python -m scripts.diagramas            # write docs/diagramas/*.svg (and copies)
    uv run python -m scripts.diagramas --check    # change nothing; exit 1 if a file differs

- `fases.svg`: the phases of a step and who moves each one (the loop, the runtime, a person);
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
import json
import re
import sqlite3
import sys
import tempfile
from collections.abc import Iterable
from html import escape
from pathlib import Path

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

    def box(self, x: float, y: float, w: float, h: float) -> None:
        self.parts.append(
            f'<rect class="{self.p}-caja" x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" rx="6"/>'
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


# ── (a) the phases of a step ─────────────────────────────────────────────────────────────────


def phases() -> str:
    f = Figure(
        "fas",
        760,
        560,
        "Las fases de un paso y quién lo mueve de una a otra",
        "El bucle escribe el paso intentado antes del trabajo y completado después. Si el "
        "proceso muere en medio, al reanudar el bucle repite lo que es seguro repetir; una "
        "herramienta no idempotente queda incierta y una persona la resuelve con record_result "
        "(completado) o allow_retry (resuelto). Si quien itera deja de iterar antes de que la "
        "herramienta empiece, el runtime escribe resuelto, no empezada. Una aprobación "
        "pendiente la cierra una persona con decide.",
    )
    # row 1: the normal life of a step
    f.box(0, 20, 150, 48)
    f.lines(12, 41, [("b", "sin rastro"), ("n", "nada en el journal")])
    f.box(300, 20, 150, 48)
    f.lines(312, 41, [("b", "intentado"), ("c", "attempted")])
    f.box(600, 20, 160, 48)
    f.lines(612, 41, [("b", "completado"), ("c", "completed")])
    f.arrow("bucle", (150, 44), (300, 44))
    f.lines(158, 30, [("n", "antes del trabajo")])
    f.arrow("bucle", (450, 44), (600, 44))
    f.lines(458, 30, [("n", "después del trabajo")])

    # row 2: what a resume finds between the two
    f.text(0, 145, "entre intentado y completado:", "n")
    f.arrow("bucle", (340, 68), (120, 170))
    f.arrow("bucle", (375, 68), (375, 170))
    f.arrow("runtime", (410, 68), (640, 170))
    f.text(255, 100, "el proceso muere", "n", "end")
    f.text(383, 125, "el proceso muere", "n")
    f.text(530, 110, "se deja de iterar ahí", "n")
    f.box(0, 170, 240, 92)
    f.lines(
        10,
        190,
        [
            ("b", "se repite"),
            ("n", "un paso de modelo, o una herramienta"),
            ("n", "idempotente: al reanudar, el bucle"),
            ("n", "lo hace otra vez (intento + 1)"),
        ],
    )
    f.box(260, 170, 230, 92)
    f.lines(
        270,
        190,
        [
            ("b", "incierto"),
            ("n", "una herramienta no idempotente:"),
            ("n", "al reanudar, UncertainEffect;"),
            ("n", "el runtime no adivina"),
        ],
    )
    f.box(510, 170, 250, 92)
    f.lines(
        520,
        190,
        [
            ("b", "resuelto · no empezada"),
            ("c", "resolved · not_started"),
            ("n", "la herramienta no llegó a empezar:"),
            ("n", "al reanudar se ejecuta sin preguntar"),
        ],
    )

    # row 3: a person resolves the uncertain step
    f.arrow("persona", (330, 262), (170, 330))
    f.arrow("persona", (420, 262), (580, 330))
    f.text(235, 290, "record_result", "c", "end")
    f.text(515, 290, "allow_retry", "c")
    f.box(40, 330, 260, 74)
    f.lines(
        50,
        350,
        [
            ("b", "completado · record"),
            ("n", "el efecto ocurrió: el run sigue con"),
            ("n", "el resultado que apuntó la persona"),
        ],
    )
    f.box(460, 330, 260, 74)
    f.lines(
        470,
        350,
        [
            ("b", "resuelto · retry"),
            ("n", "no ocurrió: al reanudar, el bucle"),
            ("n", "la ejecuta otra vez (intento + 1)"),
        ],
    )

    # row 4: an approval
    f.rule(0, 424, 760, 424)
    f.box(0, 440, 200, 74)
    f.lines(
        10,
        460,
        [
            ("b", "aprobación pendiente"),
            ("n", "ApprovalStep intentado:"),
            ("n", "el run se suspende"),
        ],
    )
    f.arrow("persona", (200, 462), (300, 462))
    f.arrow("persona", (200, 498), (520, 498))
    f.text(250, 452, "decide", "c", "middle")
    f.box(300, 440, 200, 48)
    f.lines(310, 460, [("b", "completado"), ("n", "concedida, o denegada")])
    f.box(520, 474, 240, 48)
    f.lines(530, 494, [("b", "resuelto"), ("n", "«ahora no» (final=False)")])

    f.legend(548)
    return f.svg()


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
    from synaptum_lite import Agent, Phase, Session, SqliteCheckpointer, ToolStep, tool
    from synaptum_lite.testing import ScriptedGateway, calls, says

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
    stale = []
    for name, draw in FIGURES.items():
        svg = draw()
        for folder in (FOLDER, COPIES):
            path = folder / name
            if args.check:
                if not path.exists() or path.read_text(encoding="utf-8") != svg:
                    stale.append(str(path.relative_to(folder.parents[1])))
            else:
                folder.mkdir(parents=True, exist_ok=True)
                path.write_text(svg, encoding="utf-8")
    if stale:
        print(
            f"{', '.join(stale)} differ from what scripts/diagramas.py draws; "
            "run `uv run python -m scripts.diagramas`",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
