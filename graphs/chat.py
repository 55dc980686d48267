"""The ``chat`` graph: route each message to the cheapest path that answers it well.

    START -> route -> direct      -> save -> END   (name question: fixed reply)
                   -> general     -> save          (small talk: short reply, no retrieval)
                   -> overview    -> save          (Path B: stored summary / ToC of one book)
                                  -> retrieve      (... nothing pre-computed: Path A)
                   -> chapter     -> save          (one chapter: its summary or passages, cited;
                                  -> retrieve       several or none fit: the chapters listed)
                   -> web_search  -> save          (an explicit web request, key set)
                   -> retrieve -> generate    -> save   (Path A investigator / Path C deep)
                                  -> search_further -> answer_again -> save  (Path A:
                                       nothing asked for was said; once more past them)
                               -> not_covered -> save   (relevance gate: nothing relevant)
                               -> unanswered  -> save   (Path A: no passage names its year/code)
                               -> web_search  -> save   (nothing relevant for a fresh-facts
                                                         question, key set: documents first)
                               -> decide <-> call_tool  (Path A with tool selection, seed 003:
                                  -> generate / not_covered   answer, or search again / the
                                                              web, at most max_tool_calls)
                   -> refuse      -> save          (an unknown --book; over the monthly
                                  -> END            limit nothing is saved or counted)

Nodes are thin: each calls into ``agent`` and returns a partial state update. Every turn
records why it took its route (``route_reason``; ``routing`` once saved). ``route`` counts
the turn against the user's monthly limit (one atomic statement); a turn that fails in any
node gives it back and saves its question with the error.
"""

from __future__ import annotations

import functools
import logging
import uuid
from typing import Literal

from langgraph.config import get_config
from langgraph.errors import GraphBubbleUp
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from agent import prompts
from agent.chat import route_record
from agent.chat.answering import Answer, answer_update, general_messages
from agent.chat.books import resolve_book
from agent.chat.chapters import chapter_turn, chapter_update, finish_chapter_answer
from agent.chat.cited_answer import (
    answer_model,
    answer_prompt,
    answer_temperature,
    finish_cited_answer,
    not_covered_answer,
    not_covered_messages,
    not_covered_without_model,
    remember_exchange,
    unanswered_answer,
    unanswered_reason,
)
from agent.chat.finished_turn import (
    save_answered_turn,
    save_failed_turn,
    turn_answer,
    update_chat_summary,
    wait_for_background,
)
from agent.chat.overview import overview_prompt
from agent.chat.restated_answer import finished_answer, restated_prefix
from agent.chat.retrieval_step import retrieve_context
from agent.chat.tool_calls import call_chosen_tool
from agent.chat.tool_selection import ANSWER_NOW, next_step, tool_calls_left
from agent.chat.turn import last_question, start_turn, turn_scope
from agent.chat.turn_log import turn_error
from agent.chat.web import find_on_web, web_answer, web_prompt
from agent.chat.wider_search import search_wider, wants_wider_search
from agent.config import Settings
from agent.db.scope import SearchScope
from agent.services import get_services
from graphs.context import Context
from graphs.model_calls import continue_reply, load_model, model_spec, stream_reply
from graphs.state import ChatState, InputState, OutputState

__all__ = ["build_graph", "graph", "wait_for_background"]

log = logging.getLogger(__name__)


def _scope(state: ChatState, runtime: Runtime[Context]) -> SearchScope:
    context = runtime.context or Context()
    return turn_scope(state["user_id"], state.get("book_id"), context, state.get("time_window"))


async def route(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Identify the user, chat and book in scope, and pick the path (seed 000 priority)."""
    services = await get_services()
    thread_id = (get_config().get("configurable") or {}).get("thread_id")
    question = last_question(state["messages"])
    return await start_turn(services, runtime.context or Context(), question, thread_id)


def pick_path(
    state: ChatState,
) -> Literal["direct", "general", "overview", "chapter", "retrieve", "web_search", "refuse"]:
    """Branch on the route the router chose."""
    return {
        "direct": "direct",
        "general": "general",
        "global_summary": "overview",
        "chapter_summary": "chapter",
        "web_search": "web_search",
        "unknown_book": "refuse",
        "invalid_window": "refuse",
        "over_limit": "refuse",
    }.get(state["route"], "retrieve")  # type: ignore[return-value]


async def refuse(state: ChatState, runtime: Runtime[Context]) -> dict:
    """A request that cannot be served (an unknown book, the monthly limit): say why."""
    over_limit = state["route"] == "over_limit"
    model_used = "monthly_limit" if over_limit else "direct_response"
    return answer_update(Answer(text=state["answer"], route="direct", model_used=model_used))


async def direct(state: ChatState, runtime: Runtime[Context]) -> dict:
    """The name question: a fixed reply, no model call."""
    services = await get_services()
    text = prompts.NAME_REPLY.format(name=services.settings.assistant_name)
    return answer_update(Answer(text=text, route="direct", model_used="direct_response"))


async def general(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Small talk: a short reply without retrieval."""
    settings = (await get_services()).settings
    history = state.get("history", "")
    messages = general_messages(settings.assistant_name, state["question"], history)
    reply = await stream_reply(runtime, state, messages, settings.temperature_general)
    model_used = f"general_{reply.model}"
    return answer_update(
        Answer(text=reply.text, route="general", model_used=model_used, tokens_used=reply.tokens)
    )


async def overview(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Path B: the book's stored summary (or its table of contents) presented in structure."""
    services = await get_services()
    book = await resolve_book(services, uuid.UUID(state["user_id"]), state["book_id"])
    prompt = await overview_prompt(services, book, state["question"])
    if prompt is None:  # nothing pre-computed and no chapters: answer from chunks instead
        return route_record.overview_fallback()
    temperature = services.settings.temperature_summary
    reply = await stream_reply(runtime, state, prompt.messages, temperature)
    return answer_update(
        Answer(
            text=reply.text,
            route="global_summary",
            model_used=prompt.label,
            tokens_used=reply.tokens,
            sources=[book.title],
        )
    )


def after_refusal(state: ChatState) -> Literal["save", "__end__"]:
    """Over the monthly limit nothing is saved or counted; other refusals are logged."""
    return END if state["model_used"] == "monthly_limit" else "save"


def after_overview(state: ChatState) -> Literal["retrieve", "save"]:
    """Path B (or the chapter path) fell back to retrieval: nothing pre-computed."""
    return "retrieve" if state["route"] == "hybrid" else "save"


async def chapter(state: ChatState, runtime: Runtime[Context]) -> dict:
    """One chapter's stored summary (else its passages) cited into it, or the chapters
    listed when the reference fits several or none; no chapters in scope: Path A."""
    services = await get_services()
    settings = services.settings
    spec = model_spec(runtime, settings.chat_model)
    found = await chapter_turn(services, state["question"], _scope(state, runtime), spec=spec)
    if found is not None and found.answer is None:
        reply = await stream_reply(runtime, state, found.messages, settings.temperature_summary)
        found.answer = finish_chapter_answer(reply.text, found, tokens=reply.tokens)
    return chapter_update(found)


async def web_search(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Current events: answered from the web when configured, else said so plainly."""
    settings = (await get_services()).settings
    found = await find_on_web(settings, state["question"])
    if isinstance(found, Answer):  # not configured, or the search failed
        return answer_update(found)
    messages = web_prompt(settings, state["question"], found)
    reply = await stream_reply(runtime, state, messages, settings.temperature_specific)
    return answer_update(web_answer(reply.text, found, model=reply.model, tokens=reply.tokens))


async def retrieve(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Search the visible documents (Path A: specific; Path C: deep) and build the context."""
    return await _search(retrieve_context, state, runtime)


async def _search(search, state: ChatState, runtime: Runtime[Context]) -> dict:
    """``search`` (:func:`retrieve_context` or :func:`search_wider`) with the turn's model,
    scope and passage count."""
    services = await get_services()
    settings = services.settings
    model, spec = await load_model(runtime, settings, 0.0, answer_model(settings, state))
    top_k = (runtime.context or Context()).top_k
    return await search(
        services, state, model=model, spec=spec, scope=_scope(state, runtime), top_k=top_k
    )


def relevance_gate(
    state: ChatState,
) -> Literal["decide", "generate", "not_covered", "unanswered", "web_search"]:
    """A fresh-facts question the documents miss goes to the web (when configured); Path A
    with tool selection goes on to the tool decision (a search may still find the year);
    passages naming none of the years or versions asked about answer "not found" with no
    model call; otherwise answer from the documents only when retrieval found something
    above the relevance floor."""
    if route_record.falls_back_to_web(state):
        return "web_search"
    if state["route"] == "hybrid" and state.get("tools_enabled"):
        return "decide"
    if not state.get("relevant"):
        return "not_covered"
    return "unanswered" if state.get("unheld_pins") else "generate"


async def decide(state: ChatState, runtime: Runtime[Context]) -> dict:
    """ReAct step (seed 003): with the relevant passages in view, answer now or call a tool."""
    settings = (await get_services()).settings
    if not tool_calls_left(settings, state):
        return {"decision": dict(ANSWER_NOW)}
    model, spec = await load_model(runtime, settings, 0.0)
    return await next_step(model, settings, state, constrained_json=spec == "local")


def after_decide(state: ChatState) -> Literal["call_tool", "generate", "not_covered"]:
    """Call the chosen tool, or answer from what the turn has (passages, web results)."""
    if state["decision"].get("tool", "none") != "none":
        return "call_tool"
    return "generate" if state.get("relevant") or state.get("web_context") else "not_covered"


async def call_tool(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Run the chosen tool and add what it found to the turn's context."""
    services = await get_services()
    spec = model_spec(runtime, services.settings.chat_model)
    return await call_chosen_tool(services, state, spec=spec, scope=_scope(state, runtime))


async def not_covered(state: ChatState, runtime: Runtime[Context]) -> dict:
    """The documents do not cover the question: say so, then a brief general answer (or
    say only that: it wants the web and no key is set, or names what the documents use)."""
    if fixed := not_covered_without_model(state):
        return answer_update(fixed)
    settings = (await get_services()).settings
    reply = await stream_reply(
        runtime, state, not_covered_messages(settings, state), settings.temperature_general
    )
    return answer_update(not_covered_answer(reply.text, state, tokens=reply.tokens))


async def unanswered(state: ChatState, runtime: Runtime[Context]) -> dict:
    """The passages touch on the question but name none of the years or versions it is
    about: the plain "not found" reply, written without the model."""
    return {**answer_update(unanswered_answer(state)), "route_reason": unanswered_reason(state)}


async def generate(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Answer from the context with inline ``#chk_`` citations (and ``#web_N`` when a web
    search ran), then guard them; a Path A answer that says nothing asked for is marked
    for a wider search (``wider_search="wanted"``)."""
    settings = (await get_services()).settings
    update = await _answer_from_context(settings, state, runtime)
    spec = model_spec(runtime, answer_model(settings, state))
    if wants_wider_search(settings, {**state, **update}, spec):
        update["wider_search"] = "wanted"
    return update


def after_generate(state: ChatState) -> Literal["search_further", "save"]:
    """Search once more past the passages, or save the answer."""
    return "search_further" if state.get("wider_search") == "wanted" else "save"


async def search_further(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Search again past the passages the first answer was written from."""
    return await _search(search_wider, state, runtime)


def after_search_further(state: ChatState) -> Literal["answer_again", "save"]:
    """Answer from the new passages, or keep the first reply when none were found."""
    return "answer_again" if state.get("wider_search") == "found" else "save"


async def answer_again(state: ChatState, runtime: Runtime[Context]) -> dict:
    """The answer from the wider search's passages (not streamed: it replaces the first)."""
    settings = (await get_services()).settings
    return await _answer_from_context(settings, state, runtime, fresh=True)


async def _answer_from_context(
    settings: Settings, state: ChatState, runtime: Runtime[Context], fresh: bool = False
) -> dict:
    prompt = answer_prompt(settings, state, fresh=fresh)  # a follow-up continues the last
    temperature, default = answer_temperature(settings, state), answer_model(settings, state)
    reply = await stream_reply(runtime, state, prompt.messages, temperature, default=default)
    guarded = functools.partial(
        finish_cited_answer,
        state=state,
        model=reply.model,
        citable=prompt.citable,
        drop_invented=settings.drop_invented_claims,
    )
    answer, said = guarded(reply.text, tokens=reply.tokens), reply.text
    if (prefix := restated_prefix(settings, state, reply.text, answer)) and (
        more := await continue_reply(runtime, state, prompt.messages, prefix, temperature, default)
    ):
        answer = finished_answer(answer, state["question"], prefix, more.text, more.tokens, guarded)
        said = prefix + more.text if answer.text != prompts.NOT_ANSWERED else said
    remember_exchange(state, prompt, said)  # once answered: a failed turn is not continued
    return answer_update(answer)


async def save(state: ChatState, runtime: Runtime[Context]) -> dict:
    """Persist both messages of the turn (counted when it started) with its book; fold every
    turn, small talk included, into the chat's running summary."""
    services = await get_services()
    answer = turn_answer(state)
    message_id = await save_answered_turn(services, state, answer)
    try:  # the turn is saved: a model that cannot be loaded only skips the summary
        model, _ = await load_model(runtime, services.settings, 0.0, background=True)
    except Exception:
        log.warning("no model for the summary of chat %s", state["chat_id"], exc_info=True)
    else:
        await update_chat_summary(services, state, answer, model)
    return {"message_id": str(message_id), **route_record.routing_update(state)}


def _keeps_question(node):
    """``node``, saving the turn's question with its error when it fails (any error: the
    chat keeps what the user asked, the turn is given back to the monthly limit, and the
    caller reports ``model_unavailable`` or ``answer_failed``)."""

    @functools.wraps(node)
    async def run(state: ChatState, runtime: Runtime[Context]) -> dict:
        try:
            return await node(state, runtime)
        except GraphBubbleUp:  # LangGraph's own control flow (interrupts), not a failure
            raise
        except Exception as exc:
            await save_failed_turn(await get_services(), state, turn_error(exc))
            raise

    return run


def build_graph():
    """The uncompiled chat graph (compile with or without a checkpointer)."""
    builder = StateGraph(
        ChatState, input_schema=InputState, output_schema=OutputState, context_schema=Context
    )
    nodes = (route, refuse, direct, general, overview, chapter, web_search, retrieve, decide)
    nodes += (call_tool, generate, search_further, answer_again, not_covered, unanswered, save)
    for node in nodes:
        name = node.__name__
        # every node after ``route`` (which saves its own failures) keeps a failed question
        builder.add_node(name, node if name == "route" else _keeps_question(node))
    builder.add_edge(START, "route")
    builder.add_conditional_edges("route", pick_path)
    builder.add_conditional_edges("overview", after_overview)
    builder.add_conditional_edges("chapter", after_overview)
    builder.add_conditional_edges("retrieve", relevance_gate)
    builder.add_conditional_edges("decide", after_decide)
    builder.add_edge("call_tool", "decide")
    builder.add_conditional_edges("refuse", after_refusal)
    builder.add_conditional_edges("generate", after_generate)
    builder.add_conditional_edges("search_further", after_search_further)
    for node in ("direct", "general", "web_search", "answer_again", "not_covered", "unanswered"):
        builder.add_edge(node, "save")
    builder.add_edge("save", END)
    return builder


graph = build_graph().compile(name="chat")
