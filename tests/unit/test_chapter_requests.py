"""Chapter references in a message (agent/chat/chapter_refs.py) and the route they take:
numbers, roman numerals, number words and ordinals, parts, quoted and unquoted titles."""

import pytest

from agent.chat.chapter_refs import (
    LAST,
    chapter_reference,
    may_name_a_title,
    names_chapter,
    number_value,
    title_matches,
    title_name,
    title_number,
    titles_in_message,
)
from agent.chat.routing import classify_route

ALICE_TITLES = [
    "CHAPTER I. Down the Rabbit-Hole",
    "CHAPTER VI. Pig and Pepper",
    "CHAPTER VII. A Mad Tea-Party",
    "CHAPTER VIII. The Queen’s Croquet-Ground",
    "CHAPTER XII. Alice’s Evidence",
]


@pytest.mark.parametrize(
    ("message", "kind", "number"),
    [
        ("summarize chapter 7", "chapter", 7),
        ("Summarize chapter 7.", "chapter", 7),
        ("what happens in chapter VII", "chapter", 7),
        ("What happens in chapter vii?", "chapter", 7),
        ("give me a summary of chapter XII please", "chapter", 12),
        ("summary of chapter I.", "chapter", 1),
        ("tell me about chapter I", "chapter", 1),
        ("summarize Chapter Seven", "chapter", 7),
        ("summarize chapter twenty one", "chapter", 21),
        ("recap the third chapter", "chapter", 3),
        ("Recap the twenty-first chapter", "chapter", 21),
        ("summary of the 2nd chapter", "chapter", 2),
        ("what happened in the opening chapter", "chapter", 1),
        ("summarize the last chapter", "chapter", LAST),
        ("what is chapter 3 about?", "chapter", 3),
        ("what's in chapter 5", "chapter", 5),
        ("summarise ch. 4", "chapter", 4),
        ("summarize chap 4", "chapter", 4),
        ("summarize chapter 7 of Alice in Wonderland", "chapter", 7),
        ("summary of part two", "part", 2),
        ("Give me an overview of Part II", "part", 2),
        ("recap the second story", "story", 2),
        ("summarize book 3", "book", 3),
    ],
)
def test_numbered_references(message, kind, number):
    ref = chapter_reference(message)
    assert ref is not None, message
    assert (ref.kind, ref.number) == (kind, number)
    assert ref.phrase and ref.phrase.lower() in message.lower()


@pytest.mark.parametrize(
    ("message", "title"),
    [
        ("what happens in 'A Scandal in Bohemia'", "A Scandal in Bohemia"),
        ('summarize "The Red-Headed League"', "The Red-Headed League"),
        ("What happens in “A Mad Tea-Party”?", "A Mad Tea-Party"),
        ("recap ‘Pig and Pepper’ for me", "Pig and Pepper"),
    ],
)
def test_quoted_titles(message, title):
    ref = chapter_reference(message)
    assert ref is not None and ref.kind == "title" and ref.title == title


@pytest.mark.parametrize(
    "message",
    [
        "Who does Alice meet in chapter 7?",  # a question, not a summary request
        "chapter 7",
        "Summarize chapters 1 and 2",  # several chapters
        "summarize chapter 1 and chapter 2",
        "compare chapter 1 and chapter 2",
        "summarize this book",
        "summarize the part I liked",  # "I" the pronoun
        "summarize the book I uploaded",
        "Summarize chapter i",
        "summarize chapter dancing",
        "Alice's summary",
        "what's 'this' and 'that' about",  # two quotes
    ],
)
def test_not_one_chapter(message):
    assert chapter_reference(message) is None


@pytest.mark.parametrize(
    ("word", "value"),
    [
        ("7", 7),
        ("7th", 7),
        ("21st", 21),
        ("VII", 7),
        ("xiv", 14),
        ("MCMXC", 1990),
        ("seven", 7),
        ("seventh", 7),
        ("twelfth", 12),
        ("twenty-one", 21),
        ("twenty first", 21),
        ("fortieth", 40),
        ("last", LAST),
        ("twenty twenty", None),
        ("dancing", None),
        ("", None),
    ],
)
def test_number_values(word, value):
    assert number_value(word) == value


@pytest.mark.parametrize(
    ("title", "number", "name"),
    [
        ("CHAPTER VII. A Mad Tea-Party", ("chapter", 7), "A Mad Tea-Party"),
        ("Chapter I.", ("chapter", 1), ""),
        ("Chapter One: Beginnings", ("chapter", 1), "Beginnings"),
        ("Part 3", ("part", 3), ""),
        ("PART TWO", ("part", 2), ""),
        ("BOOK I", ("book", 1), ""),
        ("12. The End", (None, 12), "The End"),
        ("I. A SCANDAL IN BOHEMIA", (None, 1), "A SCANDAL IN BOHEMIA"),
        ("I Was Born", None, "I Was Born"),  # a name that starts like a numeral
        ("One Day in June", None, "One Day in June"),
        ("Down the Rabbit-Hole", None, "Down the Rabbit-Hole"),
        (None, None, ""),
    ],
)
def test_stored_titles(title, number, name):
    assert title_number(title) == number
    assert title_name(title) == name


def test_title_matching():
    assert title_matches("A Mad Tea-Party", "CHAPTER VII. A Mad Tea-Party") == 2
    assert title_matches("chapter vii. a mad tea party", "CHAPTER VII. A Mad Tea-Party") == 2
    assert title_matches("Tea-Party", "CHAPTER VII. A Mad Tea-Party") == 1
    assert title_matches("The Queen's Croquet-Ground", ALICE_TITLES[3]) == 2  # ’ or '
    assert title_matches("Bohemia", "CHAPTER VII. A Mad Tea-Party") == 0
    assert title_matches("", "CHAPTER VII. A Mad Tea-Party") == 0


def test_unquoted_titles_are_found_in_the_message():
    found = titles_in_message("What happens in A Mad Tea-Party?", ALICE_TITLES)
    assert found == ["CHAPTER VII. A Mad Tea-Party"]
    # the leading article may be left out, apostrophes typed either way
    assert titles_in_message("what happens at the mad tea party", ALICE_TITLES) == [ALICE_TITLES[2]]
    assert titles_in_message("summarize The Queen's Croquet-Ground", ALICE_TITLES) == [
        ALICE_TITLES[3]
    ]
    assert titles_in_message("tell me about Wonderland", ALICE_TITLES) == []


@pytest.mark.parametrize(
    ("message", "titles", "expected"),
    [
        ("summarize chapter 7", (), True),
        ("What happens in A Mad Tea-Party?", ALICE_TITLES, True),
        ("What happens in A Mad Tea-Party?", (), False),  # no titles known: cannot tell
        ("Who is at the mad tea party?", ALICE_TITLES, False),  # a question, no summary asked
        ("summarize 'A Mad Tea-Party'", ALICE_TITLES, True),
        ("summarize the story 'The Hound'", ALICE_TITLES, True),  # says story: ask which
        ("summarize 'Pride and Prejudice'", ALICE_TITLES, False),  # a book, not a chapter
        ("summarize this book", ALICE_TITLES, False),
    ],
)
def test_names_chapter(message, titles, expected):
    assert names_chapter(message, titles) is expected


def test_titles_are_only_needed_without_a_number():
    assert may_name_a_title("What happens in A Mad Tea-Party?")
    assert not may_name_a_title("summarize chapter 7")
    assert not may_name_a_title("Who is the Hatter?")


@pytest.mark.parametrize(
    ("message", "single_book", "titles", "route"),
    [
        ("Summarize chapter 7", True, (), "chapter_summary"),
        ("summarize chapter 7", False, (), "chapter_summary"),
        ("what happens in chapter VII", True, (), "chapter_summary"),
        ("summary of part two", True, (), "chapter_summary"),
        ("recap the third chapter", True, (), "chapter_summary"),
        (
            "what happens in 'A Scandal in Bohemia'",
            False,
            ("I. A Scandal in Bohemia",),
            "chapter_summary",
        ),
        ("What happens in A Mad Tea-Party?", True, ALICE_TITLES, "chapter_summary"),
        # without a chapter, the whole-book summary as before
        ("Can you summarize this book?", True, ALICE_TITLES, "global_summary"),
        ("Summarize Pride and Prejudice", True, ALICE_TITLES, "global_summary"),
        ("Who does Alice meet in chapter 7?", True, (), "hybrid"),
    ],
)
def test_chapter_requests_take_their_route(message, single_book, titles, route):
    # the turn passes the title of the one book in scope (its words name no topic)
    book = ("Pride and Prejudice",) if single_book else ()
    chosen = classify_route(
        message, single_book=single_book, chapter_titles=titles, book_names=book
    )
    assert chosen == route
