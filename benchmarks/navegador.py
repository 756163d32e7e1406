"""The in-browser run of the property pages, timed in real Chromium on the built site.

    uv run python -m benchmarks.navegador [--antes REF] [--despues REF] [--repeticiones N]

For every page that runs in a browser (`scripts.navegador.browser_notebooks`): open it in a
fresh tab at 1280×800 and time, in the page's own clock (`performance.now()`, recorded by
`docs/_hooks/navegador/pagina.js`):

- *listo*: from the start of the navigation to the page saying Python is ready (and, of
  that, how long loading Pyodide took in the worker, and making the first fresh state);
- *primer clic*: from the click, once ready, to the first line a cell prints (a page that
  loads Python only after the click, as before, includes that load);
- *segundo clic*: the same for a second click, once the page is ready again (a re-run).

With `--antes REF`, the site of that commit (`git archive`) is built too, and each page is timed
on both sites alternately, in the same sitting; with `--despues REF`, the site timed as now is
that commit's instead of the working tree's. The figures go to
`benchmarks/results/navegador.json`, and `benchmarks.page` writes them into *Rendimiento*.
Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from benchmarks import page
from scripts.navegador import browser_notebooks
from scripts.pages import REPO, page_url
from scripts.site import start_build
from tests.site.chromium import Browser, Tab, find_chromium
from tests.site.conftest import serve

RESULTS = page.NAVEGADOR
COMMAND = "uv run python -m benchmarks.navegador --antes REF"
#: Bounds that only end a hang.
LOAD_TIMEOUT = 120.0
RUN_TIMEOUT = 180.0

_STATE = "JSON.stringify({estado: window.synaptumNavegador ?? null, run: window.synaptumEjecucion ?? null, listo: !document.querySelector('.navegador-ejecutar button')?.disabled})"  # noqa: E501
_PRESS = "document.querySelector('.navegador-ejecutar button').click()"


def _value(tab: Tab, expression: str) -> Any:
    return tab.send("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get(
        "value"
    )


def _wait(tab: Tab, done: Any, timeout: float, what: str) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = json.loads(_value(tab, _STATE))
        if done(state):
            return dict(state)
        time.sleep(0.02)
    raise TimeoutError(f"{what}: nothing within {timeout:.0f} s")


def _ready(state: dict[str, Any]) -> bool:
    """The page says Python is ready (or, on a page that loads it only on a click, at once)."""
    if state["estado"] is None:
        return True
    return bool(state["estado"]["preparado"]) and state["listo"]


def measure_page(browser: Browser, url: str) -> dict[str, Any]:
    """One page: ready, then the first output of two clicks, in ms."""
    figures: dict[str, Any] = {}
    with browser.tab() as tab:
        tab.send("Page.enable")
        tab.send("Runtime.enable")
        tab.load(url, 1280, 800, mobile=False, deadline=time.monotonic() + LOAD_TIMEOUT)
        state = _wait(tab, _ready, LOAD_TIMEOUT, f"{url}: ready")
        estado = state["estado"] or {}
        figures["listo_ms"] = estado.get("listo")
        # of that: loading Pyodide, and making the first fresh state (imports ahead included)
        figures["pyodide_ms"] = estado.get("cargaMs")
        figures["prepara_ms"] = estado.get("preparaMs")
        for name in ("primer_clic_ms", "segundo_clic_ms"):
            before = (state["run"] or {}).get("inicio")
            _value(tab, _PRESS)
            state = _wait(
                tab,
                lambda s, before=before: (
                    s["run"] is not None
                    and s["run"]["inicio"] != before
                    and s["run"]["fin"] is not None
                ),
                RUN_TIMEOUT,
                f"{url}: {name}",
            )
            run = state["run"]
            if run["primeraSalida"] is None or run["error"]:
                raise RuntimeError(f"{url}: the run printed nothing ({run['error']})")
            figures[name] = run["primeraSalida"] - run["inicio"]
            figures[name.replace("_ms", "_total_ms")] = run["fin"] - run["inicio"]
            state = _wait(tab, _ready, RUN_TIMEOUT, f"{url}: ready again")
        figures["cargas"] = (state["estado"] or {}).get("cargas")
    return figures


def build_site(config: Path, site: Path) -> Path:
    build = start_build(site, config)
    log, _ = build.communicate(timeout=600)
    if build.returncode != 0:
        raise RuntimeError(f"the site of {config} did not build:\n{log[-3000:]}")
    return site


def sources_of(ref: str, root: Path) -> Path:
    """The site's sources at commit `ref`, unpacked in `root` (its mkdocs.yml)."""
    archive = root / "fuentes.tar"
    with archive.open("wb") as out:
        subprocess.run(
            ["git", "archive", ref, "docs", "notebooks", "scripts", "synaptum_lite", "mkdocs.yml"],
            cwd=REPO,
            stdout=out,
            check=True,
        )
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    files = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", ref], cwd=REPO, capture_output=True, text=True
    ).stdout.split()
    (root / ".kit-files").write_text("".join(f"100644 {name}\n" for name in files))
    (root / "node_modules").symlink_to(REPO / "node_modules")
    return root / "mkdocs.yml"


def _commit(ref: str | None) -> str | None:
    """The short hash of `ref` (None for none: the working tree)."""
    if not ref:
        return None
    done = subprocess.run(
        ["git", "rev-parse", "--short", ref], cwd=REPO, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _load() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def _served(site: Path) -> Iterator[str]:
    yield from serve(site)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--antes", help="a commit whose site is timed alongside (git ref)")
    parser.add_argument(
        "--despues", help="time the site of this commit, not of the working tree (git ref)"
    )
    parser.add_argument("--repeticiones", type=int, default=1)
    args = parser.parse_args(argv)
    chromium = find_chromium()
    if chromium is None:
        raise SystemExit("Chromium is missing: apt-get install -y chromium")
    with tempfile.TemporaryDirectory(prefix="synaptum-navegador-") as scratch, ExitStack() as stack:
        config = REPO / "mkdocs.yml"
        if args.despues:
            (Path(scratch) / "fuentes-despues").mkdir()
            config = sources_of(args.despues, Path(scratch) / "fuentes-despues")
        sites = {"despues": build_site(config, Path(scratch) / "despues")}
        if args.antes:
            (Path(scratch) / "fuentes-antes").mkdir()
            config = sources_of(args.antes, Path(scratch) / "fuentes-antes")
            sites["antes"] = build_site(config, Path(scratch) / "antes")
        urls = {key: stack.enter_context(_serving(site)) for key, site in sites.items()}
        browser = stack.enter_context(_browser(chromium))
        started = datetime.datetime.now(datetime.UTC)
        load_before = _load()
        rows = []
        for notebook in browser_notebooks():
            row: dict[str, Any] = {"pagina": notebook.stem}
            samples: dict[str, list[dict[str, Any]]] = {key: [] for key in urls}
            for _ in range(args.repeticiones):
                for key, url in urls.items():
                    figures = measure_page(browser, url + page_url(notebook))
                    samples[key].append(figures)
                    print(notebook.stem, key, json.dumps(figures), flush=True)
            for key, values in samples.items():
                row[key] = {metric: _median([v[metric] for v in values]) for metric in values[0]}
            rows.append(row)
        results = {
            "command": " ".join(
                [COMMAND.removesuffix(" --antes REF")]
                + [f"--{name} {value}" for name, value in vars(args).items() if value]
            ),
            "fecha": started.strftime("%Y-%m-%d %H:%M UTC"),
            "antes": _commit(args.antes),
            "despues": _commit(args.despues),
            "repeticiones": args.repeticiones,
            "chromium": browser.version,
            "nucleos": os.cpu_count(),
            "carga": {"al_empezar": load_before, "al_terminar": _load()},
            "paginas": rows,
        }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {RESULTS.relative_to(REPO)}")
    latest = page.HERE / "results" / "latest.json"
    if latest.is_file():
        page.write(json.loads(latest.read_text(encoding="utf-8")))
        print(f"wrote {page.PAGE.relative_to(REPO)}")


def _median(values: list[Any]) -> Any:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


class _serving:
    def __init__(self, site: Path) -> None:
        self._generator = _served(site)

    def __enter__(self) -> str:
        return next(self._generator)

    def __exit__(self, *exc: object) -> None:
        self._generator.close()


class _browser:
    def __init__(self, executable: str) -> None:
        self._browser = Browser(executable)

    def __enter__(self) -> Browser:
        return self._browser

    def __exit__(self, *exc: object) -> None:
        self._browser.close()


if __name__ == "__main__":
    main()
