"""Helpers for tests that start the real programs as subprocesses."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

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


def start_api(env: dict[str, str], log: Path, timeout: float = 90) -> tuple[subprocess.Popen, str]:
    """Start ``uvicorn api.app:app`` on a free loopback port and wait for ``/health``:
    ``(process, url)``. Its output goes to ``log`` (a file: a full pipe would stall it)."""
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,  # the project's virtualenv python
                "-m",
                "uvicorn",
                "api.app:app",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--no-access-log",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            text = log.read_text(errors="replace")
            raise RuntimeError(f"the API exited ({proc.returncode}):\n{text[-4000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            stop_process(proc)
            text = log.read_text(errors="replace")
            raise RuntimeError(f"the API did not answer /health:\n{text[-4000:]}")
        time.sleep(0.25)


def stop_process(proc: subprocess.Popen) -> None:
    """Terminate ``proc`` (kill it if it does not end within 20 s)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
