"""The router table: labelled messages from the seeds' keyword lists and examples."""

import pytest

from agent.chat.routing import classify_route

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
    # a summary of the one book in scope (Path B)
    ("Can you summarize this book?", "global_summary"),
    ("Summarise it please", "global_summary"),
    ("Give me an overview", "global_summary"),
    ("What is this book about?", "global_summary"),
    ("Tell me about this book", "global_summary"),
    ("What does this book cover?", "global_summary"),
    ("book summary", "global_summary"),
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
    # specific facts (Path A)
    ("Who is Dinah?", "hybrid"),
    ("What does the Cheshire Cat say to Alice?", "hybrid"),
    ("Where does Mr. Bingley live?", "hybrid"),
    ("When does the tea party happen?", "hybrid"),
    ("Which chapter mentions the Lobster Quadrille?", "hybrid"),
    ("Who wrote the letter to Elizabeth?", "hybrid"),
    # current events (web search)
    ("What is the latest news about AI?", "web_search"),
    ("What's the weather in Paris right now?", "web_search"),
    ("Search the web for the population of Lagos", "web_search"),
    ("Who won the match this week?", "web_search"),
    ("current stock price of Apple", "web_search"),
]


@pytest.mark.parametrize(("message", "expected"), ONE_BOOK)
def test_router_table_with_one_book_in_scope(message, expected):
    assert classify_route(message, single_book=True) == expected


@pytest.mark.parametrize(
    "message", ["Can you summarize this book?", "Give me an overview", "What is this book about?"]
)
def test_summaries_need_a_single_book(message):
    assert classify_route(message, single_book=False) == "hybrid"


def test_table_is_large_enough_and_covers_every_path():
    assert len(ONE_BOOK) >= 40
    assert {route for _, route in ONE_BOOK} == {
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
