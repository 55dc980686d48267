"""A stand-in for the model process in supervisor tests: the same health and chat routes,
no weights. ``python tests/support/fake_model_server.py PORT``.

Its behaviour comes from files in the folders on ``PYTHONPATH`` (how the supervisor selects
a llama.cpp build), so a test can give one "build" a fault:

* ``crash-on-token``: the process dies of SIGSEGV when asked for a token, as a llama.cpp
  kernel that does not run on this CPU would;
* ``crash-mid-reply``: the same, after the reply's headers are sent (a cut reply);
* ``exit-at-start``: it exits with code 3 before serving.

Each start appends a line to ``$FAKE_MODEL_STARTS`` when that is set.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def _marked(name: str) -> bool:
    folders = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return any((Path(f) / name).exists() for f in folders)


def _segfault() -> None:
    # Sent to this thread, not the process: a process-directed SIGSEGV is handled by the
    # main thread (the kernel does not kill the group at once for core-dumping signals), so
    # this thread could write a whole reply first. A real kernel fault stops its own thread.
    signal.pthread_kill(threading.get_ident(), signal.SIGSEGV)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # quiet
        pass

    def _json(self, payload: dict, *, cut: bool = False) -> None:
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if cut:
            _segfault()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/quire/health":
            self._json({"status": "ok", "pid": os.getpid(), "system_info": "AVX2 = 1 |"})
        else:
            self.send_error(404)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if _marked("crash-on-token"):
            _segfault()
        self._json(
            {
                "id": "fake",
                "object": "chat.completion",
                "model": "fake",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "OK"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
            },
            cut=_marked("crash-mid-reply"),
        )


def main() -> None:
    if log := os.environ.get("FAKE_MODEL_STARTS"):
        with open(log, "a") as f:
            f.write(f"{os.getpid()} {os.environ.get('PYTHONPATH', '')}\n")
    if _marked("exit-at-start"):
        sys.exit(3)
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()


if __name__ == "__main__":
    main()
