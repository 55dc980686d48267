"""Focused passages: a question's figures matched whole (a version, a year, a count), and the
reply after a kept question kept with it."""

from __future__ import annotations

from agent.retrieval.focus import focus_passages, lone_word_passages

_RELEASES = (
    "quillstream is a log library, first released in 2019. "
    "Version 0.4.0 (17 January 2020) was released with gzip support. "
    "Version 1.0.0 (2 March 2020) was released as the first stable version. "
    "The project moved to a new home that year. "
    "Its maintainers met twice in Leeds. "
    "Version 1.3.1 (30 June 2021) was released to fix a leap-second bug."
)


def test_a_version_asked_for_keeps_the_sentence_that_gives_it():
    focused = focus_passages("When was quillstream 1.3.1 released?", {"#chk_0000000a": _RELEASES})[
        "#chk_0000000a"
    ]
    assert "Version 1.3.1 (30 June 2021)" in focused
    assert "Version 1.0.0" not in focused  # far from both picks: left out


def test_a_figure_with_a_thousands_comma_matches_it_without():
    text = (
        "The town had 2100 people by 1850. A school followed. "
        "The town had 2800 people by 1870. The chapel was rebuilt. The market moved. "
        "The town had 3960 people by 1901."
    )
    focused = focus_passages("When did the town have 3,960 people?", {"#chk_0000000b": text})[
        "#chk_0000000b"
    ]
    assert "3960 people by 1901" in focused


_MEETING = (
    "MAYOR ALDEN: The first item is the footbridge. "
    "COUNCILLOR OYELARAN: Its timber beams have rotted. "
    "COUNCILLOR BRIGGS: I still think we should wait for the county grant. "
    "MAYOR ALDEN: Noted. "
    "MAYOR ALDEN: Let us put the footbridge repair to a vote. "
    "MAYOR ALDEN: All those in favour of approving the repair? "
    "MAYOR ALDEN: And those against? "
    "CLERK MARSH: Seven in favour, two against. "
    "MAYOR ALDEN: The second item is parking. "
    "COUNCILLOR BRIGGS: I propose charges at the Quay Street car park."
)


def test_the_reply_to_a_kept_question_is_kept_with_it():
    focused = focus_passages(
        "What was the result of the vote on the footbridge repair?",
        {"#chk_0000000c": _MEETING},
    )["#chk_0000000c"]
    assert "And those against? CLERK MARSH: Seven in favour, two against." in focused
    assert "Quay Street" not in focused  # the reply only, not what follows it


def test_a_reply_is_left_out_past_the_passage_limit():
    focused = focus_passages(
        "What was the result of the vote on the footbridge repair?",
        {"#chk_0000000d": _MEETING},
        most=150,
    )["#chk_0000000d"]
    assert "Seven in favour" not in focused


_GULLS = [
    "The lighthouse stood on a grey rock.",
    "Its keeper rowed out each week.",
    "One evening the keeper asked why the gulls circled the lantern.",
    "Nobody in the boat answered him at first.",
    "Then Tamsin said it was the herring shoals under the light.",
    "Above them the birds kept wheeling.",
    "The lantern was lit at dusk, and the gulls circled it until dawn.",
    "The boat turned for the harbour.",
    "Supper was late that night.",
]


def test_a_lone_sentence_between_two_kept_runs_is_kept_with_them():
    """The reply two lines after a question, a line of narration between: with the passage
    at its limit it goes no sooner than the sentences either side of it."""
    question = "Why did the gulls circle the lantern?"
    most = sum(len(s) + 1 for s in _GULLS[1:8])
    focused = focus_passages(question, {"#chk_0000000e": " ".join(_GULLS)}, neighbours=2, most=most)
    text = focused["#chk_0000000e"]
    assert "herring shoals" in text
    assert _GULLS[0] not in text and _GULLS[8] not in text  # the farthest still go first


_FORECAST = (
    "Year-one unit forecast by region. "
    "Region: Nordics; Units Y1 (base): 18,500; Units Y1 (stretch): 22,000; Launch retailer: "
    "Hemvik Stores. "
    "Region: DACH; Units Y1 (base): 41,200; Units Y1 (stretch): 48,600; Launch retailer: "
    "Küchenhaus Ritter. "
    "Region: Benelux; Units Y1 (base): 14,750; Units Y1 (stretch): 17,300; Launch retailer: "
    "Van Aalst Wonen. "
    "Region: UK & Ireland; Units Y1 (base): 29,800; Units Y1 (stretch): 35,100; Launch "
    "retailer: Caddow & Finch. "
    "Region: Iberia; Units Y1 (base): 9,600; Units Y1 (stretch): 12,400; Launch retailer: "
    "Casa Meridia. "
    "Region: Total; Units Y1 (base): 113,850; Units Y1 (stretch): 135,400. "
    "Base case assumes 62% sell-through by month 9. "
    "DACH forecast includes 3,000 units pre-committed by Küchenhaus Ritter. "
    "S3 sold 71,300 units in its first year."
)
_DECISIONS = (
    "Decisions needed today. Approve marketing budget of €3.6 m (digital 55%, retail POS 30%, "
    "PR 15%). Confirm base-case forecast of 113,850 units for production planning. Sign off "
    "on Copper trim Edition as a limited run of 10,000 units. Nominate a launch-readiness "
    "owner for each region by 20 February 2026."
)


def test_a_sentence_holding_more_question_words_beats_one_holding_rarer_ones():
    """The table row naming the region and the columns asked for, whose column names every
    row repeats, is kept over the notes that hold "case" or "first year" alone."""
    question = (
        "How many units are expected to sell in the DACH region in the first year, base case?"
    )
    passages = {"#chk_0000000f": _FORECAST, "#chk_00000010": _DECISIONS}
    focused = focus_passages(question, passages, neighbours=0)
    assert "Region: DACH; Units Y1 (base): 41,200" in focused["#chk_0000000f"]


_HEIGHTS = (
    "Common name: Ember-cup; Flowering months: April – May; Typical height: 8–12 cm. "
    "Common name: Shepherd's Thimble; Flowering months: June – July; Typical height: 40–60 cm."
)
_THIMBLE = (
    "Shepherd's Thimble is a compact upland foxglove of the screes. "
    "Its creamy-white bells are freckled inside with maroon spots. "
    "Like all foxgloves it is poisonous if eaten. "
    "A pink-flowered form of Shepherd's Thimble was recorded once, in 1997."
)


def test_a_measure_asked_for_keeps_the_row_that_gives_it():
    """ "How tall" asks for a height: the row under "Typical height" is kept, though it
    shares only the plant's name with the question."""
    question = "How tall does Shepherd's Thimble usually get?"
    passages = {"#chk_00000011": _THIMBLE + " " + _HEIGHTS}
    focused = focus_passages(question, passages, hits=1, neighbours=0)
    assert "Typical height: 40–60 cm" in focused["#chk_00000011"]
    assert "compact upland foxglove" not in focused["#chk_00000011"]


def test_a_one_word_question_reads_its_passages_up_to_the_first_holding_the_word():
    texts = {
        "a": "The house stood empty all winter.",
        "b": "Pemberley was the finest estate in Derbyshire.",
        "c": "She thought of Pemberley again that night.",
        "d": "Pemberley's woods ran down to the river.",
    }
    # every passage after "b" only repeats the word; "a" (no Pemberley) came first
    assert lone_word_passages("What is Pemberley?", texts) == ["a", "b"]
    # a side of a conflict stays, whatever its rank
    assert lone_word_passages("What is Pemberley?", texts, keep={"d"}) == ["a", "b", "d"]
    # a question of two content words ranks by both: nothing is left out
    assert lone_word_passages("Where are Pemberley's woods?", texts) == list(texts)
    # no passage holds the word: each is the embedder's guess, all stay
    assert lone_word_passages("Who is Georgiana?", texts) == list(texts)


def test_a_preposition_of_the_question_picks_no_sentence():
    # "into" of "goes into the sourdough" once chose "Shape into a batard…" over the table row
    recipe = (
        "Weekend Sourdough. Makes one loaf of about 900 g. Ingredients. "
        "Ingredient: Bread flour; Amount: 450 g. Ingredient: Water; Amount: 375 g. "
        "Ingredient: Salt; Amount: 10 g. Method. Mix the flours and 350 g of the water. "
        "Add the salt and the last 25 g of water. Bulk ferment for about 4 hours at 24 °C. "
        "Shape into a batard and proof in the fridge for 12 to 16 hours. "
        "Bake in a preheated Dutch oven at 250 °C for 20 minutes. "
        "The loaf is done when its internal temperature reaches 96 °C."
    )
    question = "How much water goes into the sourdough?"
    [focused] = focus_passages(question, {"a": recipe}, hits=2, neighbours=0).values()
    assert "Ingredient: Water; Amount: 375 g." in focused
    assert "batard" not in focused
