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

from tests.support.paths import ROOT

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


def start_server(
    argv: list[str],
    port: int,
    env: dict[str, str],
    log: Path,
    *,
    ready: str = "/health",
    timeout: float = 120,
) -> tuple[subprocess.Popen, str]:
    """Start ``argv`` (a server listening on loopback ``port``) and wait until ``ready``
    answers 200: ``(process, url)``. Its output goes to ``log`` (a file: a full pipe would
    stall it); a server that exits or never answers is stopped and its log's tail raised."""
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            text = log.read_text(errors="replace")
            raise RuntimeError(f"{argv[0]} exited ({proc.returncode}):\n{text[-4000:]}")
        try:
            if httpx.get(f"{url}{ready}", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            stop_process(proc)
            text = log.read_text(errors="replace")
            raise RuntimeError(
                f"{argv[0]} did not answer {ready} in {timeout:.0f} s:\n{text[-4000:]}"
            )
        time.sleep(0.25)


def start_api(env: dict[str, str], log: Path, timeout: float = 90) -> tuple[subprocess.Popen, str]:
    """Start ``uvicorn api.app:app`` (the project's python) on a free loopback port and wait
    for ``/health``: ``(process, url)``."""
    port = free_port()
    argv = [sys.executable, "-m", "uvicorn", "api.app:app", "--host", "127.0.0.1"]
    argv += ["--port", str(port), "--no-access-log"]
    return start_server(argv, port, env, log, timeout=timeout)


def start_langgraph(
    env: dict[str, str], log: Path, timeout: float = 120
) -> tuple[subprocess.Popen, str]:
    """Start ``langgraph dev`` (offline, no reload) on a free loopback port and wait for
    ``/ok``: ``(process, url)``."""
    port = free_port()
    argv = [str(BIN / "langgraph"), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1"]
    argv += ["--port", str(port)]
    return start_server(argv, port, env, log, ready="/ok", timeout=timeout)


def stop_process(proc: subprocess.Popen) -> None:
    """Terminate ``proc`` (kill it if it does not end within 20 s)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
