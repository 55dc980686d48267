"""An HTTP server on a real port standing in for the model process: it records what is
posted to it and answers every completion with one token."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import NamedTuple


class Posted(NamedTuple):
    """One request the stand-in received: its path, headers (lower-case names) and body."""

    path: str
    headers: dict[str, str]
    body: dict


@contextlib.contextmanager
def stand_in_model_server() -> Iterator[tuple[str, list[Posted]]]:
    """Serve on a free local port; yields its URL and the list of requests posted to it."""
    posted: list[Posted] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            headers = {k.lower(): v for k, v in self.headers.items()}
            posted.append(Posted(self.path, headers, body))
            reply = json.dumps({"choices": [{"message": {"content": "."}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", posted
    finally:
        server.shutdown()
        server.server_close()
