// The run panel of a property page: Python (Pyodide) starts in a Web Worker as soon as the
// page opens and stays loaded; the button runs the page's own code cells, as the reader sees
// them (each one can be edited in place; an edited cell is marked), and shows under each cell
// what it printed. The view goes to the first output; an exception shows as its own sentence,
// with the whole traceback folded behind «Ver el detalle». Nothing comes from another origin.
//
// For the site check (tests/site/test_en_el_navegador.py), the benchmark
// (benchmarks/navegador.py) and anyone curious:
//   window.synaptumNavegador = {listo (ms, performance.now(), when Python was first ready, or
//     null), cargaMs and preparaMs (of that: loading Pyodide, and the first fresh state),
//     preparado (ready for a run now), cargas (loads of Pyodide in the worker),
//     ejecuciones (how many runs)};
//   window.synaptumEjecucion = the last run: {inicio, primeraSalida, fin (ms), error,
//     celdas: [{id, stdout, stderr, error (the traceback), resumen (its last sentence)}],
//     pedidos (the URLs the worker fetched), cargas}.
(() => {
  const panel = document.querySelector(".navegador-ejecutar[data-trabajador]");
  if (!panel) return;
  const button = panel.querySelector("button");
  const status = panel.querySelector(".navegador-estado");
  const codes = [...document.querySelectorAll(".jp-CodeCell .highlight-ipynb pre")];
  const state = { listo: null, cargaMs: null, preparaMs: null, cargas: 0, ejecuciones: 0 };
  window.synaptumNavegador = state;
  let worker = null;
  let ready = false; // the worker has a fresh Python for the next run
  Object.defineProperty(state, "preparado", { get: () => ready, enumerable: true });
  let running = null; // the run under way, or null
  let outputs = []; // by cell: the <pre> of what it printed
  let boxes = []; // the exceptions shown

  const say = (text) => {
    status.textContent = text;
  };

  // ── edited cells: marked, and each can go back to the page's code ─────────────────────────
  for (const code of codes) {
    const original = code.innerText;
    const highlighted = code.innerHTML; // the page's code, coloured
    const cell = code.closest(".jp-CodeCell");
    code.setAttribute("contenteditable", "plaintext-only");
    code.setAttribute("spellcheck", "false");
    code.title = "Puedes cambiar este código y volver a ejecutar la página";
    const mark = document.createElement("p");
    mark.className = "navegador-marca";
    mark.hidden = true;
    mark.append("Celda editada: se ejecuta tal como la ves. ");
    const undo = document.createElement("button");
    undo.type = "button";
    undo.textContent = "Volver al código de la página";
    undo.addEventListener("click", () => {
      code.innerHTML = highlighted;
      code.dispatchEvent(new Event("input"));
    });
    mark.append(undo);
    cell.before(mark);
    code.addEventListener("input", () => {
      const edited = code.innerText !== original;
      cell.classList.toggle("navegador-editada", edited);
      mark.hidden = !edited;
    });
  }

  // ── the worker: started now, kept between runs ─────────────────────────────────────────────
  const start = () => {
    ready = false;
    button.disabled = true;
    button.textContent = "Ejecutar en el navegador";
    say("Cargando Python en el navegador…");
    worker = new Worker(panel.dataset.trabajador, { type: "module" });
    worker.onmessage = ({ data }) => receive(data);
    worker.onerror = (event) => fail(event.message || "el trabajador de Python falló");
    worker.postMessage({ type: "prepara", cells: codes.map((code) => code.innerText) });
  };

  const fail = (message) => {
    // the worker itself failed (Pyodide could not load, say): say why, and let a click retry
    if (running) {
      running.error = message;
      running.fin = performance.now();
      running = null;
    }
    worker?.terminate();
    worker = null;
    button.textContent = "Ejecutar en el navegador";
    button.disabled = false;
    say(`No se pudo cargar Python: ${message}. Pulsa el botón para intentarlo de nuevo.`);
  };

  const output = (cell) => {
    if (!outputs[cell]) {
      const pre = document.createElement("pre");
      pre.className = "navegador-salida";
      codes[cell].closest(".jp-CodeCell").after(pre);
      outputs[cell] = pre;
    }
    return outputs[cell];
  };

  const first = (element) => {
    // the view goes to the first thing the run shows, once
    if (running.primeraSalida !== null) return;
    running.primeraSalida = performance.now();
    element.scrollIntoView({ block: "start" }); // below the cell's end: scroll-margin-top
  };

  let said = ""; // what the last run ended saying
  const receive = (data) => {
    if (data.type === "fallo") {
      fail(data.message);
      return;
    }
    if (data.type === "listo") {
      ready = true;
      state.cargas = data.cargas;
      if (state.listo === null) {
        state.listo = performance.now();
        state.cargaMs = data.cargaMs;
        state.preparaMs = data.preparaMs;
      }
      if (!running) {
        button.disabled = false;
        say(
          state.ejecuciones
            ? `${said} Python sigue cargado: puedes cambiar una celda y volver a ejecutar.`
            : "Python está listo: pulsa el botón y las celdas se ejecutan aquí mismo.",
        );
      }
      return;
    }
    const run = running;
    if (!run) return;
    if (data.type === "out" || data.type === "err") {
      const celda = run.celdas[data.cell];
      celda[data.type === "out" ? "stdout" : "stderr"] += data.text;
      const pre = output(data.cell);
      const span = document.createElement("span");
      if (data.type === "err") span.className = "navegador-err";
      span.textContent = data.text;
      pre.append(span);
      first(pre);
    } else if (data.type === "error") {
      const celda = run.celdas[data.cell];
      celda.error = data.detalle;
      celda.resumen = data.resumen;
      const box = document.createElement("div");
      box.className = "navegador-fallo";
      box.setAttribute("role", "alert");
      const sentence = document.createElement("p");
      sentence.className = "navegador-excepcion";
      sentence.textContent = data.resumen;
      const details = document.createElement("details");
      details.className = "navegador-detalle";
      const summary = document.createElement("summary");
      summary.textContent = "Ver el detalle";
      const trace = document.createElement("pre");
      trace.textContent = data.detalle;
      details.append(summary, trace);
      box.append(sentence, details);
      (outputs[data.cell] ?? codes[data.cell].closest(".jp-CodeCell")).after(box);
      boxes.push(box);
      first(box);
    } else if (data.type === "hecho") {
      run.fin = performance.now();
      run.pedidos = data.fetched;
      run.cargas = data.cargas;
      state.cargas = data.cargas;
      state.ejecuciones += 1;
      running = null;
      ready = false; // the worker makes a fresh state for the next run, and says "listo"
      button.textContent = "Ejecutar en el navegador";
      button.disabled = false;
      const failed = run.celdas.findIndex((celda) => celda.error);
      const seconds = ((run.fin - run.inicio) / 1000).toFixed(1).replace(".", ",");
      said =
        failed >= 0
          ? `La celda ${failed + 1} lanzó una excepción: la ves debajo de ella.`
          : `Hecho en ${seconds} s. Lo que imprimió cada celda está debajo de ella.`;
      say(said);
    }
  };

  button.addEventListener("click", () => {
    if (running) {
      // a cell that never ends: stop it, and start a fresh Python
      running.error = "detenida";
      running.fin = performance.now();
      running = null;
      worker.terminate();
      start();
      return;
    }
    if (!worker) start();
    [...outputs, ...boxes].forEach((old) => old?.remove());
    outputs = [];
    boxes = [];
    running = {
      inicio: performance.now(),
      primeraSalida: null,
      fin: null,
      error: null,
      cargas: null,
      pedidos: [],
      celdas: codes.map((code) => ({
        id: (code.closest('[id^="cell-id="]')?.id ?? "").replace("cell-id=", "") || null,
        stdout: "",
        stderr: "",
        error: null,
        resumen: null,
      })),
    };
    window.synaptumEjecucion = running;
    button.textContent = "Detener";
    button.disabled = false;
    say(ready ? "Ejecutando las celdas…" : "Ejecutando en cuanto Python esté listo…");
    worker.postMessage({ type: "corre", cells: codes.map((code) => code.innerText) });
  });

  start();
})();
