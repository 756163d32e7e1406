"""Un agente remoto de verdad: un servidor A2A (protocolo 1.0, JSON-RPC) en 127.0.0.1.

    python _servidor_19.py [--puerto N] [--duracion SEGUNDOS | --retiene] [--modo normal|basura|…]

Lo usan el cuaderno 19 y sus tests. Es un proceso aparte, con su propia memoria: sirve su
tarjeta en `/.well-known/agent-card.json` y atiende `SendMessage`, `GetTask` y `ListTasks`
en `/a2a`. Cada mensaje que recibe crea una tarea que pasa a `TASK_STATE_WORKING` y se
completa `--duracion` segundos después, con una recomendación de vuelo como artefacto. Las
tareas viven en memoria: si el proceso muere, las olvida (como tantos servidores de verdad).

Con `--retiene`, en vez de un plazo, cada tarea trabaja hasta que quien lo arrancó la suelta
(`POST /suelta`, fuera del protocolo): lo que vea quien pregunta no depende de lo deprisa que
vaya la máquina. El cuaderno 19 lo arranca así.

Cuenta lo que recibe: `GET /contador` (fuera del protocolo) dice cuántos mensajes le llegaron
y sus `messageId`, que es lo que mide «el servidor recibió el mensaje una vez», y cuántas
peticiones de cada método JSON-RPC atendió.

`--modo basura` contesta a todo JSON-RPC con HTML; `--modo incompleta`, con un resultado de
`SendMessage` sin tarea ni mensaje; `--modo falla` acaba cada tarea en `TASK_STATE_FAILED`;
`--modo sin-lista` no sabe `ListTasks`. Los modos de los ataques (tests/a2a/test_ataques.py)
cambian solo lo que contesta `GetTask`: `eterna` (la tarea nunca acaba), `ocupado` (429 y
después 503 dos veces, y luego bien), `saturado` (siempre 503), `otra-tarea` (otra tarea que
la pedida), `otro-id` (la respuesta a otra petición JSON-RPC), `pregunta` y `autoriza` (la
tarea se para en INPUT_REQUIRED o AUTH_REQUIRED), `enorme` (un artefacto de 5 MB), `latin1`
(un cuerpo que no es UTF-8), `nan` (NaN, que no es JSON), `anidada` (JSON anidado cien mil
veces) y `gotea` (un byte cada 0,1 s); `redirige` manda la tarjeta a otra URL. `--interfaz
URL` pone en la tarjeta otra URL JSON-RPC que la suya. Con `rechaza-envio`, el primer
`SendMessage` recibe un 429 sin que el servidor lo lea; con `cae-al-contestar`, un 503 después
de recibirlo y crear su tarea.

Al arrancar imprime una línea, `escuchando en http://127.0.0.1:PUERTO`, y sirve hasta que lo
matan. Solo la biblioteca estándar.
"""

from __future__ import annotations

import argparse
import atexit
import json
import math
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

RESPUESTA = "Recomiendo el TP1947: sale a las 9:05 y cuesta 89 €."
FALLO = "No hay vuelos ese día."
PREGUNTA = "¿Qué viernes, exactamente?"
ESPERA = 120  # segundos: solo acaba un cuelgue; en una máquina muy cargada 10 no bastan
TERMINALES = {
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
}


class Estado:
    """Lo que el servidor recuerda: sus tareas y los mensajes que recibió."""

    def __init__(
        self, duracion: float, modo: str, interfaz: str | None = None, retiene: bool = False
    ) -> None:
        self.duracion = duracion
        self.retiene = retiene
        self.suelta = threading.Event()  # con `retiene`: las tareas acaban cuando se pone
        self.modo = modo
        self.interfaz = interfaz
        self.peticiones: dict[str, int] = {}
        self.cerrojo = threading.Lock()
        self.tareas: dict[str, dict[str, Any]] = {}
        self.termina: dict[str, float] = {}
        self.mensajes: list[str] = []

    def tarea(self, id_: str) -> dict[str, Any] | None:
        """La tarea `id_` tal como está ahora (completada si ya pasó su duración)."""
        tarea = self.tareas.get(id_)
        if tarea is None:
            return None
        if (
            tarea["status"]["state"] == "TASK_STATE_WORKING"
            and (self.suelta.is_set() if self.retiene else time.monotonic() >= self.termina[id_])
            and self.modo != "eterna"
        ):
            if self.modo in ("pregunta", "autoriza"):
                estado = "INPUT_REQUIRED" if self.modo == "pregunta" else "AUTH_REQUIRED"
                tarea["status"] = _estado_con_mensaje(estado, f"{id_}/pregunta", PREGUNTA)
                return tarea
            if self.modo == "falla":
                tarea["status"] = _estado_con_mensaje("FAILED", f"{id_}/fallo", FALLO)
                return tarea
            tarea["status"] = {"state": "TASK_STATE_COMPLETED", "timestamp": _ahora()}
            tarea["artifacts"] = [{"artifactId": "recomendacion", "parts": [{"text": RESPUESTA}]}]
        return tarea


def tarjeta(base: str, interfaz: str | None = None) -> dict[str, Any]:
    """La tarjeta del agente: quién es y qué sabe hacer. No dice qué riesgo tiene."""
    return {
        "name": "Buscador de vuelos",
        "description": "Busca vuelos y recomienda uno.",
        "version": "1.0.0",
        "supportedInterfaces": [
            {
                "url": interfaz or f"{base}/a2a",
                "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0",
            }
        ],
        "capabilities": {"streaming": False, "pushNotifications": False},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [
            {
                "id": "buscar-vuelos",
                "name": "Buscar vuelos",
                "description": "Busca los vuelos a una ciudad y recomienda uno.",
                "tags": ["viajes"],
            }
        ],
    }


def _ahora() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _copia(tarea: dict[str, Any], *, artefactos: bool = True) -> dict[str, Any]:
    copia = json.loads(json.dumps(tarea))
    if not artefactos:
        copia.pop("artifacts", None)
    return copia


class Manejador(BaseHTTPRequestHandler):
    estado: Estado  # puesto por `servir`

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - firma heredada
        pass  # ni una línea por petición: el cuaderno lee la salida

    def _responde(self, codigo: int, cuerpo: bytes, tipo: str = "application/json") -> None:
        try:
            self.send_response(codigo)
            self.send_header("Content-Type", tipo)
            self.send_header("Content-Length", str(len(cuerpo)))
            self.end_headers()
            self.wfile.write(cuerpo)
        except (BrokenPipeError, ConnectionResetError):
            pass  # quien preguntó ya no está (un proceso muerto a media petición): nadie oye

    def _json(self, datos: Any, codigo: int = 200) -> None:
        self._responde(codigo, json.dumps(datos, ensure_ascii=False).encode())

    def do_GET(self) -> None:  # noqa: N802 - nombre de http.server
        base = f"http://127.0.0.1:{self.server.server_address[1]}"
        if self.path == "/.well-known/agent-card.json" and self.estado.modo == "redirige":
            self.send_response(302)
            self.send_header("Location", f"{base}/otra/.well-known/agent-card.json")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path.endswith("/.well-known/agent-card.json"):
            self._json(tarjeta(base, self.estado.interfaz))
        elif self.path == "/contador":
            with self.estado.cerrojo:
                self._json(
                    {
                        "mensajes": len(self.estado.mensajes),
                        "ids": self.estado.mensajes,
                        "peticiones": self.estado.peticiones,
                    }
                )
        else:
            self._json({"error": f"no hay nada en {self.path}"}, 404)

    def do_POST(self) -> None:  # noqa: N802 - nombre de http.server
        largo = int(self.headers.get("Content-Length", "0"))
        cuerpo = self.rfile.read(largo)
        if len(cuerpo) < largo:
            return  # el cliente murió a media petición: nunca llegó entera, y no se cuenta
        if self.path == "/suelta":
            self.estado.suelta.set()
            self._json({"sueltas": True})
            return
        if self.path != "/a2a":
            self._json({"error": f"no hay nada en {self.path}"}, 404)
            return
        try:
            peticion = json.loads(cuerpo)
            id_, metodo = peticion.get("id"), peticion["method"]
            parametros = peticion.get("params") or {}
        except (ValueError, KeyError, AttributeError):
            self._json(_error(None, -32700, "no es JSON-RPC"))
            return
        if self.estado.modo == "basura":
            with self.estado.cerrojo:
                if metodo == "SendMessage":  # recibido y contado, contestado con basura
                    self.estado.mensajes.append(str(parametros["message"]["messageId"]))
            self._responde(200, b"<html><body>Servicio en mantenimiento</body></html>", "text/html")
            return
        with self.estado.cerrojo:
            self.estado.peticiones[metodo] = self.estado.peticiones.get(metodo, 0) + 1
            veces = self.estado.peticiones[metodo]
            primer_envio = metodo == "SendMessage" and veces == 1
            if primer_envio and self.estado.modo == "rechaza-envio":
                self._responde(429, b"Too Many Requests", "text/plain")  # sin leerlo ni contarlo
                return
            respuesta = self._atiende(id_, metodo, parametros)
        if primer_envio and self.estado.modo == "cae-al-contestar":
            self._responde(503, b"Service Unavailable", "text/plain")  # recibido, sin respuesta
            return
        if metodo == "GetTask" and self._ataca(respuesta, veces):
            return
        self._json(respuesta)

    def _ataca(self, respuesta: dict[str, Any], veces: int) -> bool:
        """Contesta a GetTask como lo haría un servidor roto (según el modo); False si no."""
        modo, tarea = self.estado.modo, respuesta.get("result")
        if modo == "ocupado" and veces <= 3:
            self.send_response(429 if veces == 1 else 503)
            self.send_header("Retry-After", "0")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif modo == "saturado":
            self._responde(503, b"Service Unavailable", "text/plain")
        elif modo == "otro-id":
            self._json({**respuesta, "id": 999})
        elif modo == "otra-tarea" and tarea:
            self._json({**respuesta, "result": {**tarea, "id": str(uuid.uuid4())}})
        elif modo == "enorme" and tarea:
            tarea["status"] = {"state": "TASK_STATE_COMPLETED"}
            tarea["artifacts"] = [{"artifactId": "a", "parts": [{"text": "x" * 5_000_000}]}]
            self._json(respuesta)
        elif modo == "latin1":
            self._responde(
                200, json.dumps(respuesta, ensure_ascii=False).encode("latin-1", "replace")
            )
        elif modo == "nan" and tarea:
            self._responde(
                200, json.dumps({**respuesta, "result": {**tarea, "x": math.nan}}).encode()
            )
        elif modo == "gotea":  # una cabecera y luego un byte cada 0,1 s, sin acabar nunca
            self.send_response(200)
            self.send_header("Content-Length", "1000000")
            self.end_headers()
            try:
                for _ in range(600):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass  # el cliente se cansó y colgó
        elif modo == "anidada":
            self._responde(200, b"[" * 100_000 + b"]" * 100_000)
        else:
            return False
        return True

    def _atiende(self, id_: Any, metodo: str, parametros: dict[str, Any]) -> dict[str, Any]:
        estado = self.estado
        if metodo == "SendMessage":
            mensaje = parametros.get("message") or {}
            if not isinstance(mensaje.get("messageId"), str) or not mensaje.get("parts"):
                return _error(id_, -32602, "message necesita messageId y parts")
            estado.mensajes.append(mensaje["messageId"])
            if estado.modo == "incompleta":
                return {"jsonrpc": "2.0", "id": id_, "result": {"estado": "recibido"}}
            tarea_id = str(uuid.uuid4())
            tarea = {
                "id": tarea_id,
                "contextId": mensaje.get("contextId") or str(uuid.uuid4()),
                "status": {"state": "TASK_STATE_WORKING", "timestamp": _ahora()},
                "history": [mensaje],
            }
            estado.tareas[tarea_id] = tarea
            estado.termina[tarea_id] = time.monotonic() + estado.duracion
            configuracion = parametros.get("configuration") or {}
            if not configuracion.get("returnImmediately"):
                # bloqueante, como dice el protocolo por defecto: espera a que termine
                estado.cerrojo.release()
                try:
                    if estado.retiene:
                        estado.suelta.wait()
                    else:
                        time.sleep(estado.duracion)
                finally:
                    estado.cerrojo.acquire()
            return _resultado(id_, {"task": _copia(estado.tarea(tarea_id) or tarea)})
        if metodo == "GetTask":
            tarea = estado.tarea(str(parametros.get("id")))
            if tarea is None:
                return _error(id_, -32001, f"no hay ninguna tarea {parametros.get('id')!r}")
            return _resultado(id_, _copia(tarea))
        if metodo == "ListTasks" and estado.modo != "sin-lista":
            contexto = parametros.get("contextId")
            tareas = [
                _copia(t, artefactos=bool(parametros.get("includeArtifacts")))
                for t in (estado.tarea(i) for i in list(estado.tareas))
                if t is not None and (not contexto or t["contextId"] == contexto)
            ]
            return _resultado(
                id_,
                {"tasks": tareas, "nextPageToken": "", "pageSize": 50, "totalSize": len(tareas)},
            )
        return _error(id_, -32601, f"método desconocido: {metodo}")


def _estado_con_mensaje(estado: str, id_mensaje: str, texto: str) -> dict[str, Any]:
    """El estado `TASK_STATE_<estado>` de una tarea, con lo que el agente dice de él."""
    return {
        "state": f"TASK_STATE_{estado}",
        "message": {"messageId": id_mensaje, "role": "ROLE_AGENT", "parts": [{"text": texto}]},
        "timestamp": _ahora(),
    }


def _resultado(id_: Any, resultado: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": resultado}


def _error(id_: Any, codigo: int, mensaje: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": codigo, "message": mensaje}}


def servir(
    puerto: int, duracion: float, modo: str, interfaz: str | None = None, retiene: bool = False
) -> None:
    estado = Estado(duracion, modo, interfaz, retiene)
    manejador = type("ManejadorA2A", (Manejador,), {"estado": estado})
    servidor = ThreadingHTTPServer(("127.0.0.1", puerto), manejador)
    servidor.daemon_threads = True
    print(f"escuchando en http://127.0.0.1:{servidor.server_address[1]}", flush=True)
    servidor.serve_forever()


class Proceso:
    """El servidor visto desde quien lo arranca (el cuaderno, un test): su URL, lo que
    recibió, y pararlo. Arrancarlo es lanzar este fichero como un proceso aparte."""

    def __init__(
        self,
        *,
        duracion: float = 1.0,
        modo: str = "normal",
        puerto: int = 0,
        interfaz: str | None = None,
        retiene: bool = False,
    ) -> None:
        otra = ["--interfaz", interfaz] if interfaz else []
        otra += ["--retiene"] if retiene else []
        self.proceso = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--puerto",
                str(puerto),
                "--duracion",
                str(duracion),
                "--modo",
                modo,
                *otra,
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proceso.stdout is not None
        linea = self.proceso.stdout.readline()
        if not linea.startswith("escuchando en "):
            self.para()
            raise RuntimeError(f"el servidor A2A no arrancó: {linea!r}")
        self.url = linea.split()[-1]
        self.puerto = int(self.url.rsplit(":", 1)[1])
        atexit.register(self.para)  # un cuaderno que falla a mitad no deja un servidor huérfano

    def mensajes(self) -> list[str]:
        """Los `messageId` de los mensajes que recibió, en orden."""
        with urllib.request.urlopen(f"{self.url}/contador", timeout=ESPERA) as respuesta:
            return list(json.load(respuesta)["ids"])

    def peticiones(self, metodo: str) -> int:
        """Cuántas peticiones `metodo` (JSON-RPC) atendió."""
        with urllib.request.urlopen(f"{self.url}/contador", timeout=ESPERA) as respuesta:
            return int(json.load(respuesta)["peticiones"].get(metodo, 0))

    def estado_de(self, tarea: str) -> str:
        """El estado de la tarea `tarea` ahora, preguntado por el protocolo (GetTask)."""
        peticion = urllib.request.Request(
            f"{self.url}/a2a",
            data=json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": tarea}}
            ).encode(),
            headers={"Content-Type": "application/json", "A2A-Version": "1.0"},
        )
        with urllib.request.urlopen(peticion, timeout=ESPERA) as respuesta:
            return str(json.load(respuesta)["result"]["status"]["state"])

    def suelta(self) -> None:
        """Con `retiene`: sus tareas acaban ya (las que estén trabajando y las que lleguen)."""
        peticion = urllib.request.Request(f"{self.url}/suelta", data=b"", method="POST")
        with urllib.request.urlopen(peticion, timeout=ESPERA) as respuesta:
            respuesta.read()

    def para(self) -> None:
        """Lo mata (SIGKILL donde lo hay): sus tareas, que vivían en su memoria, se pierden."""
        if self.proceso.poll() is None:
            self.proceso.kill()
        self.proceso.wait()
        if self.proceso.stdout is not None:
            self.proceso.stdout.close()


MODOS = ["normal", "basura", "incompleta", "falla", "sin-lista", "eterna", "ocupado", "saturado"]
MODOS += ["otra-tarea", "pregunta", "autoriza", "enorme", "latin1", "nan", "anidada", "redirige"]
MODOS += ["gotea", "otro-id", "rechaza-envio", "cae-al-contestar"]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="_servidor_19.py")
    parser.add_argument("--puerto", type=int, default=0, help="0: uno libre")
    parser.add_argument("--duracion", type=float, default=1.0, help="segundos por tarea")
    parser.add_argument("--modo", choices=MODOS, default="normal")
    parser.add_argument("--interfaz", help="la URL JSON-RPC que dice la tarjeta")
    parser.add_argument(
        "--retiene", action="store_true", help="las tareas trabajan hasta POST /suelta"
    )
    opciones = parser.parse_args(argv)
    servir(opciones.puerto, opciones.duracion, opciones.modo, opciones.interfaz, opciones.retiene)


if __name__ == "__main__":
    main(sys.argv[1:])
