"""Warming the model process's prompt cache when a server starts: every chat path opens its
prompt with one of a few fixed system prompts, and the model would otherwise read the one a
question needs (~200 tokens, seconds on 2 cores) before that question's first token.

Each system prompt is sent once with an empty question and a one-token reply; the model
process keeps the state in its prompt cache (:mod:`agent.model_server.prompt_cache`), and
every later prompt that opens the same way starts after it. A question asked meanwhile
waits behind these few short calls.

Longer openings are warmed the same way: a book's overview prompt (system prompt, title and
stored summary, all but the question: :func:`agent.chat.overview.overview_openings`) when
its summary is written and for the books summarized last when a server starts, so "summarize
the book" reads only the question (measured here: TTFT 4.8 s cold, 517 tokens read).

The fixed openings' states are saved to disk by the first process that reads them, and a
later process starts with them (:mod:`agent.model_server.saved_openings`): its warming then
takes milliseconds. Warming is background work: an answer that arrives meanwhile stops the
opening being read (:mod:`agent.model_server.priority`), which is sent again once the model
is free. The grounded opening is the exception (:func:`warm_prompt_cache`): the questions
that arrive meanwhile would read it themselves.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import httpx

from agent import prompts
from agent.config import Settings
from agent.model_server.priority import (
    BACKGROUND,
    PRIORITY_HEADER,
    YIELDED_STATUS,
    pauses_until,
)
from agent.model_server.saved_openings import KEEP_HEADER, KEEP_IN_MEMORY, KEEP_OPENING

log = logging.getLogger(__name__)


def warm_messages(settings: Settings) -> list[list[dict]]:
    """The openings to warm: the grounded prompt (system prompt and worked examples),
    the deep-reasoning, not-covered, small-talk and chapter system prompts (a persona
    changes them, and is warmed by its first question), and the chat summary's."""
    name = settings.assistant_name

    def opening(system: str, shown: Sequence[dict] = ()) -> list[dict]:
        return [{"role": "system", "content": system}, *shown, {"role": "user", "content": ""}]

    return [
        opening(prompts.GROUNDED_SYSTEM.format(name=name), prompts.grounded_example_messages()),
        *(
            opening(system.format(name=name))
            for system in (
                prompts.DEEP_SYSTEM,
                prompts.NOT_COVERED_SYSTEM,
                prompts.GENERAL_SYSTEM,
                prompts.CHAPTER_SYSTEM,
                prompts.CHAPTER_PASSAGES_SYSTEM,
            )
        ),
        # every turn's running-summary update (agent.memory.conversation) opens with this
        opening(prompts.MEMORY_UPDATE_SYSTEM.format(max_chars=settings.conversation_summary_chars)),
    ]


def warm_prompt_cache(url: str, settings: Settings, timeout: float = 120.0) -> int:
    """Send each of :func:`warm_messages` to the model server at ``url``; how many were
    cached. A failure is logged and ends the warming (the questions will read them).

    The grounded opening, which every question about the documents starts with, is read as
    an answer, not in the background: a question asked meanwhile would read it anyway, so
    it waits and starts after it, and the state is saved. In the background the question
    stopped it, read it again itself (a question's read is never saved) and a ``quire
    ask`` that exited before the warming came back to it left nothing saved: every ask on a
    data folder where ``quire init`` never ran read all of it (first word after 43-57 s on a
    2-core AVX2 machine). Once saved, it loads in milliseconds."""
    grounded, *others = warm_messages(settings)
    if not warm_openings(url, [grounded], timeout, keep=True, background=False):
        return 0
    return 1 + warm_openings(url, others, timeout, keep=True)


def warm_openings(
    url: str,
    openings: Sequence[list[dict]],
    timeout: float = 120.0,
    *,
    keep: bool = False,
    background: bool = True,
) -> int:
    """Send each opening (OpenAI-style messages) to the model server at ``url`` for one
    token, so its prompt cache keeps the state, pinned (:func:`~agent.model_server.
    saved_openings.keeping_cache`); how many were cached. With ``keep`` (fixed openings
    only: no user's text) the model process also saves each state for the next process
    (:mod:`agent.model_server.saved_openings`); ``background`` (default): answers
    go first (:mod:`agent.model_server.priority`). A failure is logged and ends the warming
    (the questions will read them)."""
    warmed = 0
    headers = {PRIORITY_HEADER: BACKGROUND} if background else {}
    headers[KEEP_HEADER] = KEEP_OPENING if keep else KEEP_IN_MEMORY
    with httpx.Client(base_url=url.rstrip("/"), timeout=timeout, headers=headers) as client:
        for messages in openings:
            body = {"messages": messages, "max_tokens": 1, "temperature": 0}
            try:
                _post_when_free(client, body, time.monotonic() + timeout)
            # the model stopped (its owner is leaving): no connection, or a hang-up mid-call
            except (httpx.ConnectError, httpx.RemoteProtocolError) as exc:
                log.debug("stopped warming the model's prompt cache: %s", exc)
                break
            except httpx.HTTPError as exc:
                log.warning("could not warm the model's prompt cache: %s", exc)
                break
            warmed += 1
    return warmed


def _post_when_free(client: httpx.Client, body: dict, deadline: float) -> None:
    """Post ``body`` at background priority, again after a pause while it yields to answers
    (until ``deadline``); raises the last HTTP error."""
    pauses = pauses_until(deadline)
    while True:
        reply = client.post("/v1/chat/completions", json=body)
        pause = next(pauses, None) if reply.status_code == YIELDED_STATUS else None
        if pause is None:
            reply.raise_for_status()
            return
        time.sleep(pause)
