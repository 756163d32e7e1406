"""What the local model really printed for two notebooks, captured by a command, shown on Modelos.

    uv run --extra http python -m scripts.captura_modelo            # rewrite the excerpt
    uv run --extra http python -m scripts.captura_modelo --veces 5  # measure: Spanish answers

The excerpt on `docs/modelos.md` sits between `INICIO` and `FIN`. Nobody types it: this
command writes it from captures, the printed output of each notebook in `NOTEBOOKS` run on a
real model. The captures come from `CAPTURAS` (`build/modelo-real/<notebook>.txt`), which
`tests/real/test_notebooks_on_a_real_model.py` writes on every real-model run (CI's included);
when one is missing and `SYNAPTUM_BASE_URL` names a server, this command runs that notebook
itself, as those tests do. What a real model says varies, so nothing compares the excerpt with
a run byte for byte: `tests/real/test_captura.py` checks its structure (which notebooks, their
titles, the header that names the server) and that it is what `excerpt` writes.

`--veces N` runs each notebook N times on the server and counts the answers whose words are
Spanish (`language_of`, a count of common words; the answer line is found by `ANSWER`).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from scripts.kernel import News, run_notebooks_sync
from scripts.pages import DOCS, REPO, property_notebooks, relative

PAGE = DOCS / "modelos.md"
CAPTURAS = REPO / "build" / "modelo-real"
INICIO = (
    "<!-- captura-modelo-real: inicio (python -m scripts.captura_modelo la escribe) --> "
    "<!-- no-afirma: sobre esta página — empieza el extracto capturado -->"
)
FIN = (
    "<!-- captura-modelo-real: fin --> "
    "<!-- no-afirma: sobre esta página — acaba el extracto capturado -->"
)
#: What each block of the excerpt is, for the claim check (scripts/claims.py).
CAPTURED = (
    "<!-- no-afirma: sobre la plataforma — capturado con un modelo de verdad, "
    "lo escribe scripts/captura_modelo.py -->"
)

#: The two notebooks the excerpt shows: the seed's resume, and a person's approval. Each
#: answers after a tool's result, where the model used to switch to English.
NOTEBOOKS = ("02_durabilidad", "03_aprobacion")

#: Where each notebook prints the model's answer (its first group): after its second round.
ANSWER = {
    "02_durabilidad": re.compile(r"2ª vuelta[^\n]*\n\n  ([^\n]*)"),
    "03_aprobacion": re.compile(r"2ª vuelta[^\n]*\n[^\n]*\n\n  ([^\n]*)"),
}

#: Words that say which language a sentence is in (articles, prepositions, common verbs).
_SPANISH = set(
    "el la los las de del que es en un una y o por con para su al se lo le te mi hay está "
    "están son tiene ha han he más muy pero ya no sí cómo como puedo hoy".split()
)
_ENGLISH = set(
    "the of is and to in an for with your has are on there it be i you can how what this that "
    "today was will have not but or".split()
)
TIMEOUT = 900.0


def language_of(text: str) -> str:
    """`"es"`, `"en"` or `"?"`: which of the two word lists the text uses more. A word with an
    accent or an ñ, and an opening ¿ or ¡, count as Spanish too ("a" is in neither list)."""
    words = re.findall(r"[a-záéíóúñü]+", text.lower())
    spanish = sum(word in _SPANISH or bool(re.search("[áéíóúñ]", word)) for word in words)
    spanish += text.count("¿") + text.count("¡")
    english = sum(word in _ENGLISH for word in words)
    return "es" if spanish > english else "en" if english > spanish else "?"


def answer_of(stem: str, printed: str) -> str | None:
    """The model's answer in what notebook `stem` printed, or `None` if it printed none."""
    found = ANSWER[stem].search(printed)
    return found.group(1).strip() if found else None


def run_on_the_server(stems: list[str]) -> dict[str, str]:
    """Run notebooks on the server of `SYNAPTUM_BASE_URL`, one at a time; their printed text."""
    base_url = os.environ.get("SYNAPTUM_BASE_URL")
    if not base_url:
        raise SystemExit(
            "captura_modelo: no capture in build/modelo-real and SYNAPTUM_BASE_URL is not set; "
            'start the model (python3 scripts/modelo_local.py start; eval "$(python3 '
            'scripts/modelo_local.py env)") or run tests/real with SYNAPTUM_LOCAL_MODEL_URL'
        )
    model = {"SYNAPTUM_BASE_URL": base_url}
    model["SYNAPTUM_MODEL"] = os.environ.get("SYNAPTUM_MODEL", "qwen2.5-coder-0.5b-instruct")
    paths = {path.stem: path for path in property_notebooks()}
    log = os.environ.get("SYNAPTUM_LOCAL_MODEL_LOG")  # the server's: a cell fails on its silence
    news = News.of_file(Path(log)) if log else None
    notebooks = [paths[s] for s in stems]
    runs = run_notebooks_sync(notebooks, parallel=1, timeout=TIMEOUT, model=model, news=news)
    printed = {}
    for run in runs:
        if run.problems():
            raise SystemExit(
                f"captura_modelo: {relative(run.path)} failed on the real model:\n"
                + "\n".join(run.problems())
            )
        printed[run.path.stem] = run.printed
    return printed


def write_captures(printed: dict[str, str], folder: Path = CAPTURAS) -> None:
    """Keep what each notebook printed on the real model, as the excerpt reads it."""
    folder.mkdir(parents=True, exist_ok=True)
    for stem, text in printed.items():
        (folder / f"{stem}.txt").write_text(text, encoding="utf-8")


def excerpt(printed: dict[str, str], model: str) -> str:
    """The excerpt for Modelos: one block per notebook in `NOTEBOOKS`, marked as captured."""
    parts = [
        INICIO,
        "",
        f'!!! example "Capturado con un modelo de verdad ({model}), no con el doble"',
        f"    {CAPTURED}",
        "",
        "    Lo que imprimieron estos cuadernos, sin tocar, contra `llama-server` en esta máquina.",
        "    No se compara con nada byte a byte: otra ejecución puede decir otra cosa. Lo",
        f"    escribe `python -m scripts.captura_modelo`, no una persona. {CAPTURED}",
    ]
    for stem in NOTEBOOKS:
        text = printed[stem].strip("\n")
        parts += ["", f"    `{stem}.ipynb` {CAPTURED}", "", "    ```text"]
        parts += [f"    {line}".rstrip() for line in text.splitlines()]
        parts += ["    ```"]
    parts += ["", FIN]
    return "\n".join(parts)


def blocks_of(page: str) -> dict[str, str]:
    """The captured text of each notebook in the excerpt of `page` (what `excerpt` was given,
    without leading and trailing blank lines)."""
    start, end = page.index(INICIO), page.index(FIN)
    found = re.findall(
        r"^    `(\d\d_\w+)\.ipynb`[^\n]*\n\n    ```text\n(.*?)\n    ```$",
        page[start:end],
        re.MULTILINE | re.DOTALL,
    )
    return {stem: "\n".join(line[4:] for line in body.splitlines()) for stem, body in found}


def model_of(page: str) -> str:
    found = re.search(r"Capturado con un modelo de verdad \((.*?)\)", page)
    if not found:
        raise ValueError(f"{PAGE.name} has no captured excerpt between {INICIO!r} and {FIN!r}")
    return found.group(1)


def rewrite_page(printed: dict[str, str], model: str, page: Path = PAGE) -> None:
    text = page.read_text(encoding="utf-8")
    start, end = text.index(INICIO), text.index(FIN) + len(FIN)
    page.write_text(text[:start] + excerpt(printed, model) + text[end:], encoding="utf-8")


def measure(times: int, stems: list[str]) -> None:
    """Run each notebook `times` times on the server and count its answers by language.

    The last run of each is kept as its capture, as the real-model tests keep theirs."""
    for stem in stems:
        counts = {"es": 0, "en": 0, "?": 0, "sin respuesta": 0}
        for _ in range(times):
            try:
                printed = run_on_the_server([stem])[stem]
            except SystemExit as failed:  # a run that fails is counted, and the next one runs
                counts["falló"] = counts.get("falló", 0) + 1
                print(f"  {stem}: {failed}", flush=True)
                continue
            write_captures({stem: printed})
            answer = answer_of(stem, printed)
            counts["sin respuesta" if answer is None else language_of(answer)] += 1
            print(f"  {stem}: {answer!r}", flush=True)
        summary = " · ".join(f"{name} {n}" for name, n in counts.items() if n)
        print(f"{stem}: {summary} (de {times})", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--veces", type=int, default=0, help="measure: runs per notebook")
    parser.add_argument("cuadernos", nargs="*", help=f"with --veces: some of {NOTEBOOKS}")
    parser.add_argument(
        "--ejecuta", action="store_true", help="run both notebooks now, even if captured"
    )
    options = parser.parse_args(argv)
    unknown = [stem for stem in options.cuadernos if stem not in NOTEBOOKS]
    if unknown:
        parser.error(f"{', '.join(unknown)}: the notebooks measured here are {NOTEBOOKS}")
    if options.veces:
        measure(options.veces, options.cuadernos or list(NOTEBOOKS))
        return 0
    missing = [s for s in NOTEBOOKS if options.ejecuta or not (CAPTURAS / f"{s}.txt").exists()]
    if missing:
        write_captures(run_on_the_server(missing))
    printed = {s: (CAPTURAS / f"{s}.txt").read_text(encoding="utf-8") for s in NOTEBOOKS}
    model = os.environ.get("SYNAPTUM_MODEL", "qwen2.5-coder-0.5b-instruct")
    rewrite_page(printed, model)
    print(
        f"captura_modelo: {relative(PAGE)} shows {', '.join(NOTEBOOKS)} from {relative(CAPTURAS)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
