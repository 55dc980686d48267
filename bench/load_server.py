"""The API the load benchmark drives when it is not given a URL: ``uvicorn api.app:app``
on a free loopback port, in a child process, on the database the driver's services use."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from agent.services import Services
from bench.paths import ROOT


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ApiServer:
    """``uvicorn api.app:app`` on a free loopback port, on ``services``' database."""

    def __init__(self, services: Services, model: str, extra_env: dict[str, str] | None = None):
        self.services, self.model = services, model
        self.extra_env = extra_env or {}
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.log_path = Path(tempfile.mkstemp(prefix="quire-load-", suffix=".log")[1])

    def start(self, timeout: float = 120.0) -> str:
        """Start the server and wait for ``/health``; returns its URL."""
        env = dict(os.environ)
        env.pop("QUIRE_DATABASE_URL", None)  # it would win over DATABASE_URL
        env.update(
            DATABASE_URL=self.services.urls.libpq,  # the very database the driver uses
            QUIRE_DATABASE_NAME=self.services.settings.database_name,
            QUIRE_CHAT_MODEL=self.model,
            LANGSMITH_TRACING="false",
            **self.extra_env,
        )
        with self.log_path.open("wb") as out:  # a file: a full pipe would stall the server
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "uvicorn",
                    "api.app:app",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--no-access-log",
                ],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the API exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2, trust_env=False).status_code == 200:
                    return self.url
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the API did not answer /health:\n{self.tail()}")
            time.sleep(0.25)

    def tail(self, chars: int = 4000) -> str:
        """The end of the server's log."""
        return self.log_path.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        """Stop the server (terminate, then kill)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
