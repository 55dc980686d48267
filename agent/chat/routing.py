"""Which path answers a message, and why: cheap keyword rules, no model call (seed 000
priority, documents first).

    1. the assistant's name          -> ``direct``          (fixed reply)
    2. greetings, thanks, small talk -> ``general``         (whole message; no retrieval)
    3. an explicit web request       -> ``web_search``      (only when a web key is set)
    4. one chapter, summary words    -> ``chapter_summary`` ("summarize chapter 7": its summary)
    5. summary keywords, one book    -> ``global_summary``  (Path B: stored summary or ToC;
                                                             the book chosen, the user's
                                                             only one, or the one whose title
                                                             the message names)
    6. reasoning keywords            -> ``deep_reasoning``  (Path C: 15 chunks, conflicts;
                                                             also "X and Y each ...")
    7. anything else                 -> ``hybrid``          (Path A: hybrid retrieval)

Documents first: news, weather, scores, "who won", "currently", "today" or a recent year
do not leave the documents. Such a question is searched like any other and goes to the web
only after retrieval found nothing relevant, and only when a web key is configured
(:attr:`RouteChoice.web` says what the turn may do with the web). Without a key Quire never
routes away from the documents.

Path A searches with the general settings (more passages, a lower threshold) for broad
questions ("tell me about...", "what themes...", "summarize all my books") and with the
specific ones otherwise (:attr:`RouteChoice.mode`). "Summarize all my books" names several
books, so it takes Path A across them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from agent.chat.chapter_refs import names_chapter
from agent.text import STOPWORDS, plain_words

Route = Literal[
    "direct",
    "global_summary",
    "chapter_summary",
    "deep_reasoning",
    "general",
    "web_search",
    "hybrid",
]
Mode = Literal["specific", "general", "deep"]
WebPlan = Literal["", "explicit", "fallback", "unavailable"]

_NAME = re.compile(
    r"\b(what('?s| is) your name|who are you(?=\W*$)|what should i call you|your name\??$|"
    r"are you (a )?(bot|human|ai|robot)|introduce yourself|(tell me )?about yourself|"
    r"^what (can|do) you do|^what are you(?=\W*$)|^how do you work|"
    r"^who (made|built|created|wrote|developed) you|"
    r"^what are you([\s,]+(exactly|really|actually|then))?(?=\W*$)|"
    r"^(do|have) you (have|got) a name|"
    r"^what (kinds?|sorts?|types?) of (questions|things)( can| could| should) (i|we) ask|"
    r"^what (questions )?(can|could|should) (i|we) ask( you)?(?=\W*$)|"
    r"^(how|what) (can|could) you help( me| us)?( with)?(?=\W*$))\b",
    re.I,
)
_SMALL_TALK_PHRASE = (
    r"(?:hi|hello|hey|hiya|howdy|yo|greetings|good (?:morning|afternoon|evening|night)|thanks|"
    r"thank you|thx|cheers|ok(?:ay)?|cool|great|nice|awesome|bye|goodbye|see you|"
    r"how are you(?: doing)?(?: today)?|how'?s it going|what'?s up|sup|nice to meet you|"
    r"got it|perfect|makes sense|sounds good|much appreciated|appreciate it|no worries|"
    r"well done|lol|haha|that (?:helps|helped|works)|(?:great|good|nice) (?:answer|job|work)|"
    r"that'?s (?:helpful|great|perfect|brilliant|clear|all|it))"
    r"(?:\s+(?:there|quire|again|so much|a lot|for (?:the|your) help|friend))?"
)
# a smiley or emoji closing a phrase: "good morning :)"
_SMILEY = r"(?::-?[)(DPp]|;-?\)|<3|[\u2600-\u27bf\U0001f300-\U0001faff])"
# the whole message is one or more such phrases: "hello, how are you?", "ok, thanks!"
_SMALL_TALK = re.compile(
    rf"^{_SMALL_TALK_PHRASE}(?:[\s!.,?]+{_SMALL_TALK_PHRASE})*(?:[\s!.,?]|{_SMILEY})*$", re.I
)
_MANY_BOOKS = re.compile(
    r"\b(all|both|each|every|these|those|my) (of (my|the|these) )?(books|documents|files|novels|texts)\b"
    r"|\bacross (my|all|the) (books|documents)\b",
    re.I,
)
# the user asks for the web itself: "search the web for", "look it up online", "google..."
_EXPLICIT_WEB = re.compile(
    r"\b(search|look|check|find|browse)\b[\w\s']{0,25}?\b(the (web|internet)|online)\b"
    r"|\bgoogle\b|\bweb search\b|\b(on|from) the (web|internet)\b|\bsearch online\b",
    re.I,
)
# outside or fresh facts no book is likely to hold: news, prices, weather, scores, "latest",
# "today", a recent year
_FRESH_FACTS = re.compile(
    r"\b(news|headlines?|latest|breaking|today'?s?|tonight|right now|currently|nowadays|"
    r"current (events|price|weather|president|prime minister|ceo|score)|"
    r"this (week|month|year)'?s?|last (night|week)|weather|forecast|stock( price)?s?|"
    r"prices?|exchange rate|scores?|who won|(19[89]\d|20\d\d))\b",
    re.I,
)
# broad questions, answered with the general settings across the books in scope
_BROAD = re.compile(
    r"\b(themes?|motifs?|main ideas?|key (points|ideas|events|moments)|main (points|characters|"
    r"events|plot)|overview|summar(y|ies|ise|ize)|tell me (all |more )?about|describe|"
    r"in general|big picture|tell me everything about|what (is|are) (it|they|this|these|the \w+( \w+)?) (all )?about)\b",
    re.I,
)

# "Alice and Elizabeth Bennet each...": one question asked of two subjects, a comparison
_EACH_OF_TWO = re.compile(
    r"\band(?:\s+(?!(?:what|who|whom|how|when|where|why|which|did|does|do|is|are|was|were)\b)"
    r"[\w'’.-]+){1,4}\s+each\b(?!\s+of\b)",
    re.I,
)

# a count asked for: "In how many lymphomas did BMAL1 correlate with MYC?" wants a number,
# whichever analysis word it uses
_COUNT_QUESTION = re.compile(
    r"^\W*(?:(?:in|for|on|at|of|by|from|among|across|over|after|within)\s+)?how many\b"
    r"|^\W*what (?:number|percentage|proportion|fraction|share) of\b",
    re.I,
)


@dataclass(frozen=True)
class RouteChoice:
    """The path for a message and why it was chosen."""

    route: Route
    reason: str
    """A short sentence for people: the page, ``--json``, the saved message, Studio."""
    mode: Mode | None = None
    """Retrieval settings for Path A/C (``None``: the path does not search passages)."""
    web: WebPlan = ""
    """What the turn may do with the web: ``explicit`` (asked for, key set: the web path),
    ``fallback`` (fresh facts, key set: the web if retrieval finds nothing relevant),
    ``unavailable`` (wanted, but no key: say so if the documents miss), or nothing."""


def _has_keyword(message: str, keywords: Sequence[str]) -> bool:
    text = f" {plain_words(message)} "
    return any(f" {plain_words(k)} " in text for k in keywords)


def is_name_question(message: str) -> bool:
    """Does the user ask who the assistant is?"""
    return bool(_NAME.search(message.strip()))


def is_small_talk(message: str) -> bool:
    """Greetings, thanks and other short phrases that need no retrieval."""
    return bool(_SMALL_TALK.match(message.strip()))


def names_many_books(message: str) -> bool:
    """ "all my books", "both documents", "across my books"..."""
    return bool(_MANY_BOOKS.search(message))


def asks_for_web(message: str) -> bool:
    """Does the user explicitly ask for the web ("search the web for...", "google...")?"""
    return bool(_EXPLICIT_WEB.search(message))


def needs_fresh_facts(message: str) -> bool:
    """News, prices, weather, scores, "latest", "today", a recent year: facts a book may
    not hold. Only a reason to try the web *after* the documents missed."""
    return bool(_FRESH_FACTS.search(message))


def asks_current_events(message: str) -> bool:
    """Explicit web requests and fresh-facts questions alike (no longer a route by itself)."""
    return asks_for_web(message) or needs_fresh_facts(message)


def asks_for_summary(message: str, summary_keywords: Sequence[str] = ()) -> bool:
    """Summary words ("summarize", "overview", "what is this book about"): Path B when one
    book is in scope (so a book the message names by its title is worth finding)."""
    from agent.config import GLOBAL_SUMMARY_KEYWORDS

    return _has_keyword(message, summary_keywords or GLOBAL_SUMMARY_KEYWORDS)


def is_broad(message: str) -> bool:
    """Broad questions ("tell me about...", "what themes...", "give me an overview...",
    "summarize all my books"), answered from many passages across the books in scope."""
    return bool(_BROAD.search(message)) or names_many_books(message)


# words that ask for a summary or shape it, and words naming the whole document: what is
# left of a summary request after them (and the book's own title and author) is a topic
_FILLER_WORDS = """
    about again all also any bit book brief briefly bullet bullets can chapter
    chapters complete concise content contents could detailed doc document english
    entire everything executive far few file format french full german get give
    happened happens haven hello here hey hi high into just key kindly know layman
    less let level like lines list little longer main maybe more need novel now ok
    okay one overall paper paragraph paragraphs please plot pls points provide quick
    quickly quire read report s sentence sentences short shorter simple simply some
    spanish story style sure t tell terms text thank thanks these too up us very want
    whole word words work would write yet worth reading
"""
_SUMMARY_FILLER = STOPWORDS | frozenset(_FILLER_WORDS.split())


def summary_topic(
    message: str,
    summary_keywords: Sequence[str] = (),
    book_names: Sequence[str] = (),
    filler: Collection[str] = (),
) -> str:
    """What a summary request is about beyond the whole document: "Lady Catherine's visit"
    in "summarize Lady Catherine's visit", nothing in "give me a short summary of this
    book" or "summarize Pride and Prejudice" (``book_names``: the title and author of the
    book in scope, whose words name no topic; ``filler``: more such plain words)."""
    from agent.config import GLOBAL_SUMMARY_KEYWORDS

    text = f" {plain_words(message)} "
    for keyword in summary_keywords or GLOBAL_SUMMARY_KEYWORDS:
        text = text.replace(f" {plain_words(keyword)} ", " ")
    names_book = _book_words(book_names)
    return " ".join(
        w
        for w in text.split()
        if w not in _SUMMARY_FILLER and w not in filler and not w.isdigit() and not names_book(w)
    )


def _book_words(book_names: Sequence[str]) -> Callable[[str], bool]:
    """Whether a word is one of the book's title or author words, loosely: two of them run
    together ("layoutparser") or the same word in another form ("prejudices")."""
    words = plain_words(" ".join(book_names)).split()
    joined = {a + b for a, b in zip(words, words[1:], strict=False)}
    stems = {w[:5] for w in words if len(w) >= 5}
    return lambda word: word in words or word in joined or (len(word) >= 5 and word[:5] in stems)


def _without_titles(message: str, titles: Sequence[str]) -> str:
    """``message``'s plain words less the ``titles`` it names (whole, or before a colon)."""
    text = f" {plain_words(message)} "
    named = {plain_words(t) for title in titles for t in (title, title.split(":")[0])}
    for words in sorted(named, key=len, reverse=True):
        if " " in words:  # a one-word title is too likely a common word
            text = text.replace(f" {words} ", " ")
    return text.strip()


def has_route_keyword(
    message: str, summary_keywords: Sequence[str] = (), reasoning_keywords: Sequence[str] = ()
) -> bool:
    """Whether ``message`` holds a summary or reasoning keyword: the router then needs the
    document titles it names (:func:`choose_route`'s ``document_titles``)."""
    from agent.config import REASONING_KEYWORDS

    return asks_for_summary(message, summary_keywords) or _has_keyword(
        message, reasoning_keywords or REASONING_KEYWORDS
    )


def _document_route(
    message: str,
    single_book: bool,
    summary_keywords: Sequence[str],
    reasoning: Sequence[str],
    titles: Sequence[str] = (),
    book_names: Sequence[str] = (),
) -> RouteChoice:
    """The documents' path: Path B, Path C, or Path A in general or specific mode. Keywords
    inside the document ``titles`` the message names do not count; a summary of a topic
    (:func:`summary_topic`) is no summary of the book."""
    from agent.config import REASONING_KEYWORDS

    wording = _without_titles(message, titles) if titles else message
    many = names_many_books(message)
    summary = asks_for_summary(wording, summary_keywords)
    topic = summary and summary_topic(wording, summary_keywords, book_names)
    if single_book and summary and not many and not topic:
        return RouteChoice("global_summary", "summary request for the one book in scope")
    analysis = _has_keyword(wording, reasoning or REASONING_KEYWORDS)
    if (analysis and not _COUNT_QUESTION.search(message)) or _EACH_OF_TWO.search(message):
        return RouteChoice("deep_reasoning", "analysis or comparison: deep reasoning", "deep")
    if many:
        return RouteChoice("hybrid", "asks about several books: general settings", "general")
    if topic and single_book:
        return RouteChoice(
            "hybrid", "summary of one topic, not the whole book: general settings", "general"
        )
    if summary or is_broad(message):
        return RouteChoice(
            "hybrid", "broad question: general settings across the books in scope", "general"
        )
    return RouteChoice("hybrid", "specific question", "specific")


def _with_web_plan(choice: RouteChoice, message: str, web_available: bool) -> RouteChoice:
    """Note what the turn may do with the web when the question wants it."""
    if asks_for_web(message):  # no key, or the path would have taken it already
        return replace(
            choice,
            reason=f"{choice.reason}; explicit web request, but web search is not configured",
            web="unavailable",
        )
    if not needs_fresh_facts(message) or choice.mode is None:
        return choice
    if web_available:
        note, plan = "asks for fresh facts: the web only if the documents miss", "fallback"
    else:
        note, plan = "asks for fresh facts, but web search is not configured", "unavailable"
    return replace(choice, reason=f"{choice.reason}; {note}", web=plan)


def choose_route(
    message: str,
    *,
    single_book: bool = False,
    web_available: bool = False,
    summary_keywords: Sequence[str] = (),
    reasoning_keywords: Sequence[str] = (),
    chapter_titles: Sequence[str] = (),
    document_titles: Sequence[str] = (),
    book_names: Sequence[str] = (),
) -> RouteChoice:
    """The path for ``message`` in seed 000's priority (see the module docs), and why.

    ``single_book``: exactly one book is in scope (chosen, or the user's only document).
    ``web_available``: a web-search key is configured. Keyword lists default to the seed's
    (``agent.config``). ``chapter_titles``: the chapter titles of the books in scope, for a
    title written without quotes ("what happens in A Mad Tea-Party"). ``document_titles``:
    the titles of documents in scope the message names, whose words are no keywords ("who
    wrote Why Nations Fail" asks no "why"). ``book_names``: the title and author of the one
    book in scope ("summarize the Austen novel" asks for no topic).
    """
    if is_name_question(message):
        return RouteChoice("direct", "name question: a fixed reply")
    if is_small_talk(message):  # whole-message patterns only: "how are you" is no analysis
        return RouteChoice("general", "small talk: no retrieval")
    if web_available and asks_for_web(message):
        return RouteChoice("web_search", "explicit web request", web="explicit")
    if names_chapter(message, chapter_titles):  # before the whole-book summary
        return RouteChoice("chapter_summary", "chapter request: that chapter's summary")
    choice = _document_route(
        message, single_book, summary_keywords, reasoning_keywords, document_titles, book_names
    )
    return _with_web_plan(choice, message, web_available)


def classify_route(
    message: str,
    *,
    single_book: bool = False,
    web_available: bool = False,
    summary_keywords: Sequence[str] = (),
    reasoning_keywords: Sequence[str] = (),
    chapter_titles: Sequence[str] = (),
    document_titles: Sequence[str] = (),
    book_names: Sequence[str] = (),
) -> Route:
    """The path for ``message`` (:func:`choose_route` without the reason)."""
    return choose_route(
        message,
        single_book=single_book,
        web_available=web_available,
        summary_keywords=summary_keywords,
        reasoning_keywords=reasoning_keywords,
        chapter_titles=chapter_titles,
        document_titles=document_titles,
        book_names=book_names,
    ).route
