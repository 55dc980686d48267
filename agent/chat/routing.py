"""Which path answers a message: cheap keyword rules, no model call (seed 000 priority).

    1. the assistant's name          -> ``direct``          (fixed reply)
    2. greetings, thanks, small talk -> ``general``         (whole message; no retrieval)
    3. one chapter, summary words    -> ``chapter_summary`` ("summarize chapter 7": its summary)
    4. summary keywords, one book    -> ``global_summary``  (Path B: stored summary or ToC)
    5. reasoning keywords            -> ``deep_reasoning``  (Path C: 15 chunks, conflicts)
    6. current events / the web      -> ``web_search``      (SerpAPI tool, when configured)
    7. anything else                 -> ``hybrid``          (Path A: hybrid retrieval)

"Summarize all my books" names several books, so it takes Path A across them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from agent.chat.chapter_refs import names_chapter

Route = Literal[
    "direct",
    "global_summary",
    "chapter_summary",
    "deep_reasoning",
    "general",
    "web_search",
    "hybrid",
]

_NAME = re.compile(
    r"\b(what('?s| is) your name|who are you|what should i call you|your name\??$|"
    r"are you (a )?(bot|human|ai|robot)|introduce yourself)\b",
    re.I,
)
_SMALL_TALK_PHRASE = (
    r"(?:hi|hello|hey|hiya|howdy|yo|greetings|good (?:morning|afternoon|evening|night)|thanks|"
    r"thank you|thx|cheers|ok(?:ay)?|cool|great|nice|awesome|bye|goodbye|see you|"
    r"how are you(?: doing)?(?: today)?|how'?s it going|what'?s up|sup|nice to meet you)"
    r"(?:\s+(?:there|quire|again|so much|a lot|for (?:the|your) help|friend))?"
)
# the whole message is one or more such phrases: "hello, how are you?", "ok, thanks!"
_SMALL_TALK = re.compile(
    rf"^{_SMALL_TALK_PHRASE}(?:[\s!.,?]+{_SMALL_TALK_PHRASE})*[\s!.,?]*$", re.I
)
_MANY_BOOKS = re.compile(
    r"\b(all|both|each|every|these|those|my) (of (my|the|these) )?(books|documents|files|novels|texts)\b"
    r"|\bacross (my|all|the) (books|documents)\b",
    re.I,
)
_CURRENT = re.compile(
    r"\b(latest news|news (about|on|today)|today'?s|this (week|month|year)'?s?|right now|"
    r"currently|current (events|price|weather|president|prime minister|ceo)|weather|stock price|"
    r"exchange rate|score of|who won|search the web|on the (web|internet)|google it|"
    r"look it up online|in 20[2-9]\d)\b",
    re.I,
)


def _has_keyword(message: str, keywords: Sequence[str]) -> bool:
    text = f" {' '.join(re.findall(r'[a-z0-9]+', message.lower()))} "
    return any(f" {' '.join(re.findall(r'[a-z0-9]+', k.lower()))} " in text for k in keywords)


def is_name_question(message: str) -> bool:
    """Does the user ask who the assistant is?"""
    return bool(_NAME.search(message.strip()))


def is_small_talk(message: str) -> bool:
    """Greetings, thanks and other short phrases that need no retrieval."""
    return bool(_SMALL_TALK.match(message.strip()))


def names_many_books(message: str) -> bool:
    """ "all my books", "both documents", "across my books"..."""
    return bool(_MANY_BOOKS.search(message))


def asks_current_events(message: str) -> bool:
    """News, prices, weather, "search the web": things no uploaded book can know."""
    return bool(_CURRENT.search(message))


def classify_route(
    message: str,
    *,
    single_book: bool = False,
    summary_keywords: Sequence[str] = (),
    reasoning_keywords: Sequence[str] = (),
    chapter_titles: Sequence[str] = (),
) -> Route:
    """The path for ``message`` in seed 000's priority (see the module docs).

    ``single_book``: exactly one book is in scope (chosen, or the user's only document).
    Keyword lists default to the seed's (``agent.config``). ``chapter_titles``: the chapter
    titles of the books in scope, for a title written without quotes ("what happens in A Mad
    Tea-Party").
    """
    from agent.config import GLOBAL_SUMMARY_KEYWORDS, REASONING_KEYWORDS

    if is_name_question(message):
        return "direct"
    if is_small_talk(message):  # whole-message patterns only: "how are you" is no analysis
        return "general"
    if names_chapter(message, chapter_titles):  # before the whole-book summary
        return "chapter_summary"
    many = names_many_books(message)
    if (
        single_book
        and not many
        and _has_keyword(message, summary_keywords or GLOBAL_SUMMARY_KEYWORDS)
    ):
        return "global_summary"
    if _has_keyword(message, reasoning_keywords or REASONING_KEYWORDS):
        return "deep_reasoning"
    if asks_current_events(message) and not many:
        return "web_search"
    return "hybrid"
