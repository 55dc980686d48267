"""Keep one local model process alive: start it, prove it answers, restart it when it dies.

A :class:`ModelSupervisor` runs the model process (:mod:`agent.model_server.process`) as a
child on a fixed port, from a thread of the process that owns it (``quire serve``,
``langgraph dev``, a CLI command, a test session). A process only counts as ready once it
has generated one token: a llama.cpp build that crashes in its kernels (a binary tuned for
another CPU) fails there, not in the middle of a user's answer. When the process exits
(a crash, the OOM killer, a kill), the supervisor starts it again on the same port, so the
URL others hold stays valid. A process that cannot become ready on a faster llama.cpp build,
or crashes on it with a fault (SIGSEGV, SIGILL, ...), is started again on the next build
(:mod:`agent.model_server.kernels`). One that cannot become ready twice in a row on the
portable build marks the supervisor ``failed`` (chat then falls back to the extractive
answerer) and it tries again after a cool-down.

The child gets SIGTERM if the supervising thread dies (``PR_SET_PDEATHSIG``), so a killed
owner never leaves a 1.9 GB model behind.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agent.model_server import HEALTH_PATH
from agent.model_server.kernels import PORTABLE, KernelBuild

log = logging.getLogger(__name__)

State = Literal["starting", "ready", "restarting", "failed", "stopped"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def describe_exit(code: int | None) -> str:
    """``exit code 1`` or ``signal SIGSEGV`` for a process's return code."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def get_json(url: str, timeout: float) -> dict | None:
    """GET ``url`` as JSON; ``None`` when nothing answers it well."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            return json.loads(reply.read())
    except (OSError, ValueError, http.client.HTTPException):
        return None


def generate_one_token(url: str, timeout: float) -> str:
    """Ask the server at ``url`` for one token of a chat reply; raises ``OSError`` if it
    cannot (the process crashed, refused, timed out or cut its reply short)."""
    body = json.dumps(
        {"messages": [{"role": "user", "content": "Reply with OK."}], "max_tokens": 1, "seed": 1}
    ).encode()
    request = urllib.request.Request(
        f"{url}/v1/chat/completions", body, {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            data = json.loads(reply.read())
    except http.client.HTTPException as exc:  # e.g. IncompleteRead: it died mid-reply
        raise OSError(f"the model server cut its reply short: {exc!r}") from exc
    except ValueError as exc:
        raise OSError(f"the model server answered something that is not JSON: {exc}") from exc
    return str(data["choices"][0]["message"].get("content") or "")


def _log_tail(path: Path, lines: int = 12) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


FAULTS = frozenset({signal.SIGSEGV, signal.SIGILL, signal.SIGBUS, signal.SIGFPE, signal.SIGABRT})
"""Deaths that point at the build's machine code (not a kill, an OOM kill or a stop)."""


@dataclass(frozen=True)
class Ended:
    """How one model process ended: before it proved itself (``start``) or after (``run``)."""

    phase: Literal["start", "run"]
    code: int | None
    reason: str

    @property
    def fault(self) -> bool:
        """Killed by a signal that a broken kernel raises (SIGSEGV, SIGILL, ...)."""
        return self.code is not None and self.code < 0 and -self.code in FAULTS


@dataclass
class ModelSupervisor:
    """One supervised model process reachable at :attr:`url`."""

    command: list[str]
    """How to start the process; its port is :attr:`port`."""
    port: int
    log_path: Path
    builds: list[KernelBuild] = field(default_factory=lambda: [PORTABLE])
    """llama.cpp builds to run, best first; the last is the fallback (see :mod:`.kernels`)."""
    on_build_failed: Callable[[KernelBuild, str], None] | None = None
    """Called when a build crashed with a fault (to skip it from then on)."""
    host: str = "127.0.0.1"
    ready_timeout: float = 180.0
    start_attempts: int = 2
    """Starts in a row that may fail before the supervisor says ``failed``."""
    crash_limit: int = 5
    """Crashes after becoming ready within ``crash_window`` seconds before it says ``failed``."""
    crash_window: float = 120.0
    cooldown: float = 300.0
    """Seconds a ``failed`` supervisor waits before it tries again."""
    on_ready: Callable[[], None] | None = None
    """Called each time a process has proved it answers (to advertise it)."""

    state: State = field(default="stopped", init=False)
    failure: str | None = field(default=None, init=False)
    """Why the last start or run ended (``None`` while all is well)."""
    restarts: int = field(default=0, init=False)
    pid: int | None = field(default=None, init=False)
    skipped: dict[str, str] = field(default_factory=dict, init=False)
    """Builds left for the next one this run: name -> why."""

    def __post_init__(self) -> None:
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        self._process: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None
        self._crashes: deque[float] = deque()

    @property
    def build(self) -> KernelBuild:
        """The llama.cpp build the process runs (or will run next)."""
        return self.builds[0]

    @property
    def url(self) -> str:
        """The server's root URL (the OpenAI API is under ``/v1``)."""
        return f"http://{self.host}:{self.port}"

    # --- control --------------------------------------------------------------------------

    def start(self) -> None:
        """Start supervising (returns at once; see :meth:`wait_ready`)."""
        if self._thread is not None:
            return
        self._stopping.clear()
        self._set("starting")
        self._thread = threading.Thread(
            target=self._supervise, name="model-supervisor", daemon=True
        )
        self._thread.start()

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the process answers (``True``) or the supervisor has failed or stopped."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self.state in ("starting", "restarting"):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
            return self.state == "ready"

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the process and the supervision."""
        self._stopping.set()
        self._terminate(timeout)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._thread = None
        self._set("stopped")

    def kill_process(self) -> None:
        """Kill the model process as a crash would (tests); the supervisor restarts it."""
        if self._process is not None:
            self._process.kill()

    # --- the supervising thread -------------------------------------------------------------

    def _set(self, state: State, failure: str | None = None) -> None:
        with self._changed:
            self.state = state
            if failure is not None or state == "ready":
                self.failure = failure
            self._changed.notify_all()

    def _supervise(self) -> None:
        failed_starts = 0
        while not self._stopping.is_set():
            try:
                ended = self._run_once()
            except Exception as exc:  # a bug here must not leave the model down for good
                log.exception("supervising the local model process failed")
                self._terminate(5.0)
                ended = Ended("start", None, f"the supervisor failed to start it: {exc!r}")
            if self._stopping.is_set():
                break
            first_line = ended.reason.splitlines()[0]
            log.error("local model process (%s build): %s", self.build.name, first_line)
            if len(self.builds) > 1 and (ended.phase == "start" or ended.fault):
                self._skip_build(ended)
                continue  # the next build at once
            if ended.phase == "start":
                failed_starts += 1
            else:
                failed_starts = 0
                self._crashes.append(time.monotonic())
            while self._crashes and self._crashes[0] < time.monotonic() - self.crash_window:
                self._crashes.popleft()
            if failed_starts >= self.start_attempts or len(self._crashes) >= self.crash_limit:
                self._set("failed", ended.reason)
                if self._stopping.wait(self.cooldown):
                    break
                failed_starts = 0
                self._crashes.clear()
                self._set("starting")
            else:
                self._set("restarting", ended.reason)
                self.restarts += 1
                if self._stopping.wait(min(0.5 * 2 ** max(failed_starts - 1, 0), 5.0)):
                    break

    def _skip_build(self, ended: Ended) -> None:
        """Leave the current build for the next one; remember a build that crashed."""
        failed = self.builds.pop(0)
        self.skipped[failed.name] = ended.reason.splitlines()[0]
        log.warning("llama.cpp %s build failed; using the %s build", failed.name, self.build.name)
        if ended.fault and self.on_build_failed is not None:
            self.on_build_failed(failed, ended.reason)

    def _run_once(self) -> Ended:
        """Start the process on the current build, prove it, wait for its end."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as logfile:
            logfile.write(f"\n--- starting ({self.build.name}) {' '.join(self.command)}\n".encode())
            logfile.flush()
            env = {
                **os.environ,
                **self.build.environment(),
                "QUIRE_MODEL_PARENT_PID": str(os.getpid()),
            }
            process = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=logfile,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # a Ctrl-C in the terminal reaches the owner only
            )
        self._process, self.pid = process, process.pid
        problem = self._prove(process)
        if problem is not None:
            self._terminate(5.0)
            tail = _log_tail(self.log_path)
            reason = problem + (f"\n{tail}" if tail else "")
            return Ended("start", process.returncode, reason)
        self._set("ready")
        if self.on_ready is not None:
            try:
                self.on_ready()
            except Exception:
                log.exception("could not advertise the local model server")
        code = process.wait()
        return Ended("run", code, f"the model process ended ({describe_exit(code)}); restarting it")

    def _prove(self, process: subprocess.Popen) -> str | None:
        """``None`` once the process serves and has written one token, else what went wrong."""
        deadline = time.monotonic() + self.ready_timeout
        while get_json(f"{self.url}{HEALTH_PATH}", timeout=1.0) is None:
            if process.poll() is not None:
                return (
                    f"the model process ended while loading ({describe_exit(process.returncode)})"
                )
            if self._stopping.is_set():
                return "stopped"
            if time.monotonic() > deadline:
                return f"the model process did not answer within {self.ready_timeout:g} s"
            time.sleep(0.1)
        try:
            generate_one_token(self.url, timeout=max(deadline - time.monotonic(), 10.0))
        except (OSError, KeyError, IndexError) as exc:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(1.0)
            ended = process.poll()
            if ended is not None:
                return (
                    f"the model process crashed generating its first token ({describe_exit(ended)})"
                )
            return f"the model process could not generate a token: {exc}"
        return None

    def _terminate(self, timeout: float) -> None:
        process = self._process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def model_command(
    model_path: Path,
    port: int,
    *,
    alias: str,
    n_ctx: int,
    n_threads: int,
    n_batch: int,
    prompt_cache_mb: int = 0,
) -> list[str]:
    """The command line of the model process."""
    return [
        sys.executable,
        "-m",
        "agent.model_server.process",
        "--model",
        str(model_path),
        "--alias",
        alias,
        "--port",
        str(port),
        "--n-ctx",
        str(n_ctx),
        "--n-threads",
        str(n_threads),
        "--n-batch",
        str(n_batch),
        "--prompt-cache-mb",
        str(prompt_cache_mb),
    ]
