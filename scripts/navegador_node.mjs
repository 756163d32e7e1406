// Runs property notebooks on Pyodide under Node, as a reader's browser runs them (one fresh
// Pyodide per notebook, the repository's files from the archive of scripts/navegador.py, each
// code cell with runPythonAsync in order, so top-level await works), and writes one JSON line
// per notebook: what each cell printed on stdout and stderr, the error it raised, and whether
// it showed a value. Used by tests/navegador/.
//
//   node scripts/navegador_node.mjs ARCHIVE.zip NOTEBOOK.ipynb...
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { loadPyodide } from "pyodide";

const [archivePath, ...notebooks] = process.argv.slice(2);
const archive = new Uint8Array(readFileSync(archivePath));

for (const path of notebooks) {
  const started = performance.now();
  const py = await loadPyodide();
  const loaded = performance.now();
  py.unpackArchive(archive, "zip", { extractDir: "/repo" });
  py.runPython(`import os, sys; sys.path.insert(0, "/repo"); os.chdir("/repo/notebooks/propiedades")`);
  const notebook = JSON.parse(readFileSync(path, "utf8"));
  let current = null;
  const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  for (const stream of ["stdout", "stderr"]) {
    const write = (bytes) => {
      current[stream] += decoders[stream].decode(bytes, { stream: true });
      return bytes.length;
    };
    (stream === "stdout" ? py.setStdout : py.setStderr).call(py, { write });
  }
  const cells = [];
  let firstOutput = null;
  for (const [index, cell] of notebook.cells.entries()) {
    if (cell.cell_type !== "code") continue;
    const source = Array.isArray(cell.source) ? cell.source.join("") : cell.source;
    current = { index, id: cell.id ?? null, stdout: "", stderr: "", error: null, shown: false };
    cells.push(current);
    try {
      const value = await py.runPythonAsync(source);
      if (value !== undefined) {
        current.shown = true;
        value?.destroy?.();
      }
    } catch (error) {
      current.error = String(error.message ?? error);
    }
    py.runPython("import sys; sys.stdout.flush(); sys.stderr.flush()");
    if (firstOutput === null && current.stdout) firstOutput = performance.now();
    if (current.error) break; // as a kernel check: the cells after a failing one do not run
  }
  process.stdout.write(
    JSON.stringify({
      notebook: basename(path),
      cells,
      load_ms: loaded - started,
      first_output_ms: firstOutput === null ? null : firstOutput - started,
      total_ms: performance.now() - started,
    }) + "\n",
  );
}
