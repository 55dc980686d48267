"""``quire bench model``: llama.cpp's raw speed, and the local model in-process against in
its own process, measured in one run.

* Raw speed: prompt reading and writing tokens/s of each installed llama.cpp build this CPU
  can run (:mod:`agent.model_server.kernels`), and of any other given with ``--compare`` (a
  folder holding another ``llama_cpp`` package), each in a child process so a build that
  crashes only loses its row.
* Time to first token (TTFT) of the same grounded prompts (~2,400 characters of context, as
  the hybrid path sends): a cold question, then a follow-up on the same context (the prefix
  cache). In-process runs ``llama_cpp.Llama`` in a child; out-of-process streams through
  the app's real client (:class:`~agent.model_server.client.LocalServerChat`) from the
  supervised server. The two alternate round by round, one at a time, so both see the
  same machine.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agent import prompts
from agent.config import Settings
from bench.paths import ALICE

REPLY_TOKENS = 8
"""Tokens written per timed reply (read to the end before the next turn)."""
QUESTIONS = ("Who is speaking in these passages?", "What happens at the end of these passages?")


@dataclass
class BuildSpeed:
    """Raw llama.cpp speed of one build."""

    build: str
    system_info: str
    prompt_tokens_per_s: float | None = None
    gen_tokens_per_s: float | None = None
    error: str | None = None


@dataclass
class TTFT:
    """Time to first token (s) of one way of running the model, per kind of turn."""

    mode: str
    cold: list[float] = field(default_factory=list)
    follow_up: list[float] = field(default_factory=list)

    def p50(self, kind: str) -> float:
        """The median of ``cold`` or ``follow_up``."""
        return round(statistics.median(getattr(self, kind)), 3)


def turn_messages(context: str, question: str, name: str = "Quire") -> list[dict]:
    """A grounded turn as the hybrid path sends it: system prompt, passages, question."""
    return [
        {"role": "system", "content": prompts.GROUNDED_SYSTEM.format(name=name)},
        {
            "role": "user",
            "content": prompts.GROUNDED_USER.format(context=context, question=question),
        },
    ]


def contexts(rounds: int, chars: int = 2400) -> list[str]:
    """``rounds`` different passages of Alice in Wonderland, ``chars`` long, cited by id."""
    text = " ".join(ALICE.read_text(encoding="utf-8").split())
    start = len(text) // 4
    return [
        f"#chk_{i:08x} {text[start + i * chars : start + (i + 1) * chars]}" for i in range(rounds)
    ]


# --- the child process: raw speed and in-process TTFT ---------------------------------------


def _child(task: dict) -> dict:
    import llama_cpp

    llm = llama_cpp.Llama(
        task["model"],
        n_ctx=task["n_ctx"],
        n_threads=task["threads"],
        n_threads_batch=task["threads"],
        n_batch=task["n_batch"],
        verbose=False,
        **task.get("llama", {}),
    )
    result: dict = {"system_info": llama_cpp.llama_print_system_info().decode().strip()}
    if task["kind"] == "speed":  # llama.cpp's own counters: no Python in the figures
        tokens = llm.tokenize(task["text"].encode(), add_bos=False)[: task["prompt_tokens"]]
        llama_cpp.llama_perf_context_reset(llm._ctx.ctx)
        llm.create_completion(
            tokens,
            max_tokens=task["gen_tokens"],
            temperature=0.0,
            logit_bias={llm.token_eos(): -100.0},  # write all of them
        )
        perf = llama_cpp.llama_perf_context(llm._ctx.ctx)
        result["prompt_tokens_per_s"] = 1000 * perf.n_p_eval / max(perf.t_p_eval_ms, 1e-9)
        result["gen_tokens_per_s"] = 1000 * perf.n_eval / max(perf.t_eval_ms, 1e-9)
        return result
    firsts = []
    for messages in task["turns"]:
        started, first = time.perf_counter(), None
        # read each reply to its end, as a chat does, before the next turn starts
        for chunk in llm.create_chat_completion(
            messages, stream=True, max_tokens=REPLY_TOKENS, temperature=0.0, seed=42
        ):
            if first is None and (chunk["choices"][0].get("delta") or {}).get("content"):
                first = time.perf_counter() - started
        firsts.append(first)
    result["ttft"] = firsts[1:]  # the first turn only warms the cache, as earlier turns would
    return result


def run_child(task: dict, pythonpath: str | None = None, timeout: float = 600) -> dict:
    """Run :func:`_child` in a fresh interpreter; ``{"error": ...}`` if it fails or crashes."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath, env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "bench.model", json.dumps(task)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    if done.returncode != 0:
        from agent.model_server.supervisor import describe_exit

        tail = (done.stderr or "").strip().splitlines()[-1:]
        return {"error": f"{describe_exit(done.returncode)} {' '.join(tail)}".strip()}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _base_task(settings: Settings, model: Path) -> dict:
    return {
        "model": str(model),
        "n_ctx": settings.local_chat_n_ctx,
        "threads": settings.local_chat_threads,
        "n_batch": settings.local_chat_n_batch,
    }


def build_speed(
    settings: Settings,
    model: Path,
    label: str,
    pythonpath: str | None = None,
    extra: dict | None = None,
) -> BuildSpeed:
    """Prompt and writing tokens/s of one llama.cpp build (in a child process); ``extra``:
    runtime settings over the configured ones (``threads``, ``n_batch``, or any other
    ``llama_cpp.Llama`` argument)."""
    text = " ".join(ALICE.read_text(encoding="utf-8").split())
    extra = dict(extra or {})
    base = _base_task(settings, model)
    base.update({k: extra.pop(k) for k in ("threads", "n_batch") if k in extra})
    task = {
        **base,
        "llama": extra,
        "kind": "speed",
        "text": text[:20000],
        "prompt_tokens": 512,
        "gen_tokens": 64,
    }
    got = run_child(task, pythonpath)
    if "error" in got:
        return BuildSpeed(label, "", error=got["error"])
    return BuildSpeed(
        label,
        got["system_info"],
        round(got["prompt_tokens_per_s"], 1),
        round(got["gen_tokens_per_s"], 1),
    )


async def _server_ttft(model, turns: list[list[dict]]) -> list[float]:
    """TTFT of each turn but the first (a warm-up) through the app's client ``model``."""
    from langchain_core.messages import HumanMessage, SystemMessage

    firsts = []
    for messages in turns:
        lc = [SystemMessage(messages[0]["content"]), HumanMessage(messages[1]["content"])]
        started, first = time.perf_counter(), None
        async for chunk in model.astream(lc, max_tokens=REPLY_TOKENS):
            if first is None and chunk.content:
                first = time.perf_counter() - started
        firsts.append(first)
    return firsts[1:]


async def compare_ttft(settings: Settings, model: Path, rounds: int, client) -> tuple[TTFT, TTFT]:
    """TTFT of cold questions and follow-ups, in-process and out-of-process (through
    ``client``, the app's chat client on a model server), alternating."""
    inproc, server = TTFT("in-process"), TTFT("own process (server)")
    texts = contexts(2 * rounds + 1)
    for i, context in enumerate(texts[1:]):
        # a warm-up turn on other passages first: the system prompt is cached, as in a chat
        turns = [turn_messages(texts[i], QUESTIONS[0])]
        turns += [turn_messages(context, q) for q in QUESTIONS]
        if i % 2 == 0:
            got = run_child({**_base_task(settings, model), "kind": "ttft", "turns": turns})
            if "error" in got:
                raise RuntimeError(f"in-process model failed: {got['error']}")
            firsts, into = got["ttft"], inproc
        else:
            firsts, into = await _server_ttft(client, turns), server
        into.cold.append(firsts[0])
        into.follow_up.append(firsts[1])
    return inproc, server


@dataclass
class ModelBenchFigures:
    """What ``quire bench model`` measured."""

    builds: list[BuildSpeed]
    ttft: list[TTFT]
    rounds: int

    def ratio(self, kind: str) -> float:
        """Out-of-process TTFT p50 over in-process TTFT p50."""
        inproc, server = self.ttft
        return round(server.p50(kind) / inproc.p50(kind), 3)

    def as_json(self) -> dict:
        """Plain data for the JSON report."""
        return {
            "builds": [asdict(b) for b in self.builds],
            "ttft": [
                {"mode": t.mode, "cold_p50_s": t.p50("cold"), "follow_up_p50_s": t.p50("follow_up")}
                | asdict(t)
                for t in self.ttft
            ],
            "ratio_cold": self.ratio("cold"),
            "ratio_follow_up": self.ratio("follow_up"),
            "rounds": self.rounds,
        }


async def run_model_bench(
    settings: Settings, rounds: int = 3, compare: dict[str, str] | None = None
) -> ModelBenchFigures:
    """Raw speed of the installed builds (and of ``compare``: label -> folder holding another
    ``llama_cpp``), then TTFT in-process (portable build) against the supervised server
    (pinned to the portable build too, so the two differ only in where the model runs)."""
    from agent.local_models import ensure_chat_model_file
    from agent.model_server import kernels
    from agent.model_server.client import local_chat_client
    from agent.model_server.endpoint import new_supervisor
    from agent.model_server.kernels import cpu_flags
    from agent.model_server.supervisor import free_port

    model = ensure_chat_model_file(settings.model_cache_dir, settings.local_chat_file)
    flags = cpu_flags()
    builds = [
        build_speed(settings, model, b.name, str(b.path) if b.path else None)
        for b in kernels.BUILDS
        if b.installed() and b.cpu_flags <= flags  # another would die of SIGILL
    ]
    for label, path in (compare or {}).items():
        builds.append(build_speed(settings, model, label, path))
    # a server of its own on the portable build, as the in-process runs use
    supervisor = new_supervisor(
        settings.model_copy(update={"local_model_kernels": "portable"}), port=free_port()
    )
    supervisor.start()
    try:
        if not supervisor.wait_ready(settings.local_model_start_timeout_seconds):
            raise RuntimeError(f"the local model server did not start: {supervisor.failure}")
        client = local_chat_client(
            supervisor.url,
            label="bench",
            temperature=0.0,
            max_tokens=REPLY_TOKENS,
            seed=42,
            timeout=600,
        )
        inproc, server = await compare_ttft(settings, model, rounds, client)
    finally:
        supervisor.stop()
    return ModelBenchFigures(builds, [inproc, server], rounds)


if __name__ == "__main__":
    print(json.dumps(_child(json.loads(sys.argv[1]))))
