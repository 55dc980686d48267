"""Real HTTP servers on a free local port for tests (web pages to fetch, a stand-in model
process): the serving thread and the reply, written once."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextlib.contextmanager
def serving(
    handler: type[BaseHTTPRequestHandler], *, daemon_threads: bool = False
) -> Iterator[str]:
    """Serve ``handler`` on 127.0.0.1 at a free port from a thread; yields the base URL and
    stops the server after. ``daemon_threads``: closing does not wait for requests still
    being handled (a handler that sleeps past its client's timeout)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = daemon_threads
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def send_body(handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str) -> None:
    """Reply to the request ``handler`` is serving with ``body``, sized."""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)
