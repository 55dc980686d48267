"""The local model in its own process: a portable build, supervised, proven before use.

The supervisor's logic runs on a stand-in server (tests/support/fake_model_server.py: same routes,
no weights; a "build" can be given a real SIGSEGV). The rest runs the real packaged model.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent import prompts
from agent.local_models import CHAT_LABEL
from agent.model_server import kernels
from agent.model_server.doctor import build_features, is_portable, parse_features
from agent.model_server.kernels import PORTABLE, KernelBuild
from agent.model_server.supervisor import ModelSupervisor, free_port, get_json
from tests.support.programs import ROOT

FAKE = ROOT / "tests" / "support" / "fake_model_server.py"


def _fake_supervisor(tmp_path: Path, builds=None, **options) -> ModelSupervisor:
    port = free_port()
    return ModelSupervisor(
        command=[sys.executable, str(FAKE), str(port)],
        port=port,
        log_path=tmp_path / "model.log",
        builds=builds or [PORTABLE],
        ready_timeout=30,
        **options,
    )


def _build_with(tmp_path: Path, name: str, marker: str) -> KernelBuild:
    folder = tmp_path / name
    folder.mkdir()
    (folder / marker).touch()
    return KernelBuild(name, folder, frozenset())


def _wait(condition, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie no one has reaped yet is gone too
    status = Path(f"/proc/{pid}/status")
    return not status.exists() or "zombie" in status.read_text()


# --- the build ------------------------------------------------------------------------------


def test_the_installed_llama_cpp_is_the_pinned_portable_build():
    import llama_cpp

    pins = (ROOT / "constraints.txt").read_text()
    pinned = re.search(r"^llama[-_]cpp[-_]python==([\d.]+)", pins, re.M | re.I)
    assert pinned and llama_cpp.__version__ == pinned.group(1)
    features = build_features()
    assert features["AVX2"] and features["FMA"] and features["F16C"]
    assert is_portable(features), features  # no AVX-512, AMX or VNNI kernels
    info = llama_cpp.llama_print_system_info().decode()
    assert "AVX512" not in info and "AMX" not in info


def test_the_avx512_build_beside_it_has_no_amx():
    # the build's flags, whatever this CPU has: AVX-512 on, AMX and native tuning off
    script = (ROOT / "scripts" / "install-llama-cpp.sh").read_text()
    assert "-DGGML_NATIVE=OFF" in script and "-DGGML_AVX512=ON" in script
    assert all(f"-DGGML_{amx}=OFF" in script for amx in ("AMX_TILE", "AMX_INT8", "AMX_BF16"))
    if not kernels.AVX512.installed():
        pytest.skip("no AVX-512 build installed (not x86-64, or its build failed)")
    if not kernels.AVX512.cpu_flags <= kernels.cpu_flags():
        pytest.skip("this CPU lacks AVX-512: the build cannot even be loaded here")
    features = build_features(kernels.AVX512)
    assert features["AVX512"] and features["AVX2"]
    assert not any(on for name, on in features.items() if name.startswith("AMX"))


def test_system_info_parsing_and_portability():
    native = parse_features("CPU : AVX2 = 1 | FMA = 1 | F16C = 1 | AVX512 = 1 | AMX_INT8 = 1 |")
    assert not is_portable(native)
    assert is_portable(parse_features("CPU : AVX = 1 | AVX2 = 1 | FMA = 1 | F16C = 1 | AVX512 = 0"))
    assert not is_portable(parse_features("CPU : AVX = 1 | FMA = 1 | F16C = 1 |"))


def test_faster_builds_are_tried_only_where_the_cpu_has_them_and_never_after_a_fault(tmp_path):
    fast = KernelBuild("avx512", tmp_path, frozenset({"avx2", "avx512f"}))
    (tmp_path / "llama_cpp").mkdir()
    (tmp_path / "llama_cpp" / "__init__.py").touch()
    builds = (fast, PORTABLE)
    assert kernels.candidates("auto", {"avx2", "avx512f"}, {}, builds) == [fast, PORTABLE]
    assert kernels.candidates("auto", {"avx2"}, {}, builds) == [PORTABLE]
    assert kernels.candidates("portable", {"avx2", "avx512f"}, {}, builds) == [PORTABLE]
    kernels.mark_failed(tmp_path / "data", fast, "signal SIGSEGV\nlog lines")
    failed = kernels.failed_builds(tmp_path / "data")
    assert failed == {"avx512": "signal SIGSEGV"}
    assert kernels.candidates("auto", {"avx2", "avx512f"}, failed, builds) == [PORTABLE]
    missing = KernelBuild("avx512", tmp_path / "nowhere", frozenset())
    assert kernels.candidates("auto", set(), {}, (missing, PORTABLE)) == [PORTABLE]


# --- the supervisor, on a stand-in model server ---------------------------------------------


def test_a_killed_model_process_is_restarted_on_the_same_url(tmp_path):
    supervisor = _fake_supervisor(tmp_path)
    supervisor.start()
    try:
        assert supervisor.wait_ready(30) and supervisor.failure is None
        url, first = supervisor.url, supervisor.pid
        os.kill(first, signal.SIGKILL)  # as the OOM killer would
        _wait(lambda: supervisor.pid != first and supervisor.state == "ready")
        assert supervisor.restarts == 1
        assert supervisor.url == url and get_json(f"{url}/quire/health", 2)["pid"] == supervisor.pid
    finally:
        supervisor.stop()
    assert supervisor.state == "stopped" and _gone(supervisor.pid)


@pytest.mark.parametrize("fault", ["crash-on-token", "crash-mid-reply"])
def test_a_build_that_crashes_on_its_first_token_is_replaced_by_the_portable_one(
    tmp_path, monkeypatch, fault
):
    # crash-mid-reply dies after its headers: the proof's cut reply (IncompleteRead) once
    # killed the supervising thread and left the model "starting" for good
    broken = _build_with(tmp_path, "avx512", fault)
    faults: list[tuple[str, str]] = []
    starts = tmp_path / "starts"
    monkeypatch.setenv("FAKE_MODEL_STARTS", str(starts))
    supervisor = _fake_supervisor(
        tmp_path,
        builds=[broken, PORTABLE],
        on_build_failed=lambda build, why: faults.append((build.name, why)),
    )
    supervisor.start()
    try:
        assert supervisor.wait_ready(30)
        assert supervisor.build is PORTABLE and supervisor.restarts == 0
    finally:
        supervisor.stop()
    assert "SIGSEGV" in supervisor.skipped["avx512"]
    assert [name for name, _ in faults] == ["avx512"] and "first token" in faults[0][1]
    lines = starts.read_text().splitlines()
    assert len(lines) == 2 and str(broken.path) in lines[0] and str(broken.path) not in lines[1]


def test_a_model_that_cannot_start_fails_with_the_reason_and_stops_retrying(tmp_path):
    broken = _build_with(tmp_path, "portable", "exit-at-start")
    supervisor = _fake_supervisor(tmp_path, builds=[broken], start_attempts=2, cooldown=600)
    supervisor.start()
    try:
        assert not supervisor.wait_ready(30)
        assert supervisor.state == "failed"
        assert "exit code 3" in supervisor.failure
    finally:
        supervisor.stop()


def test_a_model_command_that_cannot_be_run_fails_with_the_reason(tmp_path):
    # Popen itself raises here (no such program): the supervision goes on and reports it
    supervisor = ModelSupervisor(
        command=[str(tmp_path / "no-such-llama-server")],
        port=free_port(),
        log_path=tmp_path / "model.log",
        builds=[PORTABLE],
        ready_timeout=5,
        start_attempts=2,
        cooldown=600,
    )
    supervisor.start()
    try:
        assert not supervisor.wait_ready(30)
        assert supervisor.state == "failed" and "FileNotFoundError" in supervisor.failure
    finally:
        supervisor.stop()


# --- the real model --------------------------------------------------------------------------


@pytest.mark.local_model
def test_the_model_process_ends_when_its_owner_is_killed(tmp_path):
    """An owner killed with SIGKILL (no atexit) leaves no model behind (PR_SET_PDEATHSIG)."""
    code = (
        "from agent.config import get_settings\n"
        "from agent.model_server.endpoint import local_model\n"
        "found = local_model(get_settings())\n"
        "print(found.supervisor.pid, flush=True)\n"
        "import time; time.sleep(600)\n"
    )
    home = tmp_path / "home"  # its own data folder: it starts a model of its own
    home.mkdir()
    (home / "models").symlink_to(_model_cache())  # the 1 GB file is assembled once
    env = {**os.environ, "QUIRE_HOME": str(home)}
    owner = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )
    try:
        model_pid = int(owner.stdout.readline())
        assert not _gone(model_pid)
        owner.kill()
        owner.wait()
        _wait(lambda: _gone(model_pid), 15)
    finally:
        owner.kill()


def _model_cache() -> Path:
    from agent.config import get_settings
    from agent.local_models import ensure_chat_model_file

    settings = get_settings()
    ensure_chat_model_file(settings.model_cache_dir, settings.local_chat_file)
    return settings.model_cache_dir


# --- crashes, cancellation and start-up, on the real model -----------------------------------


@pytest.mark.local_model
async def test_a_cancelled_answer_stops_generating():
    """A turn cut short (a timeout, a closed page) frees the model at once: the next
    request does not wait for the abandoned answer's 350 tokens (~25 s on 2 cores)."""
    import asyncio
    import contextlib

    from agent.config import get_settings
    from agent.models import achat_model

    model = await achat_model("local", get_settings(), 0.7)
    first = asyncio.Event()

    async def long_answer() -> None:
        prompt = "Write a very long story about a dragon and a baker, at least 400 words."
        async for chunk in model.astream(prompt, max_tokens=350):
            if chunk.content:
                first.set()

    task = asyncio.create_task(long_answer())
    await asyncio.wait_for(first.wait(), 120)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    started = time.monotonic()
    reply = await model.ainvoke("Reply with the single word: ready", max_tokens=3)
    assert reply.content.strip()
    assert time.monotonic() - started < 10


@pytest.mark.local_model
async def test_a_reply_stops_at_the_clients_token_limit():
    """The client's ``max_tokens`` reaches llama.cpp (langchain-openai names it
    ``max_completion_tokens``, which llama-cpp-python's server ignores): a reply asked to go
    on and on stops there, as does one the server gets with no limit at all."""
    import httpx

    from agent.config import get_settings
    from agent.model_server.process import UNSET_REPLY_TOKENS
    from agent.models import achat_model

    prompt = "Count from 1 to 500, one number per line."
    model = await achat_model("local", get_settings(), 0.0)
    usage = {}
    async for chunk in model.astream(prompt, max_tokens=6):
        usage = chunk.usage_metadata or usage
    assert 1 <= usage["output_tokens"] <= 6, usage
    settings = get_settings().model_copy(update={"local_chat_max_tokens": 9})
    reply = await (await achat_model("local", settings, 0.0)).ainvoke(prompt)
    assert 1 <= reply.usage_metadata["output_tokens"] <= 9, reply.usage_metadata
    # the server's own limit, for a client that sets none (not waited for: ~1 min here)
    assert 0 < UNSET_REPLY_TOKENS < get_settings().local_chat_n_ctx
    async with httpx.AsyncClient(base_url=model.server_url, timeout=120) as client:
        body = {"messages": [{"role": "user", "content": "Reply with OK."}], "max_tokens": 0}
        got = (await client.post("/v1/chat/completions", json=body)).json()
    assert got["choices"][0]["message"]["content"].strip()


def _notes_prompt(copies: int) -> str:
    """A prompt of ~330 new tokens a copy (never cached: the notes are shuffled)."""
    import random

    words = [
        "apple", "river", "stone", "cloud", "lamp", "violin", "harbor", "tiger", "maple",
        "copper", "garden", "rocket", "pencil", "meadow", "candle", "falcon", "silver",
        "bridge", "orchard", "lantern",
    ]  # fmt: skip
    random.Random(time.time_ns()).shuffle(words)
    notes = "\n".join(f"Note {i}: the {w} was moved to shelf {i * 7}." for i, w in enumerate(words))
    return "Summarize these notes in one sentence.\n" + "\n".join([notes] * copies)


@pytest.mark.local_model
async def test_background_work_yields_the_model_to_an_answer():
    """A summary being written when a question arrives stops at once: the answer's first
    token does not wait for it, and the summary is written afterwards (sent again)."""
    import asyncio

    from agent.config import get_settings
    from agent.models import achat_model

    settings = get_settings()
    background = await achat_model("local", settings, 0.0, background=True)
    model = await achat_model("local", settings, 0.0)
    # ~1,000 new tokens: several seconds of prompt reading on any CPU we run on
    prompt = _notes_prompt(3)
    finished: dict[str, float] = {}

    async def summary():
        reply = await background.ainvoke(prompt, max_tokens=30)
        finished["at"] = time.monotonic()
        return reply

    task = asyncio.create_task(summary())
    await asyncio.sleep(1.0)  # the summary's prompt is being read
    asked, first = time.monotonic(), None
    async for chunk in model.astream("Reply with the single word: ready", max_tokens=3):
        if chunk.content and first is None:
            first = time.monotonic()
    written = await asyncio.wait_for(task, 300)
    assert first is not None and str(written.content).strip()
    assert first < finished["at"], "the answer waited for the background summary"
    assert first - asked < 5


@pytest.mark.local_model
async def test_an_abandoned_background_call_frees_the_model():
    """A summary rewrite whose client left (overtaken by a newer turn's, or its ``quire ask``
    exited) stops reading: the next background call does not wait for ~2,000 tokens read
    for nobody (tens of seconds on 2 cores)."""
    import asyncio
    import contextlib

    from agent.config import get_settings
    from agent.models import achat_model

    background = await achat_model("local", get_settings(), 0.0, background=True)
    task = asyncio.create_task(background.ainvoke(_notes_prompt(6), max_tokens=60))
    await asyncio.sleep(1.0)  # its prompt is being read
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    started = time.monotonic()
    reply = await background.ainvoke("Reply with the single word: ready", max_tokens=3)
    assert str(reply.content).strip()
    assert time.monotonic() - started < 8


def _state(services) -> dict:
    import json

    path = services.settings.data_dir / "model-server.json"
    return json.loads(path.read_text()) if path.exists() else {}


@pytest.mark.local_model
@pytest.mark.server
async def test_a_model_killed_mid_answer_ends_the_turn_and_the_api_answers_after_the_restart(
    services, alice_reader, tmp_path
):
    import httpx
    from sqlalchemy import text

    from agent.library.accounts import issue_user_token
    from agent.model_server.endpoint import stop_local_model
    from tests.support.programs import program_env, sse_events, start_api, stop_process

    stop_local_model()  # this process's model, if any: the API starts and supervises its own
    user, _ = alice_reader
    _, token = await issue_user_token(services, user.name)
    headers = {"Authorization": f"Bearer {token}"}
    env = program_env(
        DATABASE_URL=services.urls.libpq,
        QUIRE_DATABASE_NAME=services.settings.database_name,
        QUIRE_CHAT_MODEL="local",
    )
    env.pop("QUIRE_DATABASE_URL", None)
    proc, url = start_api(env, tmp_path / "api.log")
    try:
        # the API loads the model as it starts, and advertises it once it has answered
        _wait(lambda: _state(services).get("owner_pid") == proc.pid, 180)
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=300) as client:
            chat = (await client.post("/api/chats", json={})).json()["chat"]["id"]
            question = "Who is Dinah?"
            body, killed = "", None
            async with client.stream(
                "POST", f"/api/chats/{chat}/ask/stream", json={"question": question}
            ) as stream:
                async for piece in stream.aiter_text():
                    body += piece
                    if killed is None and "event: token" in body:
                        killed = get_json(f"{_state(services)['url']}/quire/health", 5)["pid"]
                        os.kill(killed, signal.SIGKILL)  # as a crash or the OOM killer would
            assert killed, body
            name, data = sse_events(body)[-1]
            assert name == "error" and data["code"] == "model_unavailable", body
            assert "done" not in [n for n, _ in sse_events(body)]
            # the API is up, and the question is in the chat (with no answer)
            assert (await client.get("/health")).status_code == 200
            messages = (await client.get(f"/api/chats/{chat}/messages")).json()["messages"]
            assert [(m["role"], m["content"]) for m in messages] == [("user", question)]
            # the next question is answered once the API's supervisor has restarted the model
            again = await client.post(f"/api/chats/{chat}/ask", json={"question": question})
            assert again.status_code == 200, again.text
            answer = again.json()
            # answered by the restarted model (what it says is the 1.5B model's to get right,
            # and varies with the lost turn's traces: the local-model tests check answers)
            assert CHAT_LABEL in (answer["model_used"] or "") and answer["answer"].strip(), answer
            assert _state(services)["owner_pid"] == proc.pid  # restarted by the API
            restarted = get_json(f"{_state(services)['url']}/quire/health", 5)["pid"]
            assert restarted != killed
        async with services.engine.connect() as conn:
            usage = await conn.execute(
                text("SELECT count(*) FROM chat_messages WHERE chat_id = :c AND role = 'user'"),
                {"c": chat},
            )
            assert usage.scalar() == 2  # the lost question and the answered one
    finally:
        stop_process(proc)


@pytest.mark.local_model
def test_a_new_model_process_starts_with_the_openings_an_earlier_one_read(tmp_path):
    """The fixed openings one process warms are saved, and the next process starts with
    them: its first grounded prompt reads only the question, without warming."""
    import json

    import httpx

    from agent.config import get_settings
    from agent.model_server.endpoint import new_supervisor
    from agent.model_server.warm import warm_messages, warm_prompt_cache

    settings = get_settings().model_copy(update={"home": tmp_path / "home"})
    model = settings.model_cache_dir / settings.local_chat_file
    model.symlink_to(_model_cache() / settings.local_chat_file)  # its own states folder
    first = new_supervisor(settings)
    first.start()
    try:
        assert first.wait_ready(120)
        assert warm_prompt_cache(first.url, settings) == len(warm_messages(settings))
    finally:
        first.stop()
    saved = list((settings.model_cache_dir / "prompt-states").glob("*.npz"))
    assert len(saved) == len(warm_messages(settings))
    grounded = warm_messages(settings)[0]
    asked = prompts.GROUNDED_USER.format(
        context="#chk_1a2b3c4d [Alice]\n“Dinah’s our cat,” said Alice.", question="Who is Dinah?"
    )
    body = {
        "messages": [*grounded[:-1], {"role": "user", "content": asked}],
        "max_tokens": 12,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    second = new_supervisor(settings)
    second.start()
    try:
        assert second.wait_ready(120)
        with httpx.Client(base_url=second.url, timeout=120) as client:
            lines = client.post("/v1/chat/completions", json=body).text.splitlines()
    finally:
        second.stop()
    chunks = [json.loads(x[6:]) for x in lines if x.startswith("data: {")]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    usage = next(c["usage"] for c in chunks if c.get("usage"))
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    assert cached > 400 and usage["prompt_tokens"] - cached < 60, usage
    assert text.strip(), chunks  # the restored state answers


@pytest.mark.local_model
def test_the_cli_answers_two_questions_in_a_row_on_the_local_model(alice_reader):
    import json

    from agent.retrieval.citations import cited_ids
    from tests.support.programs import quire

    init = quire("init", QUIRE_CHAT_MODEL="local")
    assert init.returncode == 0, init.stderr
    assert re.search(
        r"local model: ready, first token in [\d.]+ s on the llama.cpp \w+", init.stdout
    )
    user, _ = alice_reader
    answered = 0
    for question, expected in (
        ("Who is Dinah?", "cat"),
        ("What was the Caterpillar smoking?", "hookah"),
    ):
        done = quire("ask", question, "--user", user.name, "--json", QUIRE_CHAT_MODEL="local")
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert answer["model_used"].startswith("investigator_qwen2.5"), answer
        assert set(cited_ids(answer["answer"])) <= {c["id"] for c in answer["citations"]}
        # the sampled 1.5B model sometimes only restates a question, which the guard turns
        # into the honest "not answered" reply; anything else must be grounded
        grounded = expected in answer["answer"].lower() or answer["citations"]
        assert grounded or answer["answer"] == prompts.NOT_ANSWERED, answer
        answered += expected in answer["answer"].lower()
    assert answered, "neither answer says what its passages say"


def test_init_says_what_failed_and_chat_falls_back_to_quoting_the_documents(alice_reader, tmp_path):
    """A llama.cpp that crashes (here: on import, with a real SIGSEGV) is reported by
    ``quire init`` with what to do; chat then answers extractively, with a notice."""
    import json

    from agent.model_server.endpoint import stop_local_model
    from tests.support.programs import quire

    stop_local_model()  # nothing to share: the commands below must start their own
    broken = tmp_path / "broken" / "llama_cpp"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    env = {
        "PYTHONPATH": str(tmp_path / "broken"),
        "QUIRE_CHAT_MODEL": "local",
        "QUIRE_LOCAL_MODEL_KERNELS": "portable",
    }
    init = quire("init", **env)
    assert init.returncode == 0, init.stderr
    assert "local model: not working" in init.stderr
    assert "SIGSEGV" in init.stderr and "make clean && make install" in init.stderr
    assert "model-server.log" in init.stderr

    user, _ = alice_reader
    asked = quire("ask", "Who is Dinah?", "--user", user.name, "--json", **env)
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    assert answer["answer"].startswith("Note: the local model is not available")
    assert "SIGSEGV" in answer["answer"] and "Dinah" in answer["answer"]
    assert answer["citations"]


async def test_an_unreachable_model_url_is_a_clear_cli_error_and_the_question_is_kept(
    alice_reader, services
):
    """``QUIRE_LOCAL_MODEL_URL`` names a server elsewhere; when nothing answers there, the
    turn ends with one error line and the question stays in the chat."""
    import uuid

    from sqlalchemy import text

    from tests.support.programs import quire

    user, _ = alice_reader
    chat = uuid.uuid4()
    done = quire(
        "ask",
        "Who is Dinah?",
        "--user",
        user.name,
        "--chat",
        str(chat),
        QUIRE_CHAT_MODEL="local",
        QUIRE_LOCAL_MODEL_URL=f"http://127.0.0.1:{free_port()}",
    )
    assert done.returncode == 1
    assert "error: model_unavailable" in done.stderr and "Traceback" not in done.stderr
    async with services.engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT role, content FROM chat_messages WHERE chat_id = :c"), {"c": chat}
        )
        assert [tuple(r) for r in rows] == [("user", "Who is Dinah?")]


@pytest.mark.local_model
@pytest.mark.server
async def test_api_workers_share_one_model_process(services, alice_reader, tmp_path):
    """``quire serve --workers 2``: the command loads the model once, both workers use it."""
    import httpx

    from agent.library.accounts import issue_user_token
    from agent.model_server.endpoint import stop_local_model
    from tests.support.programs import BIN, program_env, stop_process

    stop_local_model()  # nothing of this process's to share: the serve command starts one
    user, _ = alice_reader
    _, token = await issue_user_token(services, user.name)
    env = program_env(
        DATABASE_URL=services.urls.libpq,
        QUIRE_DATABASE_NAME=services.settings.database_name,
        QUIRE_CHAT_MODEL="local",
    )
    env.pop("QUIRE_DATABASE_URL", None)
    port = free_port()
    with (tmp_path / "serve.log").open("wb") as log:
        serve = subprocess.Popen(
            [str(BIN / "quire"), "serve", "--workers", "2", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        url = f"http://127.0.0.1:{port}"

        def up() -> bool:
            try:
                return httpx.get(f"{url}/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                return serve.poll() is not None  # ended: fail below with its log

        _wait(up, 240)
        assert serve.poll() is None, (tmp_path / "serve.log").read_text()
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=300) as client:
            for _ in range(2):  # whichever worker takes each
                answer = await client.post("/api/ask", json={"question": "Who is Dinah?"})
                assert answer.status_code == 200, answer.text
                assert answer.json()["model_used"].startswith("investigator_qwen2.5")
        models = _children(serve.pid, "agent.model_server.process")
        assert len(models) == 1, models
        workers = [p for p in _children(serve.pid, "spawn_main") if p not in models]
        assert len(workers) == 2
        assert all(not _children(w, "agent.model_server.process") for w in workers)
        assert _state(services)["owner_pid"] == serve.pid
    finally:
        stop_process(serve)


def _children(pid: int, name: str) -> list[int]:
    """Processes whose parent is ``pid`` and whose command line contains ``name``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            status = (proc / "status").read_text()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        parent = re.search(r"^PPid:\s+(\d+)", status, re.M)
        if parent and int(parent.group(1)) == pid and name in cmdline:
            found.append(int(proc.name))
    return found
