"""Tables of contents and similar listings, told apart from the text around them."""

import pytest

from agent.retrieval.listings import asks_about_contents, is_listing

LISTINGS = [
    # a novel's contents: chapter headings with their titles
    "Alice’s Adventures in Wonderland THE MILLENNIUM FULCRUM EDITION 3.0 Contents CHAPTER I. "
    "Down the Rabbit-Hole CHAPTER II. The Pool of Tears CHAPTER III. A Caucus-Race and a Long "
    "Tale CHAPTER IV. The Rabbit Sends in a Little Bill CHAPTER V. Advice from a Caterpillar",
    # a textbook's, with dot leaders
    "Contents 1 Topological spaces . . . . . . . . . . 2 1.1 Open sets . . . . . . . . . . 2 "
    "1.2 Metric spaces . . . . . . . . 5 1.3 Compactness . . . . . . . . 11",
    # a list of illustrations: captions, each with its page
    "“He came down to see the place” 2 Mr. and Mrs. Bennet 5 “I hope Mr. Bingley will like "
    "it” 6 “I’m the tallest” 9 “He rode a black horse” 10 “When the party entered” 12 “She "
    "is tolerable” 15 “Without once opening his lips” 24",
    # a report's parts in words
    "Part One. Background Part Two. Methods and data Part Three. Results Part Four. Outlook",
]

PROSE = [
    # chapters named in sentences
    "Chapter 3 describes how the samples were collected and stored over the winter, and "
    "chapter 4 reports what the measurements showed once the equipment had been calibrated. "
    "Chapter 5 then compares those results with the earlier surveys of the same coast.",
    # footnote marks and counts rise too
    "Roberts failed to score in either leg.[8][25] Overall, whilst playing for Huddersfield he "
    "scored 50 goals in 142 games.[26][27][28][29] In November 1993 he was signed by Leicester "
    "City for £300,000.[19][30]",
    # a table of figures: amounts, years and percentages
    "Revenue 2021 2022 2023 Product sales 1,204 1,388 1,517 Services 310 295 402 Margin 12.5% "
    "13.1% 14.0% Headcount 85 91 97",
    # numbered steps count up by one: the steps are the answer, not a listing
    "Step 1 unpack the frame Step 2 fit the shelves Step 3 tighten the screws Step 4 fix "
    "the back panel Step 5 stand it upright Step 6 level the feet Step 7 load the shelves",
    # a story with a few numbers
    "On the 3 mornings that followed she walked 4 miles to the village, and by the 10th day "
    "the 2 of them had read every one of the 12 letters twice over.",
    "",
]


@pytest.mark.parametrize("text", LISTINGS)
def test_listings_are_found(text):
    assert is_listing(text)


@pytest.mark.parametrize("text", PROSE)
def test_prose_tables_and_footnotes_are_not_listings(text):
    assert not is_listing(text)


def test_questions_about_the_structure_want_the_listing():
    assert asks_about_contents("What chapters does the book have?")
    assert asks_about_contents("Show me the table of contents")
    assert not asks_about_contents("What does Alice give the animals as prizes?")
