// The Web Worker that runs a property page's cells on Pyodide, off the page's thread (a module
// worker: Pyodide 314 refuses classic ones). Everything comes from this site: Pyodide from
// ./pyodide/ (copied from node_modules at build time) and this checkout's synaptum_lite and
// notebooks/comun.py from ./repo.zip.
//
// Python loads once, when the page opens, and stays loaded. Each run starts from the state a
// fresh kernel would have (runtime.py, `limpia` and `prepara`): /repo unpacked anew (the files a
// previous run wrote, runs.db and the like, are gone), the modules of /repo imported anew,
// os.environ and sys.path as they were, new globals for the cells. The state for the next run
// is made right after a run ends, so that a click finds it ready.
//
// Receives {type: "prepara", cells} (once, when the page opens) and {type: "corre", cells}.
// Posts {type: "listo", cargas, cargaMs, preparaMs} whenever a fresh state is ready (the ms
// that loading Pyodide took, and making this fresh state) ({type: "fallo", message} if
// it cannot be made); while running,
// {type: "out" | "err", cell, text} and {type: "error", cell, resumen, detalle} (the cells after
// it do not run); then {type: "hecho", cargas, fetched}. `cargas` counts the loads of Pyodide
// in this worker (1: the page's check asserts that a re-run does not load it again).
import { loadPyodide } from "./pyodide/pyodide.mjs";

let cargas = 0;
let cell = -1; // the cell whose output is being written; -1 while preparing (output dropped)
let fuentes = [];
let preparado = null; // a promise of the runtime, with a fresh state

let cargaMs = null; // how long loading Pyodide took, in this worker's clock

async function arranca() {
  cargas += 1;
  const started = performance.now();
  const [pyodide, archivo, runtime] = await Promise.all([
    loadPyodide({ indexURL: new URL("pyodide/", self.location).href }),
    fetch(new URL("repo.zip", self.location)).then((answer) => answer.arrayBuffer()),
    fetch(new URL("runtime.py", self.location)).then((answer) => answer.text()),
  ]);
  for (const [type, setter] of [["out", "setStdout"], ["err", "setStderr"]]) {
    const decoder = new TextDecoder();
    pyodide[setter]({
      write: (bytes) => {
        const text = decoder.decode(bytes, { stream: true });
        if (cell >= 0 && text) self.postMessage({ type, cell, text });
        return bytes.length;
      },
    });
  }
  cargaMs = performance.now() - started;
  const espacio = pyodide.toPy({});
  pyodide.runPython(runtime, { globals: espacio, filename: "runtime.py" });
  const modulo = espacio.toJs({ create_proxies: true, dict_converter: Object.fromEntries });
  return { pyodide, archivo, ...modulo };
}

async function prepara(anterior) {
  const runtime = await (anterior ?? arranca());
  const started = performance.now();
  cell = -1;
  runtime.limpia();
  runtime.pyodide.unpackArchive(runtime.archivo, "zip", { extractDir: runtime.REPO });
  await runtime.prepara(fuentes);
  const preparaMs = performance.now() - started;
  self.postMessage({ type: "listo", cargas, cargaMs, preparaMs });
  return runtime;
}

self.onmessage = async ({ data }) => {
  fuentes = data.cells;
  if (data.type === "prepara") {
    preparado = prepara(null);
    preparado.catch((error) => self.postMessage({ type: "fallo", message: String(error) }));
    return;
  }
  const runtime = await preparado;
  for (cell = 0; cell < data.cells.length; cell++) {
    const fallo = (await runtime.corre(data.cells[cell], cell + 1))?.toJs();
    if (fallo) {
      const [resumen, detalle] = fallo;
      self.postMessage({ type: "error", cell, resumen, detalle });
      break;
    }
  }
  cell = -1;
  // what this worker fetched (its imports, Pyodide's files, repo.zip), for the site check
  const fetched = performance.getEntriesByType("resource").map((entry) => entry.name);
  self.postMessage({ type: "hecho", cargas, fetched });
  preparado = prepara(Promise.resolve(runtime));
  preparado.catch((error) => self.postMessage({ type: "fallo", message: String(error) }));
};
