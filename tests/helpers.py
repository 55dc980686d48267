"""Helpers for tests that start the real programs as subprocesses."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def program_env(**extra: str) -> dict[str, str]:
    """The test environment (same data folder and database) for a child process."""
    env = dict(os.environ)
    env.update(
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGGRAPH_NO_VERSION_CHECK="true",
        LANGSMITH_TRACING="false",
    )
    env.update(extra)
    return env


def quire(*args: str, input: str | None = None, **env: str) -> subprocess.CompletedProcess:
    """Run the installed ``quire`` console script (``input`` goes to its stdin)."""
    return subprocess.run(
        [str(BIN / "quire"), *args],
        input=input,
        cwd=ROOT,
        env=program_env(**env),
        capture_output=True,
        text=True,
        timeout=600,
    )


def sse_events(body: str) -> list[tuple[str, dict]]:
    """Parse a text/event-stream body into ``(event, data)`` pairs."""
    events = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if data:
            events.append((name, json.loads("\n".join(data))))
    return events
