// The run button of a property page: runs the page's own code cells, as the reader sees them
// (each one can be edited in place), in a Web Worker with Pyodide, and shows under each cell
// what it printed. Nothing is fetched from another origin.
//
// The run's record, for the site check (tests/site/test_en_el_navegador.py) and for anyone
// curious: window.synaptumEjecucion = {inicio, listo, primeraSalida, fin (ms, performance.now()),
// celdas: [{id, stdout, stderr, error}], pedidos: the URLs the worker fetched}.
(() => {
  const panel = document.querySelector(".navegador-ejecutar[data-trabajador]");
  if (!panel) return;
  const button = panel.querySelector("button");
  const status = panel.querySelector(".navegador-estado");
  const codes = [...document.querySelectorAll(".jp-CodeCell .highlight-ipynb pre")];
  for (const code of codes) {
    code.setAttribute("contenteditable", "plaintext-only");
    code.setAttribute("spellcheck", "false");
    code.title = "Puedes cambiar este código y volver a ejecutar la página";
  }
  let worker = null;

  button.addEventListener("click", () => {
    worker?.terminate();
    document.querySelectorAll(".navegador-salida").forEach((old) => old.remove());
    const run = {
      inicio: performance.now(),
      listo: null,
      primeraSalida: null,
      fin: null,
      error: null,
      celdas: codes.map((code) => ({
        id: (code.closest('[id^="cell-id="]')?.id ?? "").replace("cell-id=", "") || null,
        stdout: "",
        stderr: "",
        error: null,
      })),
    };
    window.synaptumEjecucion = run;
    const outputs = codes.map((code) => {
      const output = document.createElement("pre");
      output.className = "navegador-salida";
      output.hidden = true;
      code.closest(".jp-CodeCell").after(output);
      return output;
    });
    const show = (cell, text, kind) => {
      const output = outputs[cell];
      const span = document.createElement("span");
      if (kind !== "out") span.className = "navegador-" + kind;
      span.textContent = text;
      output.append(span);
      output.hidden = false;
    };
    button.disabled = true;
    status.textContent = "Cargando Python en el navegador…";
    worker = new Worker(panel.dataset.trabajador, { type: "module" });
    worker.onmessage = ({ data }) => {
      if (data.type === "ready") {
        run.listo = performance.now();
        status.textContent = "Ejecutando las celdas…";
      } else if (data.type === "out") {
        run.primeraSalida ??= performance.now();
        run.celdas[data.cell].stdout += data.text;
        show(data.cell, data.text, "out");
      } else if (data.type === "err") {
        run.celdas[data.cell].stderr += data.text;
        show(data.cell, data.text, "err");
      } else if (data.type === "error") {
        run.celdas[data.cell].error = data.message;
        show(data.cell, data.message, "error");
      } else if (data.type === "done") {
        run.fin = performance.now();
        run.pedidos = data.fetched;
        const failed = run.celdas.some((celda) => celda.error);
        status.textContent = failed
          ? "Una celda lanzó una excepción: la ves debajo de ella."
          : `Hecho en ${((run.fin - run.inicio) / 1000).toFixed(1)} s. Lo que imprimió cada celda está debajo de ella.`;
        button.disabled = false;
        worker.terminate();
      }
    };
    worker.onerror = (event) => {
      // the worker itself failed (Pyodide could not load, say): the run ends, saying why
      run.error = event.message || "el trabajador de Python falló";
      run.fin = performance.now();
      status.textContent = `No se pudo ejecutar: ${run.error}`;
      button.disabled = false;
    };
    worker.postMessage({ cells: codes.map((code) => code.innerText) });
  });
})();
