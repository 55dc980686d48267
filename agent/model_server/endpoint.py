"""Where the local model answers: one URL per machine, shared by every Quire process.

:func:`local_model` returns the URL of the local model server, in this order:

1. ``QUIRE_LOCAL_MODEL_URL`` when set: a server run elsewhere (another machine, or started
   by ``quire serve`` for its workers). Nothing is started or supervised here.
2. The server this process supervises.
3. A server another Quire process supervises on this data folder, found through
   ``<data folder>/model-server.json`` (its owner alive, its health route answering). A CLI
   run beside ``make run`` reuses the running model instead of loading a second copy.
4. Otherwise this process starts one (under a file lock, so two processes starting at once
   load one model) and supervises it until it exits.

When the model process cannot become ready (a broken build, a corrupt file), the answer
carries the reason instead of a URL and chat falls back to the extractive answerer.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.config import Settings
from agent.model_server import HEALTH_PATH, kernels
from agent.model_server.supervisor import ModelSupervisor, free_port, get_json, model_command
from agent.model_server.warm import warm_openings, warm_prompt_cache

log = logging.getLogger(__name__)

STATE_FILE = "model-server.json"


class ModelUnavailable(RuntimeError):
    """The local model could not be reached, or its process died during the call."""


@dataclass(frozen=True)
class LocalModel:
    """The local model's URL, or why there is none (``failure``)."""

    url: str | None
    failure: str | None = None
    supervisor: ModelSupervisor | None = None
    """Set when this process supervises the server."""


_lock = threading.Lock()
_own: ModelSupervisor | None = None
_stop_own = None  # stops _own and withdraws its state file
_found: str | None = None  # a server found through the state file, until a call fails


def _state_path(settings: Settings) -> Path:
    return settings.data_dir / STATE_FILE


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _shared_server(settings: Settings, wait: float) -> str | None:
    """The URL in the state file when its owner lives and its server answers (waiting up to
    ``wait`` seconds while the owner restarts it)."""
    try:
        state = json.loads(_state_path(settings).read_text())
        url, owner = str(state["url"]), int(state["owner_pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if owner == os.getpid() or not _alive(owner):
        return None
    deadline = time.monotonic() + wait
    while True:
        if get_json(f"{url}{HEALTH_PATH}", timeout=2.0) is not None:
            return url
        if time.monotonic() >= deadline or not _alive(owner):
            return None
        time.sleep(0.25)


def _write_state(settings: Settings, supervisor: ModelSupervisor) -> None:
    path = _state_path(settings)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"url": supervisor.url, "owner_pid": os.getpid()}))
    os.replace(tmp, path)


def _remove_state(settings: Settings, supervisor: ModelSupervisor) -> None:
    with contextlib.suppress(OSError, ValueError, KeyError):
        state = json.loads(_state_path(settings).read_text())
        if state["url"] == supervisor.url and state["owner_pid"] == os.getpid():
            _state_path(settings).unlink()


def new_supervisor(settings: Settings, port: int | None = None) -> ModelSupervisor:
    """A supervisor for the packaged chat model (assembled into the data folder first), on
    the fastest llama.cpp build this CPU may run and that has not failed here before."""
    from agent.local_models import CHAT_LABEL, ensure_chat_model_file

    path = ensure_chat_model_file(settings.model_cache_dir, settings.local_chat_file)
    port = port or settings.local_model_port or free_port()
    command = model_command(
        path,
        port,
        alias=CHAT_LABEL,
        n_ctx=settings.local_chat_n_ctx,
        n_threads=settings.local_chat_threads,
        n_batch=settings.local_chat_n_batch,
        prompt_cache_mb=settings.local_chat_prompt_cache_mb,
    )
    from agent.model_server.kernels import cpu_flags

    builds = kernels.candidates(
        settings.local_model_kernels, cpu_flags(), kernels.failed_builds(settings.data_dir)
    )
    return ModelSupervisor(
        command=command,
        port=port,
        log_path=settings.data_dir / "logs" / "model-server.log",
        builds=builds,
        on_build_failed=lambda build, why: kernels.mark_failed(settings.data_dir, build, why),
        ready_timeout=settings.local_model_start_timeout_seconds,
    )


def _start_own(settings: Settings) -> ModelSupervisor:
    global _own, _stop_own
    supervisor = new_supervisor(settings)
    supervisor.on_ready = lambda: _write_state(settings, supervisor)
    supervisor.start()
    supervisor.wait_ready(settings.local_model_start_timeout_seconds)

    def stop() -> None:
        _remove_state(settings, supervisor)
        supervisor.stop()

    _own, _stop_own = supervisor, stop
    atexit.register(stop)
    return supervisor


def stop_local_model() -> None:
    """Stop the model server this process supervises, if any (the next call finds or starts
    one again)."""
    global _own, _stop_own, _found
    with _lock:
        stop, _own, _stop_own, _found = _stop_own, None, None, None
    if stop is not None:
        atexit.unregister(stop)
        stop()


def local_model(settings: Settings) -> LocalModel:
    """The local model's URL, starting and supervising its process when no other Quire
    process on this data folder does (blocks while it loads; see the module docstring)."""
    global _found
    if settings.local_model_url:
        return LocalModel(settings.local_model_url.rstrip("/"))
    wait = settings.local_model_start_timeout_seconds
    with _lock:
        supervisor = _own
        if supervisor is None and _found is None:
            settings.data_dir.mkdir(parents=True, exist_ok=True)
            with open(settings.data_dir / ".model-server.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # other processes on this data folder
                _found = _shared_server(settings, wait)
                if _found is None:
                    supervisor = _start_own(settings)
        if supervisor is None:
            return LocalModel(_found)
    if not supervisor.wait_ready(wait):
        return LocalModel(None, supervisor.failure or "the local model is not ready", supervisor)
    return LocalModel(supervisor.url, supervisor=supervisor)


def ready_model_url(settings: Settings) -> str | None:
    """The URL of a local model server this process already reaches and that is ready, or
    ``None``; never starts one nor waits (for work that may be skipped, like warming)."""
    if settings.local_model_url:
        return settings.local_model_url.rstrip("/")
    with _lock:
        if _own is not None:
            return _own.url if _own.state == "ready" else None
        return _found


def uses_local_model(settings: Settings) -> bool:
    """Whether chat or reasoning runs on the local model."""
    return "local" in (settings.chat_model, settings.reasoning_model)


def start_in_background(settings: Settings, openings: Sequence[list[dict]] = ()) -> None:
    """Find or start the local model server from a thread (a server's start-up), so the
    first question does not wait for the model to load; then warm its prompt cache with the
    system prompts and ``openings`` (:mod:`agent.model_server.warm`)."""
    if not uses_local_model(settings):
        return

    def warm() -> None:
        try:
            found = local_model(settings)
            ours = found.url and found.supervisor is not None  # the model this server started
            if ours and settings.local_chat_warm_prompts and warm_prompt_cache(found.url, settings):
                warm_openings(found.url, openings)
        except Exception:
            log.exception("could not start the local model")

    threading.Thread(target=warm, name="local-model-start", daemon=True).start()


def forget(url: str) -> None:
    """A call to ``url`` failed: look for the server again on the next call."""
    global _found
    with _lock:
        if _found == url:
            _found = None


def own_supervisor() -> ModelSupervisor | None:
    """The supervisor this process runs, if any."""
    return _own
