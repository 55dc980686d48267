"""An HTTP server on a real port standing in for the model process: it records what is
posted to it and answers every completion with one token."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import NamedTuple

from tests.support.local_http import send_body, serving


class Posted(NamedTuple):
    """One request the stand-in received: its path, headers (lower-case names) and body."""

    path: str
    headers: dict[str, str]
    body: dict


@contextlib.contextmanager
def stand_in_model_server(answered: int | None = None) -> Iterator[tuple[str, list[Posted]]]:
    """Serve on a free local port; yields its URL and the list of requests posted to it.
    After ``answered`` replies (if set) it hangs up on every request without a reply, as a
    model process does when its owner stops it."""
    posted: list[Posted] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            headers = {k.lower(): v for k, v in self.headers.items()}
            posted.append(Posted(self.path, headers, body))
            if answered is not None and len(posted) > answered:
                self.close_connection = True
                return
            reply = json.dumps({"choices": [{"message": {"content": "."}}]}).encode()
            send_body(self, 200, reply, "application/json")

        def log_message(self, *args):
            pass

    with serving(Handler) as url:
        yield url, posted
