"""The router table: labelled messages from the seeds' keyword lists and examples."""

from pathlib import Path

import pytest

from agent.chat.intents import nearest_intent, routed_by_intent
from agent.chat.routing import (
    asks_for_web,
    choose_route,
    classify_route,
    has_route_keyword,
    is_broad,
    needs_fresh_facts,
    summary_topic,
)
from agent.config import Settings
from agent.models import embedding_model
from agent.text import plain_words
from bench.eval_routing import load_routing_set

ONE_BOOK = [
    # names
    ("What is your name?", "direct"),
    ("who are you", "direct"),
    ("What should I call you?", "direct"),
    ("Are you a bot?", "direct"),
    ("Please introduce yourself", "direct"),
    # greetings and small talk
    ("hi", "general"),
    ("Hello there!", "general"),
    ("good morning", "general"),
    ("thanks so much", "general"),
    ("Thank you for the help!", "general"),
    ("how are you doing today?", "general"),
    ("hello, how are you?", "general"),
    ("hi there, thanks!", "general"),
    ("hello, how are the Bennets related?", "deep_reasoning"),
    ("bye", "general"),
    ("ok", "general"),
    ("good morning :)", "general"),
    ("thanks, that helps!", "general"),
    ("got it, cheers 👍", "general"),
    ("perfect - who is Dinah?", "hybrid"),
    ("what can you do?", "direct"),
    ("who made you?", "direct"),
    ("what are you reading?", "hybrid"),
    ("who are you talking about?", "hybrid"),  # a follow-up, not a name question
    # a summary of the one book in scope (Path B)
    ("Can you summarize this book?", "global_summary"),
    ("Summarise it please", "global_summary"),
    ("Give me an overview", "global_summary"),
    ("What is this book about?", "global_summary"),
    ("Tell me about this book", "global_summary"),
    ("What does this book cover?", "global_summary"),
    ("book summary", "global_summary"),
    ("tl;dr please", "global_summary"),
    ("what's the gist?", "global_summary"),
    ("can you sum up the whole story in 5 bullet points", "global_summary"),
    ("I haven't read it yet - what is it about?", "global_summary"),
    # a summary of one topic of the book: Path A with the general settings
    ("Summarize Lady Catherine's visit to Longbourn", "hybrid"),
    ("give me an overview of the Bennet family", "hybrid"),
    # summaries of several books: Path A across books
    ("Summarize all my books", "hybrid"),
    ("Give me an overview of both documents", "hybrid"),
    ("summary of each of my books", "hybrid"),
    # analysis, comparison, why (Path C)
    ("Why does Alice grow and shrink?", "deep_reasoning"),
    ("Compare Elizabeth and Jane", "deep_reasoning"),
    ("Analyze the theme of pride", "deep_reasoning"),
    ("What is the relationship between Darcy and Wickham?", "deep_reasoning"),
    ("What is the difference between the Hatter and the Hare?", "deep_reasoning"),
    ("How does the Queen treat her subjects?", "deep_reasoning"),
    ("Contrast the two sisters", "deep_reasoning"),
    ("What leads to Lydia's elopement?", "deep_reasoning"),
    ("Explain why Darcy changes", "deep_reasoning"),
    ("Distinguish the Mock Turtle from the Gryphon", "deep_reasoning"),
    ("What are the similarities between Bingley and Darcy?", "deep_reasoning"),
    ("explain how Alice's size changes reflect her growing up", "deep_reasoning"),
    ("What motivates Wickham's lies?", "deep_reasoning"),
    ("what role does social class play in the story?", "deep_reasoning"),
    ("How does Elizabeth's opinion of Darcy evolve?", "deep_reasoning"),
    # one question asked of two subjects ("X and Y each ...") is a comparison
    ("How do Alice and Elizabeth Bennet each react to authority?", "deep_reasoning"),
    ("What do Jane and Elizabeth each think of Darcy?", "deep_reasoning"),
    ("Who won and what did each get?", "hybrid"),
    ("Alice and the Hatter each of them", "hybrid"),
    # specific facts (Path A)
    ("Who is Dinah?", "hybrid"),
    ("What does the Cheshire Cat say to Alice?", "hybrid"),
    ("Where does Mr. Bingley live?", "hybrid"),
    ("When does the tea party happen?", "hybrid"),
    ("Which chapter mentions the Lobster Quadrille?", "hybrid"),
    ("Who wrote the letter to Elizabeth?", "hybrid"),
    # a count asked for with an analysis word: a number, not an essay
    ("In how many chapters does the Cat's grin correlate with Alice's fear?", "hybrid"),
    ("How many of the sisters does Lydia influence?", "hybrid"),
    ("What percentage of the guests relate to the Bennets?", "hybrid"),
    ("Why do so many of the guests relate to the Bennets?", "deep_reasoning"),
    # fresh facts and explicit web requests without a web key: the documents, never the web
    ("What is the latest news about AI?", "hybrid"),
    ("What's the weather in Paris right now?", "hybrid"),
    ("Search the web for the population of Lagos", "hybrid"),
    ("Who won the match this week?", "hybrid"),
    ("current stock price of Apple", "hybrid"),
    # traps: document questions with news, weather, scores, "who won", "today", a year
    ("Who won the Caucus-race?", "hybrid"),
    ("What was the score of the croquet game?", "hybrid"),
    ("What news does Jane's letter bring?", "hybrid"),
    ("Why does Jane ride to Netherfield in bad weather?", "deep_reasoning"),
    ("Where is Lydia currently living?", "hybrid"),
    ("For my 2025 book club: who stole the tarts?", "hybrid"),
]

WITH_WEB_KEY = [
    # explicit requests take the web path at once
    ("Search the web for the population of Lagos", "web_search"),
    ("look it up online: who is the mayor of London?", "web_search"),
    ("Google the reviews of the latest film", "web_search"),
    ("Can you search online for Jane Austen's birthplace?", "web_search"),
    ("Find on the web when Lewis Carroll was born", "web_search"),
    ("Do a web search for film adaptations", "web_search"),
    # fresh facts: the documents first (the web only after a miss, see the graph tests)
    ("What is the latest news about AI?", "hybrid"),
    ("What's the weather in Paris right now?", "hybrid"),
    ("Who won the Caucus-race?", "hybrid"),
    ("What is your name?", "direct"),
    ("hello", "general"),
]


@pytest.mark.parametrize(("message", "expected"), ONE_BOOK)
def test_router_table_with_one_book_in_scope(message, expected):
    assert classify_route(message, single_book=True) == expected


@pytest.mark.parametrize(
    "message", ["Can you summarize this book?", "Give me an overview", "What is this book about?"]
)
def test_summaries_need_a_single_book(message):
    assert classify_route(message, single_book=False) == "hybrid"


@pytest.mark.parametrize(("message", "expected"), WITH_WEB_KEY)
def test_router_table_with_a_web_key(message, expected):
    assert classify_route(message, single_book=True, web_available=True) == expected


def test_table_is_large_enough_and_covers_every_path():
    assert len(ONE_BOOK) >= 40
    assert {route for _, route in ONE_BOOK + WITH_WEB_KEY} == {
        "direct",
        "general",
        "global_summary",
        "deep_reasoning",
        "web_search",
        "hybrid",
    }


def test_keywords_come_from_settings():
    assert classify_route("ponder the whale", reasoning_keywords=["ponder"]) == "deep_reasoning"
    assert classify_route("give me the gist", single_book=True, summary_keywords=["gist"]) == (
        "global_summary"
    )


def _named(item) -> list[str]:
    """The titles (file names here) of the item's books that its message names."""
    stems = [Path(b).stem.replace("-", " ") for b in item.books]
    return [t for t in stems if plain_words(t) in plain_words(item.message)]


def _single(item) -> bool:
    """One book in scope: the item's only book, or the one whose title the message names."""
    return len(item.books) == 1 or len(_named(item)) == 1


def _book_names(item) -> tuple[str, ...]:
    """The one book's title, as the turn passes it to the router."""
    if len(item.books) == 1:
        return (Path(item.books[0]).stem.replace("-", " "),)
    named = _named(item)
    return tuple(named) if len(named) == 1 else ()


ROUTING_SET = load_routing_set()
RULES_ALONE = [i for i in ROUTING_SET if i.cls != "chapter"]
"""Chapter requests also need the stored chapter titles: the eval and the chapter tests."""


@pytest.fixture(scope="module")
def embedder():
    return embedding_model("local", Settings()).embedder


@pytest.mark.parametrize("item", RULES_ALONE, ids=lambda i: f"{i.cls}:{i.message[:40]}")
def test_routing_set_labels_match_the_rules(item, embedder):
    """The labelled set of ``quire eval routing``: the route chosen before any retrieval
    (the rules, then the meaning of what they left to a specific search), without and with
    a web key (the graph's own fallbacks are tested in integration)."""
    names, single = _book_names(item), _single(item)
    match = nearest_intent(embedder, embedder.embed_query(item.message))
    for web in (False, True):
        chosen = choose_route(item.message, single_book=single, web_available=web, book_names=names)
        chosen = routed_by_intent(chosen, item.message, match, single_book=single, book_names=names)
        assert chosen.route == ((item.route_with_web or item.route) if web else item.route)
        if item.mode and not web:
            assert chosen.mode == item.mode


def test_traps_stay_on_the_documents_and_say_why():
    traps = [i for i in ROUTING_SET if i.cls == "trap"]
    assert len(traps) >= 20
    for item in traps:
        for key in (False, True):
            chosen = choose_route(item.message, single_book=_single(item), web_available=key)
            assert chosen.route in ("hybrid", "deep_reasoning"), item.message
            assert "fresh facts" in chosen.reason, (item.message, chosen.reason)
            assert chosen.web == ("fallback" if key else "unavailable")


def test_reasons_modes_and_web_plans():
    summary = choose_route("Can you summarize this book?", single_book=True)
    assert (summary.route, summary.reason, summary.mode) == (
        "global_summary",
        "summary request for the one book in scope",
        None,
    )
    assert choose_route("Who is Dinah?").reason == "specific question"
    assert choose_route("Who is Dinah?").mode == "specific"
    broad = choose_route("Tell me about the Cheshire Cat", single_book=True)
    assert (broad.route, broad.mode) == ("hybrid", "general") and "broad" in broad.reason
    many = choose_route("Summarize all my books")
    assert (many.route, many.mode) == ("hybrid", "general")
    assert choose_route("Compare Elizabeth and Jane").mode == "deep"
    explicit = choose_route("search the web for Lagos", web_available=True)
    assert (explicit.route, explicit.reason, explicit.web) == (
        "web_search",
        "explicit web request",
        "explicit",
    )
    no_key = choose_route("search the web for Lagos")
    assert no_key.route == "hybrid" and no_key.web == "unavailable"
    assert "web search is not configured" in no_key.reason
    plain = choose_route("Who is Dinah?", web_available=True)
    assert plain.web == "" and plain.reason == "specific question"
    assert choose_route("hello").mode is None and choose_route("hello").web == ""


@pytest.mark.parametrize(
    ("message", "broad"),
    [
        ("What themes run through Alice in Wonderland?", True),
        ("Give me an overview of the Bennet family", True),
        ("tell me about Mr. Wickham", True),
        ("Describe the Queen of Hearts", True),
        ("summarize all my books", True),
        ("Who is Dinah?", False),
        ("What does the Caterpillar smoke?", False),
    ],
)
def test_broad_questions(message, broad):
    assert is_broad(message) is broad


@pytest.mark.parametrize(
    ("message", "explicit", "fresh"),
    [
        ("search the web for the score", True, True),
        ("Google Lewis Carroll", True, False),
        ("look it up online", True, False),
        ("Who won the Caucus-race?", False, True),
        ("What is the weather like at the tea-party?", False, True),
        ("In 2024, who married Charlotte?", False, True),
        ("Who is Dinah?", False, False),
        ("What happened in 1813?", False, False),
    ],
)
def test_web_words(message, explicit, fresh):
    assert asks_for_web(message) is explicit
    assert needs_fresh_facts(message) is fresh


@pytest.mark.parametrize(
    ("message", "titles", "route"),
    [
        ("Who wrote Why Nations Fail?", ["Why Nations Fail"], "hybrid"),
        (
            "Why do states collapse, according to Why Nations Fail?",
            ["Why Nations Fail"],
            "deep_reasoning",
        ),
        (
            "Who are the authors of LayoutParser: A Unified Toolkit for Document Image Analysis?",
            ["LayoutParser: A Unified Toolkit for Document Image Analysis"],
            "hybrid",
        ),
        ("When was A Summary of Trade published?", ["A Summary of Trade: Essays"], "hybrid"),
        ("Summarize A Summary of Trade", ["A Summary of Trade: Essays"], "global_summary"),
        # without the titles, the title's word is taken for the reader's
        ("Who wrote Why Nations Fail?", [], "deep_reasoning"),
    ],
)
def test_keywords_inside_a_named_title_do_not_count(message, titles, route):
    assert choose_route(message, single_book=True, document_titles=titles).route == route
    assert has_route_keyword(message)


@pytest.mark.parametrize(
    ("message", "names", "topic"),
    [
        ("Can you summarize this book for me in 3 sentences?", (), ""),
        ("Give me a summary of Pride and Prejudice", ("Pride and Prejudice",), ""),
        ("summarize the Austen novel", ("Pride and Prejudice", "Jane Austen"), ""),
        ("what's the gist of the story so far, in simple English?", (), ""),
        ("Summarize Lady Catherine's visit", ("Pride and Prejudice",), "lady catherine visit"),
        ("Bennet family overview", (), "bennet family"),
        # the title loosely: words run together, another form of a word
        ("summarize the layoutparser paper", ("layout-parser-paper-fast",), ""),
        ("an overview of Pride & Prejudices", ("Pride and Prejudice",), ""),
    ],
)
def test_summary_topics(message, names, topic):
    assert summary_topic(message, book_names=names) == topic


def test_a_topic_summary_reads_passages_and_says_why():
    """The whole-book summary answers "summarize the book", not "summarize her visit"."""
    chosen = choose_route("Summary of Lady Catherine's visit", single_book=True)
    assert (chosen.route, chosen.mode) == ("hybrid", "general")
    assert "topic" in chosen.reason
    whole = choose_route("Summary of Emma", single_book=True, book_names=("Emma", "Jane Austen"))
    assert whole.route == "global_summary"
