// The Web Worker that runs a property page's cells on Pyodide, off the page's thread (a module
// worker: Pyodide 314 refuses classic ones).
// Everything comes from this site: Pyodide from ./pyodide/ (copied from node_modules at build
// time) and this checkout's synaptum_lite and notebooks/comun.py from ./repo.zip. One worker
// per run: a new run is a fresh Python, as a fresh kernel is.
//
// Receives {cells: [source, ...]}; posts {type: "ready"}, {type: "out" | "err", cell, text},
// {type: "error", cell, message} (the cells after it do not run), {type: "done", fetched}.
import { loadPyodide } from "./pyodide/pyodide.mjs";

self.onmessage = async ({ data }) => {
  const pyodide = await loadPyodide({ indexURL: new URL("pyodide/", self.location).href });
  const archive = await fetch(new URL("repo.zip", self.location));
  pyodide.unpackArchive(await archive.arrayBuffer(), "zip", { extractDir: "/repo" });
  pyodide.runPython(
    'import os, sys; sys.path.insert(0, "/repo"); os.chdir("/repo/notebooks/propiedades")',
  );
  let cell = 0;
  for (const [type, setter] of [["out", "setStdout"], ["err", "setStderr"]]) {
    const decoder = new TextDecoder();
    pyodide[setter]({
      write: (bytes) => {
        self.postMessage({ type, cell, text: decoder.decode(bytes, { stream: true }) });
        return bytes.length;
      },
    });
  }
  self.postMessage({ type: "ready" });
  for (cell = 0; cell < data.cells.length; cell++) {
    try {
      const value = await pyodide.runPythonAsync(data.cells[cell]);
      value?.destroy?.();
      pyodide.runPython("import sys; sys.stdout.flush(); sys.stderr.flush()");
    } catch (error) {
      self.postMessage({ type: "error", cell, message: String(error.message ?? error) });
      break;
    }
  }
  // what this worker fetched (its imports, Pyodide's files, repo.zip), for the site check
  const fetched = performance.getEntriesByType("resource").map((entry) => entry.name);
  self.postMessage({ type: "done", fetched });
};
