"""Start-up check of the local model: is llama.cpp the portable build, and does it answer?

:func:`check_local_model` starts the model process on its own port, waits for its first
token (in that child process, so a crash there cannot take the caller down), and says what
failed and what to do. ``quire init`` (and so ``make run`` and ``make serve``) runs it before
reporting ready.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from agent.config import Settings
from agent.model_server.kernels import PORTABLE, KernelBuild, cpu_flags

NATIVE_ONLY = ("AVX512", "AMX", "AVX_VNNI")
"""Kernels a portable x86-64 build leaves out (not every CPU has them; AMX crashed on one)."""


def build_features(build: KernelBuild = PORTABLE) -> dict[str, bool]:
    """The CPU features a llama.cpp build was compiled with (``{"AVX2": True, ...}``), read
    in a child process; empty when it cannot be loaded."""
    code = "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())"
    try:
        info = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
            env={**os.environ, **build.environment()},
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return parse_features(info)


def parse_features(system_info: str) -> dict[str, bool]:
    """``{"AVX2": True, ...}`` from ``llama_print_system_info()``'s ``NAME = 1 |`` text."""
    return {name: value == "1" for name, value in re.findall(r"(\w+) = (\d)", system_info)}


def is_portable(features: dict[str, bool]) -> bool:
    """Built for any x86-64 CPU with AVX2: AVX2, FMA and F16C on, no AVX-512, AMX or VNNI."""
    wanted = all(features.get(name) for name in ("AVX2", "FMA", "F16C"))
    native = any(on for name, on in features.items() if name.startswith(NATIVE_ONLY))
    return wanted and not native


@dataclass
class ModelCheck:
    """What the start-up check found."""

    ok: bool
    seconds: float
    features: dict[str, bool]
    """CPU features of the installed (portable) build."""
    running: str = PORTABLE.name
    """The build the model process ran on (see :mod:`agent.model_server.kernels`)."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Faster builds that failed here: name -> why."""
    failure: str | None = None
    advice: list[str] = field(default_factory=list)
    openings: int = 0
    """Fixed prompt openings read and saved for later model processes."""
    openings_seconds: float = 0.0

    @property
    def build(self) -> str:
        """``portable (AVX2)`` or ``native (AVX512, AMX_INT8)``: what llama.cpp was built for."""
        if is_portable(self.features):
            return "portable (AVX2)"
        extra = sorted(n for n, on in self.features.items() if on and n.startswith(NATIVE_ONLY))
        return f"not portable ({', '.join(extra) or 'no AVX2'})"


def advice_for(features: dict[str, bool], flags: set[str], log_path: Path) -> list[str]:
    """What to do about a local model that does not answer."""
    advice = []
    if not features:
        advice.append(
            "llama.cpp could not be loaded at all: reinstall it with `make clean && make "
            "install` (scripts/install-llama-cpp.sh)."
        )
    elif not is_portable(features):
        advice.append(
            "llama.cpp was built for a particular CPU, not the portable AVX2 build: rebuild it "
            "with `make clean && make install` (scripts/install-llama-cpp.sh)."
        )
    if flags and "avx2" not in flags:
        advice.append(
            "This CPU has no AVX2, which the local model needs: run the model on another "
            "machine (QUIRE_LOCAL_MODEL_URL) or use a hosted one (QUIRE_CHAT_MODEL=openai:"
            "gpt-4o-mini with OPENAI_API_KEY)."
        )
    advice.append(f"The model process's output is in {log_path}.")
    advice.append(
        "Until this is fixed, chat answers by quoting your documents (the extractive "
        "answerer), with a notice on each answer."
    )
    return advice


def check_local_model(settings: Settings) -> ModelCheck:
    """Start the local model in a child process, wait for one token, and stop it. Before
    stopping, it reads the fixed prompt openings (when warming is on), which it saves for
    every later model process (:mod:`agent.model_server.saved_openings`): the first
    question of a ``quire ask`` then reads only its own part."""
    from agent.model_server.endpoint import new_supervisor
    from agent.model_server.supervisor import free_port

    features = build_features()
    started = time.monotonic()
    supervisor = new_supervisor(settings, port=free_port())  # beside any running one
    supervisor.start_attempts = 1
    supervisor.start()
    openings, warmed = 0, 0.0
    try:
        ok = supervisor.wait_ready(settings.local_model_start_timeout_seconds + 5)
        seconds = time.monotonic() - started
        if ok and settings.local_chat_warm_prompts:
            from agent.model_server.warm import warm_prompt_cache

            openings = warm_prompt_cache(supervisor.url, settings)
            warmed = time.monotonic() - started - seconds
    finally:
        supervisor.stop()
    check = ModelCheck(
        ok,
        seconds,
        features,
        running=supervisor.build.name,
        skipped=dict(supervisor.skipped),
        openings=openings,
        openings_seconds=warmed,
    )
    if not ok:
        check.failure = supervisor.failure or "the local model did not start"
        check.advice = advice_for(features, cpu_flags(), supervisor.log_path)
    return check
