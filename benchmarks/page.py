"""The page *Rendimiento* (docs/rendimiento.md) and its two plots, generated from the results of
`benchmarks.run`: nothing on it is typed by hand. The prose lives in `page_template.md`
(Spanish, like every page of the site); this module writes the figures into it.

A ratio is always the anchor's figure divided by ours on SQLite: above 1× the anchor needs
more; below 1× we are behind, and the page lists every such figure in its own section.
"""

from __future__ import annotations

import json
import math
import re
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import long_runs, provenance, workload

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent / "docs"
PAGE = DOCS / "rendimiento.md"
TEMPLATE = HERE / "page_template.md"
#: The in-browser run's figures (`benchmarks.navegador`), measured apart from `benchmarks.run`.
NAVEGADOR = HERE / "results" / "navegador.json"
PLOTS = {"bytes": DOCS / "rendimiento-almacen.svg", "cpu_per_step_ms": DOCS / "rendimiento-cpu.svg"}
OURS = "lite"
ANCHORS = ("synaptum", "langgraph", "dbos")
ORDER = (OURS, "lite_postgres", *ANCHORS)
REFERENCE_N = 200
STORES = {
    OURS: '`SqliteCheckpointer`: un fichero SQLite, `durability="full"`',
    "lite_postgres": "PostgresCheckpointer: un esquema por medida en el servidor de "
    "SYNAPTUM_BENCH_POSTGRES_URL",
    "synaptum": "su SqliteCheckpointer (PyPI synaptum==1.0.0rc6, el marco de la página semilla)",
    "langgraph": 'SqliteSaver; grafo modelo → ToolNode, `durability="sync"`',
    "dbos": "su base de datos de sistema en SQLite; un workflow, y cada llamada al modelo y "
    "a la herramienta un `@DBOS.step()`",
}
CHECKS = {
    "docs check": "ejecuta cada cuaderno y compara lo que imprime con el bloque de su página",
    "nbval --nbval": "ejecuta y compara con las salidas guardadas (copias que las llevan)",
    "nbval --nbval-lax": "ejecuta; solo falla si una celda lanza una excepción",
    "nbmake": "ejecuta; solo falla si una celda lanza una excepción",
    "nbmake -n 2": "lo mismo que nbmake, repartiendo los cuadernos entre dos procesos",
}


# ── numbers, the Spanish way (4.200,5) ───────────────────────────────────────────────────────


def _number(value: float, decimals: int) -> str:
    return f"{value:,.{decimals}f}".replace(",", "\0").replace(".", ",").replace("\0", ".")


def _bytes(value: float | None) -> str:
    if value is None:
        return "—"
    if value >= 1e9:
        return f"{_number(value / 1e9, 1)} GB"
    return f"{_number(value / 1e3, 0)} kB" if value < 1e6 else f"{_number(value / 1e6, 1)} MB"


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    if value >= 1000:
        return f"{_number(value / 1000, 1)} s"
    return f"{_number(value, 0 if value >= 100 else 1 if value >= 10 else 2)} ms"


def _ratio(anchor: float | None, ours: float | None) -> str:
    if anchor is None or not ours:
        return "—"
    ratio = anchor / ours
    return f"{_number(ratio, 0 if ratio >= 10 else 1 if ratio >= 1 else 2)}×"


def _count(value: float | None) -> str:
    return "—" if value is None else _number(value, 0 if float(value).is_integer() else 1)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def _table(header: list[str], rows: list[list[str]], align: str) -> str:
    """A Markdown table; `align` has one letter per column, `l` or `r`."""
    rule = ["---" if a == "l" else "---:" for a in align]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in [header, rule, *rows])


# ── the page ─────────────────────────────────────────────────────────────────────────────────


def write(results: dict[str, Any]) -> None:
    """Write docs/rendimiento.md and its plots from `results`, as `benchmarks.run` saves them."""
    runs = {key: value for key, value in results.get("durable_runs", {}).items() if value["rows"]}
    for metric, path in PLOTS.items():
        _plot(runs, metric, path)
    PAGE.write_text(render(results), encoding="utf-8")


def problems(results: dict[str, Any], text: str | None = None) -> list[str]:
    """What keeps `text` (by default the page on disk) from being the honest rendering of
    `results`: a table not made from the raw timings, raw timings not matching their digest
    (`benchmarks.provenance`), or a page that is not what `render` makes of the results."""
    found = provenance.problems(results)
    if text is None:
        text = PAGE.read_text(encoding="utf-8")
    if text != render(results):
        found.append(
            "docs/rendimiento.md is not what benchmarks/page.py makes of "
            "benchmarks/results/latest.json: regenerate it with "
            "`uv run --group bench python -m benchmarks.run --page-only`"
        )
    return found


def render(results: dict[str, Any]) -> str:
    runs = {key: value for key, value in results.get("durable_runs", {}).items() if value["rows"]}
    sizes = results["settings"]["sizes"]
    reference = REFERENCE_N if REFERENCE_N in sizes else max(sizes)
    figures = Figures(runs, sizes, results.get("raw", {}).get("durable_runs", {}))
    fields = {
        "command": results["command"],
        "machine": _machine(results),
        "contenders": _contenders(results, runs),
        "summary": _summary(results, figures, reference),
        "behind": _behind(results, figures)
        + _long_behind(results.get("long_runs"))
        + _many_runs_behind(results.get("many_runs")),
        "floors": _floors(results),
        "storage_plot": PLOTS["bytes"].name,
        "cpu_plot": PLOTS["cpu_per_step_ms"].name,
        "storage": figures.table("bytes", _bytes),
        "cpu": figures.table("cpu_per_step_ms", _ms) + _sync_cost(results.get("sync_cost")),
        "closed": figures.table("closed_run_ms", _ms),
        "resume": figures.table("first_call_after_kill_ms", _ms),
        "long_runs": _long_runs(results.get("long_runs")),
        "repeated": figures.repeated(),
        "race_outcomes": figures.race_outcomes(reference),
        "docs": _docs(_docs_results(results)),
        "imports": _imports(results),
        "many_runs": _many_runs(results.get("many_runs")),
        "navegador": _navegador(_read(NAVEGADOR)),
        **_workload(results, runs),
    }
    text = string.Template(TEMPLATE.read_text(encoding="utf-8")).substitute(fields)
    return text.rstrip() + "\n"


class Figures:
    """The durable-run medians, by contender and N, as the tables show them, and the repeats
    they are the medians of."""

    def __init__(self, runs: dict[str, Any], sizes: list[int], raw: dict[str, Any]) -> None:
        self.runs = runs
        self.sizes = sizes
        self.raw = raw  # every repeat, by contender and N (the raw timings)
        self.present = [key for key in ORDER if key in runs]
        self.anchors = [key for key in ANCHORS if key in runs]

    def label(self, key: str) -> str:
        return self.runs[key]["label"]

    def value(self, key: str, n: int, metric: str) -> Any:
        row = next((row for row in self.runs.get(key, {}).get("rows", []) if row["n"] == n), None)
        return None if row is None else row[metric]

    def spread(self, key: str, n: int, metric: str, show: Callable[[Any], str]) -> str:
        """The lowest and highest of the repeats: how far apart a noisy machine put them."""
        samples = self.raw.get(key, {}).get("samples", {}).get(str(n), [])
        values = [sample[metric] for sample in samples]
        values = [value for value in values if value is not None]
        return f"{show(min(values))}–{show(max(values))}" if values else "—"

    def exponents(self, key: str) -> str:
        """Over every N, and between the two largest (where growth shows)."""
        rows = self.runs[key]["rows"]
        whole = self.runs[key]["growth_exponent"]
        top = None
        if len(rows) >= 2:
            top = workload.log_log_slope([(row["n"], row["bytes"]) for row in rows[-2:]])
        return " · ".join("—" if x is None else _number(x, 2) for x in (whole, top))

    def table(self, metric: str, show: Callable[[Any], str]) -> str:
        others = [key for key in self.present if key != OURS]
        header = ["N", self.label(OURS)] + [
            cell for key in others for cell in (self.label(key), "×")
        ]
        rows = []
        for n in self.sizes:
            ours = self.value(OURS, n, metric)
            cells = [str(n), show(ours)]
            for key in others:
                theirs = self.value(key, n, metric)
                cells += [show(theirs), _ratio(theirs, ours)]
            rows.append(cells)
        return _table(header, rows, "r" * len(header))

    def repeated(self) -> str:
        header = ["N"] + [
            c for key in self.present for c in (f"{self.label(key)}: tras matar", "en carrera")
        ]
        rows = []
        for n in self.sizes:
            cells = [str(n)]
            for key in self.present:
                cells += [
                    self.pair(
                        key, n, "repeated_tools_after_kill", "repeated_model_calls_after_kill"
                    ),
                    self.pair(key, n, "race_duplicate_tools", "race_duplicate_model_calls"),
                ]
            rows.append(cells)
        return _table(header, rows, "r" * len(header))

    def pair(self, key: str, n: int, tools: str, model: str) -> str:
        return f"{_count(self.value(key, n, tools))} · {_count(self.value(key, n, model))}"

    def race_outcomes(self, n: int) -> str:
        lines = [f"Cómo acabó cada pareja de reanudadores a N = {n}, repetición a repetición:", ""]
        for key in self.present:
            outcomes = self.value(key, n, "race_outcomes") or []
            lines.append(
                f"- {self.label(key)}: " + "; ".join(" + ".join(pair) for pair in outcomes) + "."
            )
        lines += [
            "",
            "*RunBusy* es el «run ocupado» de `synaptum_lite`: el segundo proceso se entera al",
            "momento y no ejecuta nada; *finished*, que el proceso llegó al final del run.",
        ]
        return "\n".join(lines)


def _machine(results: dict[str, Any]) -> str:
    """The provenance: the machine, the commit, and the digest of the raw timings."""
    recorded, settings = results.get("provenance", {}), results["settings"]
    machine = recorded.get("machine", {})

    def loads(key: str) -> str:
        return ", ".join(_number(x, 1) for x in machine.get(key, [])) or "—"

    memory = _number(machine["memory_gib"], 0)
    changed = recorded.get("uncommitted") or []
    tree = (
        "sin cambios sin commit en lo que se mide"
        if not changed
        else "con cambios sin commit en " + ", ".join(f"`{path}`" for path in changed)
    )
    return "\n".join(
        [
            f"- {machine['cores']} núcleos ({machine['cpu']}), {memory} GiB de memoria, "
            f"{machine['system']}, {machine['python']}.",
            f"- Carga media (1, 5 y 15 min) al empezar: {loads('load_at_start')}; al terminar: "
            f"{loads('load_at_end')}.",
            f"- Medido el {results['date']} en el commit `{recorded.get('commit', '—')}`, "
            f"{tree}; la orden entera tardó {_duration(results.get('elapsed_s'))}"
            f"{_parts(results.get('parts_s'), settings)}.",
            f"- Repeticiones: {settings['repeats']} por medida y N en los runs durables, "
            f"{settings['docs_repeats']} al comprobar los cuadernos, "
            f"{settings['import_repeats']} al importar.",
            "- Huella sha256 de los tiempos crudos (`raw` en `benchmarks/results/latest.json`): "
            f"`{recorded.get('raw_sha256', '—')}`.",
            *_overloaded(machine),
        ]
    )


PART_LABELS = {
    "durable_runs": "los runs a N = {sizes}",
    "long_runs": "las carreras largas",
    "docs_check": "comprobar los cuadernos",
    "many_runs": "muchos runs en un almacén",
    "sync_cost": "sincronizar el disco",
    "imports": "importar",
}


def _parts(took: dict[str, float] | None, settings: dict[str, Any]) -> str:
    """Where the sitting's time went, the largest part first; empty when it was not kept."""
    if not took:
        return ""
    sizes = ", ".join(_number(n, 0) for n in settings["sizes"])
    shown = [
        f"{PART_LABELS.get(name, name).format(sizes=sizes)}, {_duration(seconds)}"
        for name, seconds in sorted(took.items(), key=lambda item: -item[1])
    ]
    return " (" + "; ".join(shown) + ")"


def _overloaded(machine: dict[str, Any]) -> list[str]:
    """A line when the load average, at the start or the end, was above the cores."""
    loads = [*machine.get("load_at_start", []), *machine.get("load_at_end", [])]
    cores = machine.get("cores")
    if not loads or not cores or max(loads) <= cores:
        return []
    return [
        f"- La carga media pasó de los {cores} núcleos (hasta {_number(max(loads), 1)}): había"
        " más procesos esperando CPU que núcleos, así que los tiempos absolutos de esta medición"
        " salen inflados."
    ]


def _contenders(results: dict[str, Any], runs: dict[str, Any]) -> str:
    stores = dict(STORES)
    server = results.get("postgres")
    if server:
        stores["lite_postgres"] += (
            f" (PostgreSQL {server['server_version']}, fsync={server['fsync']}, "
            f"synchronous_commit={server['synchronous_commit']})"
        )
    else:  # results from before the server's settings were recorded
        stores["lite_postgres"] += ", el local de scripts/postgres_local.sh (fsync=off)"
    rows = [[runs[key]["label"], stores[key], runs[key]["python"]] for key in ORDER if key in runs]
    text = _table(["quién", "almacén", "Python"], rows, "llr")
    for message in results.get("skipped", []):
        text += f'\n\n!!! note "No medido"\n    {message}'
    return text


def _summary(results: dict[str, Any], figures: Figures, n: int) -> str:
    if OURS not in figures.runs:
        return "## Resumen\n\nNo hay cifras de `synaptum_lite`."
    anchors = figures.anchors
    header = ["", figures.label(OURS)] + [c for key in anchors for c in (figures.label(key), "×")]
    rows = []

    def measured(title: str, metric: str, show: Callable[[Any], str]) -> None:
        ours = figures.value(OURS, n, metric)
        cells = [title, show(ours)]
        for key in anchors:
            theirs = figures.value(key, n, metric)
            cells += [show(theirs), _ratio(theirs, ours)]
        rows.append(cells)

    def counted(title: str, tools: str, model: str) -> None:
        cells = [title, figures.pair(OURS, n, tools, model)]
        for key in anchors:
            cells += [figures.pair(key, n, tools, model), ""]
        rows.append(cells)

    measured("bytes guardados", "bytes", _bytes)
    rows.append(
        ["exponente de crecimiento (todas las N · las dos mayores)", figures.exponents(OURS)]
        + [c for key in anchors for c in (figures.exponents(key), "")]
    )
    measured("CPU por paso", "cpu_per_step_ms", _ms)
    measured("devolver un run cerrado", "closed_run_ms", _ms)
    measured("de reanudar a la primera llamada nueva", "first_call_after_kill_ms", _ms)
    counted(
        "repetidas tras matar (herramienta · modelo)",
        "repeated_tools_after_kill",
        "repeated_model_calls_after_kill",
    )
    counted(
        "duplicadas en carrera (herramienta · modelo)",
        "race_duplicate_tools",
        "race_duplicate_model_calls",
    )
    imported = results.get("imports", {})
    if OURS in imported:
        ours = imported[OURS]["import_ms"]
        cells = ["importar el paquete", _ms(ours)]
        for key in anchors:
            theirs = imported.get(key, {}).get("import_ms")
            cells += [_ms(theirs), _ratio(theirs, ours)]
        rows.append(cells)
    lines = [f"## Resumen (N = {n})", "", _table(header, rows, "l" + "r" * (len(header) - 1))]
    docs = _docs_results(results)
    if "median_s" in docs:
        ours = docs["median_s"]["docs check"]
        ratios = ", ".join(
            f"{name} {_ratio(median, ours)}"
            for name, median in docs["median_s"].items()
            if name != "docs check"
        )
        count = len(docs["notebooks"]) * docs.get("copies", 1)
        lines += [
            "",
            f"Comprobar los {count} cuadernos: nuestra comprobación tarda "
            f"{_ms(ours * 1000)}; frente a ella, {ratios}.",
        ]
    return "\n".join(lines)


def _behind(results: dict[str, Any], figures: Figures) -> str:
    """Every figure, at every N, where an anchor needs less than we do."""
    findings = []
    measured = {
        "bytes": ("guarda menos", _bytes),
        "cpu_per_step_ms": ("gasta menos CPU por paso", _ms),
        "closed_run_ms": ("devuelve antes un run cerrado", _ms),
        "first_call_after_kill_ms": ("llega antes a la primera llamada al reanudar", _ms),
        "repeated_tools_after_kill": ("repite menos llamadas a la herramienta tras matar", _count),
        "race_duplicate_tools": ("duplica menos ejecuciones de la herramienta en carrera", _count),
    }
    for key in figures.anchors:
        for metric, (what, show) in measured.items():
            for n in figures.sizes:
                ours, theirs = figures.value(OURS, n, metric), figures.value(key, n, metric)
                if ours is not None and theirs is not None and theirs < ours:
                    detail = ""
                    if show is not _count:
                        detail = (
                            f" ({_ratio(theirs, ours)}; repetición a repetición, "
                            f"{figures.spread(key, n, metric, show)} frente a "
                            f"{figures.spread(OURS, n, metric, show)})"
                        )
                    findings.append(
                        f"- {figures.label(key)} {what} a N = {n}: {show(theirs)} frente a "
                        f"{show(ours)}{detail}."
                    )
    imported = results.get("imports", {})
    for key in figures.anchors:
        if (
            OURS in imported
            and key in imported
            and imported[key]["import_ms"] < imported[OURS]["import_ms"]
        ):
            theirs, ours = imported[key]["import_ms"], imported[OURS]["import_ms"]
            findings.append(
                f"- {figures.label(key)} se importa antes: {_ms(theirs)} frente a {_ms(ours)} "
                f"({_ratio(theirs, ours)})."
            )
    docs = _docs_results(results)
    if "median_s" in docs:
        ours = docs["median_s"]["docs check"]
        for name, theirs in docs["median_s"].items():
            if name != "docs check" and theirs < ours:
                findings.append(
                    f"- {name} comprueba los cuadernos antes: {_ms(theirs * 1000)} frente a "
                    f"{_ms(ours * 1000)} ({_ratio(theirs, ours)}); lo que comprueba: "
                    f"{CHECKS.get(name, '?')}."
                )
    if not findings:
        return "En esta medición, en ninguna cifra: ningún ancla necesita menos que nosotros."
    return "\n".join(
        ["Donde un ancla necesita menos que nosotros, en esta medición:", "", *findings]
    )


# ── long runs ────────────────────────────────────────────────────────────────────────────────

#: What we asked of ourselves for long runs (issue 32), checked against each measurement
LONG_GOAL_N, LONG_RESUME_GOAL_MS, LONG_MEMORY_GOAL = 5000, 150.0, 3.0
_LONG_FIGURES = {
    "bytes": ("bytes guardados", _bytes),
    "cpu_per_step_ms": ("CPU por paso", _ms),
    "closed_run_ms": ("devolver el run cerrado", _ms),
    "first_call_after_kill_ms": ("de reanudar a la primera llamada", _ms),
    "memory_kb": (
        "memoria que añade reanudar",
        lambda kb: _bytes(None if kb is None else kb * 1024),
    ),
}


def _long_runs(long: dict[str, Any] | None) -> str:
    """The long-run table, each contender's exponents, what was extrapolated and why, and the
    goals for ours."""
    if not long:
        return "Esta medición no tiene carreras largas."
    header = ["contendiente", "N", *(what for what, _ in _LONG_FIGURES.values())]
    header.append("almacén del run matado")
    rows, notes, exponents = [], [], []
    for key in [k for k in ORDER if k in long]:
        contender = long[key]
        for row in contender["rows"]:
            mark = "≈ " if row["extrapolated"] else ""
            cells = [contender["label"], _number(row["n"], 0)]
            cells += [
                mark + show(row.get(name)) if row.get(name) is not None else "—"
                for name, (_, show) in _LONG_FIGURES.items()
            ]
            rows.append([*cells, _bytes(row.get("journal_bytes"))])
        slopes = contender["exponents"]
        exponents.append(
            f"- {contender['label']}: "
            + " · ".join(
                f"{what} {'—' if slopes.get(name) is None else _number(slopes[name], 2)}"
                for name, (what, _) in _LONG_FIGURES.items()
            )
            + "."
        )
        stopped = contender["stopped"]
        if stopped is not None:
            notes.append(
                f"- {contender['label']}: desde N = {_number(stopped['n'], 0)}, extrapolado: "
                f"{_why(stopped['why'])}."
            )
    text = [_table(header, rows, "llrrrrrr"), ""]
    text += [
        f"Exponentes (pendiente log-log, por mínimos cuadrados, sobre las {long_runs.FITTED} N"
        " mayores medidas, las de las tablas de arriba incluidas): 1 es lineal; 0, plano.",
        "",
        *exponents,
    ]
    if notes:
        text += [
            "",
            "Las cifras con ≈ no se midieron: salen de la mayor N medida y de su exponente.",
            "Donde un contendiente se para:",
            "",
            *notes,
        ]
    return "\n".join(text) + _long_goals(long)


def _long_behind(long: dict[str, Any] | None) -> str:
    """Every long-run figure where an anchor needs less than we do, as in the summary's list
    (our own store on PostgreSQL is not an anchor, and its CPU leaves out the server's); an
    extrapolated figure on either side says so."""
    if not long or OURS not in long:
        return ""
    ours = {row["n"]: row for row in long[OURS]["rows"]}
    findings = []
    for key in [k for k in ANCHORS if k in long]:
        for row in long[key]["rows"]:
            mine = ours.get(row["n"])
            for name, (what, show) in _LONG_FIGURES.items():
                theirs, ours_ = row.get(name), None if mine is None else mine.get(name)
                if theirs is None or ours_ is None or theirs >= ours_:
                    continue
                marks = [
                    who
                    for who, taken in ((long[key]["label"], row), ("la nuestra", mine))
                    if taken is not None and taken["extrapolated"]
                ]
                guess = f"; extrapolada: {' y '.join(marks)}" if marks else ""
                findings.append(
                    f"- {long[key]['label']}, carrera larga a N = {_number(row['n'], 0)}, "
                    f"{what}: {show(theirs)} frente a {show(ours_)} "
                    f"({_ratio(theirs, ours_)}{guess})."
                )
    if not findings:
        return ""
    heading = "En las carreras largas, donde un ancla necesita menos que nosotros:"
    return f"\n\n{heading}\n\n" + "\n".join(findings)


def _why(reason: str) -> str:
    """A long run's reason to stop, as `benchmarks.long_runs` records it, in the page's words."""
    found = re.fullmatch(r"predicted (\d+) min of measuring, over (\d+)", reason)
    if found:
        return f"medirla llevaría unos {found[1]} min, más de los {found[2]} que se le dan"
    found = re.fullmatch(r"predicted (\d+) GB stored, over (\d+)", reason)
    if found:
        return f"guardaría unos {found[1]} GB, más de los {found[2]} que se le dan"
    found = re.fullmatch(r"stopped after (\d+) min of measuring", reason)
    if found:
        return f"se paró a los {found[1]} min de medir, el límite que se le da"
    first = reason.strip().splitlines()[0] if reason.strip() else "?"
    return f"falló ({first[:200]})"  # the whole failure is in latest.json


def _long_goals(long: dict[str, Any]) -> str:
    ours = next((r for r in long.get(OURS, {}).get("rows", []) if r["n"] == LONG_GOAL_N), None)
    if ours is None:
        return ""
    resume, memory, journal = (
        ours["first_call_after_kill_ms"],
        ours.get("memory_kb"),
        ours.get("journal_bytes"),
    )
    lines = ["", "", f"Las metas de {long[OURS]['label']} a N = {_number(LONG_GOAL_N, 0)}:", ""]
    measured = "" if not ours["extrapolated"] else " (extrapolado)"
    lines.append(
        f"- Reanudar hasta la primera llamada en {_number(LONG_RESUME_GOAL_MS, 0)} ms o menos: "
        f"{_ms(resume)}{measured}, "
        + (
            "se cumple."
            if resume is not None and resume <= LONG_RESUME_GOAL_MS
            else "no se cumple."
        )
    )
    if memory is not None and journal:
        times = memory * 1024 / journal
        lines.append(
            f"- Que reanudar no añada más de {_number(LONG_MEMORY_GOAL, 0)} veces lo que ocupa el "
            f"almacén del run matado: añade {_bytes(memory * 1024)} frente a {_bytes(journal)} "
            f"({_number(times, 1)} veces), "
            + ("se cumple." if times <= LONG_MEMORY_GOAL else "no se cumple.")
        )
    return "\n".join(lines)


# ── floors ───────────────────────────────────────────────────────────────────────────────────


def _floors(results: dict[str, Any]) -> str:
    """Each of our figures that has a floor no change of our code lowers, beside that floor
    (issue 32: the floors are limits, shown as measured, not goals missed)."""
    rows = []
    sync = results.get("sync_cost")
    if sync:
        commits = sync["commits_per_step"]
        per_commit = sync["commit_cpu_ms"]["full"] - sync["commit_cpu_ms"]["normal"]
        rows.append(
            _floor_row(
                # in the process that measures its floor, beside it: not the summary's figure,
                # which each durable run measures in a process of its own
                f'CPU por paso (N = {sync["n"]}, `durability="full"`, en el proceso que mide '
                "su suelo)",
                sync["step_cpu_ms"]["full"],
                commits * per_commit,
                f"sincronizar el disco en cada commit: {_number(commits, 1)} commits × "
                f"{_fine_ms(per_commit)}",
                _ms,
            )
        )
    imported = (results.get("imports") or {}).get(OURS) or {}
    if "stdlib_ms" in imported:
        rows.append(
            _floor_row(
                "importar el paquete",
                imported["import_ms"],
                imported["stdlib_ms"],
                f"importar solo los {imported['stdlib_modules']} módulos de la biblioteca "
                "estándar que carga",
                _ms,
            )
        )
    docs = _docs_results(results)
    if "median_s" in docs and docs.get("per_notebook_cpu") and docs.get("cores"):
        own = sum(docs["per_notebook_cpu"].values())
        rows.append(
            _floor_row(
                "comprobar los cuadernos",
                docs["median_s"]["docs check"] * 1000,
                own / docs["cores"] * 1000,
                f"la CPU de los propios cuadernos ({_ms(own * 1000)}) repartida en los "
                f"{docs['cores']} núcleos",
                _ms,
            )
        )
    long = (results.get("long_runs") or {}).get(OURS) or {}
    floored = [r for r in long.get("rows", []) if r.get("resume_floor_ms") is not None]
    if floored:
        row = floored[-1]
        rows.append(
            _floor_row(
                f"de reanudar a la primera llamada (N = {_number(row['n'], 0)})",
                row["first_call_after_kill_ms"],
                row["resume_floor_ms"],
                "leer el journal, descomprimir y decodificar sus eventos y encadenar el hash "
                "de su contexto, nada más",
                _ms,
            )
        )
    if not rows:
        return "Esta medición no tiene los suelos."
    header = ["cifra", "medida", "suelo", "qué es el suelo", "sobre el suelo"]
    count = {1: "Una cifra", 2: "Dos cifras", 3: "Tres cifras", 4: "Cuatro cifras"}
    return "\n".join(
        [
            f"{count.get(len(rows), f'{len(rows)} cifras')} de esta medición tienen un suelo,"
            " medido en la misma sesión: el trabajo que no se quita sin dejar de cumplir lo que"
            " se promete o sin cambiar el formato del journal. Cada una, al lado del suyo;"
            " *sobre el suelo* es lo que cuesta de verdad nuestro código.",
            "",
            _table(header, rows, "lrrlr"),
        ]
    )


def _floor_row(
    what: str, measured: float, floor: float, why: str, show: Callable[[Any], str]
) -> list[str]:
    above = (
        f"{show(max(measured - floor, 0.0))} ({_number(measured / floor, 1)}×)" if floor else "—"
    )
    return [what, show(measured), show(floor), why, above]


def _sync_cost(sync: dict[str, Any] | None) -> str:
    """How much of a step's CPU is the kernel syncing each commit to disk."""
    if not sync:
        return ""
    steps, commits = sync["step_cpu_ms"], sync["commit_cpu_ms"]
    per_commit = commits["full"] - commits["normal"]
    return "\n".join(
        [
            "",
            "",
            f"Cuánto de eso es esperar al disco (N = {sync['n']}, medido aparte, alternando): con"
            f' `durability="normal"` el mismo run gasta {_ms(steps["normal"])} por paso, y con'
            f' `"full"` {_ms(steps["full"])}. Cada paso hace {_number(sync["commits_per_step"], 1)}'
            " commits (contados en el almacén), y un commit de SQLite que sincroniza su WAL cuesta"
            f" aquí {_fine_ms(commits['full'])} de CPU frente a {_fine_ms(commits['normal'])} uno"
            " que no (la CPU del núcleo al sincronizar cuenta como del proceso): "
            f"{_number(sync['commits_per_step'], 1)} × {_fine_ms(per_commit)} ="
            f" {_ms(sync['commits_per_step'] * per_commit)} de cada paso.",
        ]
    )


def _fine_ms(value: float) -> str:
    return f"{_number(value, 3)} ms"


def _docs(docs: dict[str, Any] | None) -> str:
    if not docs:
        return "No medido en esta ejecución."
    if "failure" in docs:
        return (
            "No medido: ningún cuaderno pasa la comprobación.\n\n```text\n"
            + docs["failure"]
            + "\n```"
        )
    ours = docs["median_s"]["docs check"]
    count = len(docs["notebooks"]) * docs.get("copies", 1)
    environment = "test + bench + lab" if "lab" in docs["environment"] else "test + bench, el de CI"
    lines = [
        f"Los mismos {count} cuadernos de `notebooks/propiedades/`, cada uno en un kernel nuevo y",
        "sin variables de modelo, cronometrando la orden entera tal como la escribiría una persona",
        f"(arranque del intérprete incluido), alternando, {docs['repeats']} veces cada orden. La",
        "comprobación de `pytest` además construye el sitio y lee su HTML; eso no entra aquí.",
        f"Entorno: {environment}.",
        "",
    ]
    if "kernels_at_once" in docs:
        lines[-1:-1] = [
            f"Nuestra comprobación ejecuta hasta {docs['kernels_at_once']} cuadernos a la vez en"
            f" los {docs['cores']} núcleos de la máquina; nbval y nbmake, uno tras otro, como"
            " pytest sin más. `nbmake -n 2` reparte los cuadernos entre dos procesos de pytest"
            " (pytest-xdist): es la comparación con los mismos núcleos.",
        ]
    rows = []
    for name, median in docs["median_s"].items():
        rows.append(
            [
                name,
                CHECKS.get(name, ""),
                _ms(median * 1000),
                _ms(docs["fastest_s"][name] * 1000),
                _ratio(median, ours),
            ]
        )
    lines.append(_table(["orden", "qué comprueba", "mediana", "la más rápida", "×"], rows, "llrrr"))
    if "nbmake" not in docs["median_s"]:
        lines += ["", "nbmake no estaba instalado en el entorno de la orden: no se midió."]
    if docs.get("left_out"):
        lines += [
            "",
            "Fuera de la medida, porque no pasaban nuestra comprobación cuando se midió: "
            + ", ".join(docs["left_out"])
            + ".",
        ]
    lines += [
        "",
        "Cada cuaderno en nuestro ejecutor, del arranque del kernel a la última celda:",
        "",
    ]
    lines += [f"- {stem}: {_ms(seconds * 1000)}" for stem, seconds in docs["per_notebook"].items()]
    return "\n".join(lines)


def _workload(results: dict[str, Any], runs: dict[str, Any]) -> dict[str, str]:
    """The figures the prose gives of the work itself, from the code that does it and the
    results, never typed in the template."""
    many = results.get("many_runs") or {}
    pool = many.get("pool") or {}
    note = ""
    exponent = runs.get(OURS, {}).get("growth_exponent")
    if exponent is not None and exponent < 1:
        note = (
            " Un fichero de `synaptum_lite` sin ningún run ya ocupa algo (sus tablas), y por eso"
            f" su exponente sobre todas las N sale por debajo de 1 ({_number(exponent, 2)})."
        )
    return {
        "text_bytes": f"{_number(workload.TEXT_BYTES, 0)} B",
        "result_bytes": f"{_number(workload.RESULT_BYTES, 0)} B",
        "payload": f"{_number(workload.PAYLOAD_PER_STEP, 0)} B",
        "storage_note": note,
        "long_sizes": _sizes(
            results.get("settings", {}).get("long_sizes") or list(long_runs.SIZES)
        ),
        "long_minutes": _number(long_runs.TIME_LIMIT_S / 60, 0),
        "long_gb": _number(long_runs.BYTES_LIMIT / 1e9, 0),
        "open_runs": _count(many.get("open_runs")),
        "steps": _count(many.get("steps")),
        # each run of the pool makes two model calls (benchmarks.many_runs)
        "model_ms": "—"
        if "model_latency_ms" not in pool
        else f"{_number(2 * pool['model_latency_ms'], 0)} ms",
    }


def _sizes(sizes: list[int]) -> str:
    """`[1000, 2000, 5000]` as the page says it: «1.000, 2.000 y 5.000»."""
    shown = [_number(n, 0) for n in sizes]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " y " + shown[-1]


def _docs_results(results: dict[str, Any]) -> dict[str, Any]:
    """The docs check as the page reads it: what was run (the raw record: the notebooks, the
    environment, each notebook's time) and the medians of its timings (the table)."""
    raw = results.get("raw", {}).get("docs_check")
    if not raw:
        return {}
    return {**raw, **results.get("docs_check", {})}


def _read(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


#: The goals of the in-browser run, on this machine at rest (ms).
GOAL_READY_MS = 6000
GOAL_FIRST_OUTPUT_MS = 1000


def _navegador(data: dict[str, Any] | None) -> str:
    """The in-browser run's table (`benchmarks.navegador`), and the goals it misses."""
    if not data:
        return "No medido todavía: `uv run python -m benchmarks.navegador`."
    before = data.get("antes")
    load = data["carga"]
    lines = [
        f"Medido el {data['fecha']} con {data['chromium']}, en {data['nucleos']} núcleos, con"
        f" una carga media (1 min) de {_number(load['al_empezar'][0], 1)} al empezar y"
        f" {_number(load['al_terminar'][0], 1)} al terminar; mediana de"
        f" {data['repeticiones']} {'vez' if data['repeticiones'] == 1 else 'veces'} por página."
        " La orden:",
        "",
        "```bash",
        data["command"],
        "```",
        "",
        "*Listo*, *primer clic* y *segundo clic* son del sitio "
        + (f"del commit `{data['despues']}`." if data.get("despues") else "del árbol de trabajo."),
        "",
    ]
    if before:
        lines += [
            f"*Antes* es el sitio del commit `{before}`, medido en la misma sesión y alternando"
            " página a página: cargaba Python al pulsar el botón, en cada clic, así que no tenía"
            " *listo* y cada clic incluye esa carga.",
            "",
        ]
    header = ["página", "listo", "de ello, Pyodide", "primer clic", "segundo clic"]
    if before:
        header += ["antes: primer clic", "antes: segundo clic"]
    rows = []
    for row in data["paginas"]:
        after = row["despues"]
        cells = [
            row["pagina"],
            _ms(after["listo_ms"]),
            _ms(after.get("pyodide_ms")),
            _ms(after["primer_clic_ms"]),
            _ms(after["segundo_clic_ms"]),
        ]
        if before:
            old = row.get("antes") or {}
            cells += [_ms(old.get("primer_clic_ms")), _ms(old.get("segundo_clic_ms"))]
        rows.append(cells)
    lines.append(_table(header, rows, "l" + "r" * (len(header) - 1)))
    late = [
        f"{row['pagina']} ({_ms(row['despues']['listo_ms'])})"
        for row in data["paginas"]
        if (row["despues"]["listo_ms"] or 0) > GOAL_READY_MS
    ]
    slow = [
        f"{row['pagina']} ({_ms(value)})"
        for row in data["paginas"]
        for value in (row["despues"]["primer_clic_ms"], row["despues"]["segundo_clic_ms"])
        if (value or 0) > GOAL_FIRST_OUTPUT_MS
    ]
    lines += [
        "",
        f"El objetivo, con la máquina en reposo: *listo* en {_ms(GOAL_READY_MS)} como mucho, y"
        f" la primera salida a {_ms(GOAL_FIRST_OUTPUT_MS)} del clic como mucho.",
        "",
        "- *Listo* por encima del objetivo: "
        + (", ".join(late) + "." if late else "ninguna página."),
        "- Primera salida por encima del objetivo: "
        + (", ".join(slow) + "." if slow else "ningún clic."),
    ]
    return "\n".join(lines)


def _imports(results: dict[str, Any]) -> str:
    imported = results.get("imports")
    if not imported or OURS not in imported:
        return "No medido en esta ejecución."
    labels = {key: value["label"] for key, value in results.get("contenders", {}).items()}
    ours = imported[OURS]["import_ms"]
    rows = []
    for key in (OURS, *ANCHORS):
        if key not in imported:
            continue
        item = imported[key]
        rows.append(
            [
                labels.get(key, key),
                f"`{item['statement']}`",
                _ms(item["python_start_ms"]),
                _ms(item["with_import_ms"]),
                _ms(item["import_ms"]),
                "" if key == OURS else _ratio(item["import_ms"], ours),
            ]
        )
    header = ["quién", "importaciones", "arranque de Python", "con las importaciones", "coste", "×"]
    return _table(header, rows, "llrrrr")


_MANY_MEASURES = {
    "open_ms": "abrir un run abierto",
    "return_closed_ms": "devolver un run cerrado",
    "list_open_ms": "listar los abiertos",
}
_STORES = {"sqlite": "SQLite (un fichero)", "postgres": "PostgreSQL (un esquema)"}
FLAT = 0.2  # an exponent at or below this reads as flat
POOL_GOAL = 3.0  # four processes at least this many times sooner than one


def _many_runs(many: dict[str, Any] | None) -> str:
    """«Muchos runs en un almacén»: the exponents of benchmarks.many_runs, and the pool."""
    if not many or not any(key in many for key in _STORES):
        return "No medido en esta ejecución."
    lines = []
    for key, label in _STORES.items():
        if key not in many:
            continue
        rows = many[key]["rows"]
        header = ["qué", *(f"{_number(row['runs'], 0)} runs" for row in rows), "exponente"]
        table = [
            [what, *(_ms(row[metric]) for row in rows), _number(many[key]["exponents"][metric], 2)]
            for metric, what in _MANY_MEASURES.items()
        ]
        lines += [f"**{label}**", "", _table(header, table, "l" + "r" * len(header[1:])), ""]
        if any(exponent < -FLAT for exponent in many[key]["exponents"].values()):
            lines += [
                "Un exponente negativo no dice que el almacén se acelere al crecer: dice que el"
                " ruido de la máquina de un tamaño a otro fue mayor que lo que el tiempo creció."
                + (
                    " Abrir y devolver incluyen aquí conectar con el servidor: un almacén nuevo"
                    " es una conexión nueva."
                    if key == "postgres"
                    else ""
                ),
                "",
            ]
    if "file_mb" in many.get("sqlite", {}):
        most = many["sqlite"]["rows"][-1]["runs"]
        lines += [
            f"El fichero SQLite con {_number(most, 0)} runs ocupa "
            f"{_number(many['sqlite']['file_mb'], 1)} MB.",
            "",
        ]
    pool = many.get("pool")
    if pool:
        one, four = pool["one_process"], pool["four_processes"]
        rows = [
            [
                name,
                _ms(seconds * 1000),
                _ms(counts["wall_ms_per_run"]),
                _ms(counts["worker_cpu_ms_per_run"]),
                _ms(counts["start_s"] * 1000) if "start_s" in counts else "—",
                str(counts["driven_twice"]),
            ]
            for name, seconds, counts in (
                ("1 proceso", pool["one_process_s"], one),
                ("4 procesos", pool["four_processes_s"], four),
            )
        ]
        header = [
            "trabajadores",
            "tiempo",
            "por run",
            "CPU por run",
            "arranque",
            "runs conducidos dos veces",
        ]
        load = ""
        if "load_at_start" in pool:
            load = (
                f" (carga de la máquina al empezar: {_number(pool['load_at_start'][0], 1)} en"
                f" {pool['cores']} núcleos)"
            )
        lines += [
            f"**Una cola de trabajadores en PostgreSQL**: {_number(pool['runs'], 0)} runs cortos"
            f" (dos llamadas a un modelo doble que tarda {_number(pool['model_latency_ms'], 0)}"
            " ms cada una y una herramienta), conducidos por un proceso y después por cuatro que"
            " toman runs de la misma lista. Cuatro terminan "
            f"**{_number(pool['speedup'], 2)}×** antes que uno{load}.",
            "",
            _table(header, rows, "lrrrrr"),
        ]
    return "\n".join(lines).rstrip()


def _many_runs_behind(many: dict[str, Any] | None) -> str:
    """Where the many-runs figures miss their goal: not flat, or a pool under 3×."""
    if not many:
        return ""
    findings = []
    for key, label in _STORES.items():
        for metric, what in _MANY_MEASURES.items():
            exponent = many.get(key, {}).get("exponents", {}).get(metric)
            if exponent is not None and exponent > FLAT:
                findings.append(
                    f"- {label}: {what} no es plano al crecer el almacén "
                    f"(exponente {_number(exponent, 2)})."
                )
    pool = many.get("pool")
    if pool and pool["speedup"] < POOL_GOAL:
        findings.append(
            f"- Cuatro trabajadores en PostgreSQL terminan {_number(pool['speedup'], 2)}× antes"
            f" que uno, por debajo de la meta de {_number(POOL_GOAL, 0)}× (ver"
            " [Muchos runs en un almacén](#muchos-runs-en-un-almacen))."
        )
    if pool and (pool["one_process"]["driven_twice"] or pool["four_processes"]["driven_twice"]):
        findings.append("- Algún run de la cola se condujo dos veces.")
    if not findings:
        return ""
    return "\n\nCon muchos runs en un almacén, donde no llegamos a lo que nos pedimos:\n\n" + (
        "\n".join(findings)
    )


# ── the plots ────────────────────────────────────────────────────────────────────────────────


#: Colours the plots draw with, as CSS: the site's own variables (Material's, light or dark as
#: the reader chose), with a fallback for the file opened on its own. matplotlib draws with the
#: placeholder colours on the left; the SVG is then rewritten to say `var(...)` instead, and its
#: <style> sets the contenders' colours for each scheme. So the plots are drawn on the page's
#: own background, in its text colour, and follow the light/dark switch (they are included in
#: the page inline, not as <img>, which could not see the page's variables).
_INK = {
    "#010101": "var(--md-default-fg-color, #222)",  # text, axes, ticks
    "#020202": "var(--md-default-fg-color--light, #888)",  # grid
    "#030303": "var(--md-default-bg-color, #fff)",  # the legend's box
}
#: Each contender's colour (ORDER), light scheme then dark: on white 3.4-5.7:1, on Material's
#: slate 6.3-9.2:1, so every line stands out 3:1 or more (tests/site/test_plots.py measures it).
_LINES = (
    ("#1f77b4", "#60a5fa"),  # blue
    ("#7c3aed", "#c4b5fd"),  # violet
    ("#2ca02c", "#4ade80"),  # green
    ("#c2410c", "#fb923c"),  # orange
    ("#be185d", "#f472b6"),  # pink
)


def _plot(runs: dict[str, Any], metric: str, path: Path) -> None:
    """A log-log plot of `metric` against N, one line per contender; the SVG is the same for
    the same figures (no date, fixed ids), and its colours are the page's (`_INK`)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ink, grid, box = list(_INK)  # the placeholders, in the order above
    matplotlib.rcParams.update(
        {
            "svg.hashsalt": "synaptum-lite",
            "svg.fonttype": "none",
            "font.size": 10,
            "text.color": ink,
            "axes.labelcolor": ink,
            "axes.edgecolor": ink,
            "xtick.color": ink,
            "ytick.color": ink,
            "grid.color": grid,
            "legend.facecolor": box,
            "legend.edgecolor": grid,
            "legend.framealpha": 1.0,
        }
    )
    figure, axes = plt.subplots(figsize=(6.4, 4.0))
    figure.patch.set_visible(False)  # no background of its own: the page's shows through
    axes.patch.set_visible(False)
    for number, (key, marker) in enumerate(zip(ORDER, "oDs^v", strict=True)):
        if key not in runs:
            continue
        rows = runs[key]["rows"]
        values = [row[metric] / (1e6 if metric == "bytes" else 1) for row in rows]
        axes.plot(
            [row["n"] for row in rows],
            values,
            marker=marker,
            label=runs[key]["label"],
            color=f"#0a0a0{number}",  # a placeholder: `_css` gives each contender its colours
        )
    axes.set_xscale("log")
    axes.set_yscale("log")
    sizes = sorted({row["n"] for value in runs.values() for row in value["rows"]})
    shown = [
        row[metric] / (1e6 if metric == "bytes" else 1) for v in runs.values() for row in v["rows"]
    ]
    axes.set_xticks(sizes, [str(n) for n in sizes])
    axes.set_yticks(*_log_ticks(min(shown), max(shown)))
    axes.minorticks_off()
    axes.set_xlabel("N (turnos del run)")
    axes.set_ylabel("MB guardados" if metric == "bytes" else "ms de CPU por paso")
    title = "Almacenamiento frente a N" if metric == "bytes" else "CPU por paso frente a N"
    axes.set_title(title)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    drawn = io.StringIO()
    figure.savefig(drawn, format="svg", metadata={"Date": None})
    plt.close(figure)
    path.write_text(_css(drawn.getvalue(), path.stem, title), encoding="utf-8")


def _css(svg: str, prefix: str, title: str) -> str:
    """matplotlib's SVG made fit to include in a page: no XML prolog, doctype or metadata, every
    id prefixed (two plots on one page share none), colours as CSS, a title for screen readers,
    and no blank line (Markdown would end the HTML block there)."""
    import re

    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, flags=re.S)
    ids = re.findall(r'\bid="([^"]+)"', svg)
    for name in sorted(set(ids), key=len, reverse=True):
        svg = re.sub(rf'(id="|#){re.escape(name)}\b', rf"\g<1>{prefix}-{name}", svg)
    for placeholder, colour in _INK.items():
        svg = svg.replace(placeholder, colour)
    rules = [
        f".{prefix} {{ width: 100%; max-width: 640px; height: auto; }}",
        *(
            f".{prefix} {{ --{prefix}-{n}: {light}; }} "
            f'[data-md-color-scheme="slate"] .{prefix} {{ --{prefix}-{n}: {dark}; }}'
            for n, (light, dark) in enumerate(_LINES)
        ),
    ]
    for n, (light, _) in enumerate(_LINES):
        svg = svg.replace(f"#0a0a0{n}", f"var(--{prefix}-{n}, {light})")
    svg = re.sub(
        r"<svg ([^>]*)>",
        lambda m: (
            f'<svg class="{prefix}" role="img" aria-labelledby="{prefix}-titulo" {m.group(1)}>\n'
            f'<title id="{prefix}-titulo">{title}</title>'
        ),
        svg,
        count=1,
    )
    svg = re.sub(
        r'(<style type="text/css">)',
        lambda m: m.group(1) + " ".join(rules) + " ",
        svg,
        count=1,
    )
    return "\n".join(line for line in svg.splitlines() if line.strip()) + "\n"


def _log_ticks(low: float, high: float) -> tuple[list[float], list[str]]:
    """Ticks for a log axis from `low` to `high`, labelled as plain Spanish numbers: decades
    when the range spans more than two, else 1-2-5 steps."""
    steps = (1,) if math.log10(high / low) > 2 else (1, 2, 5)
    exponents = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
    ticks = [
        s * 10.0**e for e in exponents for s in steps if low / 1.5 <= s * 10.0**e <= high * 1.5
    ]
    labels = [_number(t, max(0, -math.floor(math.log10(t)))) for t in ticks]
    return ticks, labels
