"""Whose words an answer quotes, when the question asks what someone says."""

import pytest

from agent.retrieval.speakers import Line, another_speakers_words, asked_speaker, attributed_lines

KING = (
    "“Read them,” said the King. The White Rabbit put on his spectacles. “Where shall I begin, "
    "please your Majesty?” he asked. “Begin at the beginning,” the King said gravely, “and go "
    "on till you come to the end: then stop.” These were the verses the White Rabbit read:— "
    "“They told me you had been to her, And mentioned me to him: She gave me a good character"
)
QUEEN = (
    "“May it please your Majesty,” said Two, in a very humble tone, going down on one knee as "
    "he spoke, “we were trying—” “_I_ see!” said the Queen, who had meanwhile been examining "
    "the roses. “Off with their heads!” and the procession moved on."
)


@pytest.mark.parametrize(
    ("question", "speaker"),
    [
        ("What does the Queen of Hearts keep shouting?", "the Queen of Hearts"),
        ("What is the King's advice to the White Rabbit about reading the verses?", "the King"),
        ("What question does the Caterpillar ask Alice?", "the Caterpillar"),
        ("What did Mr. Collins say to Elizabeth?", "Mr. Collins"),
        ("What is the Hatter's riddle about a raven?", "the Hatter"),
        ("What does the report say about fees?", None),  # no name: nobody speaks
        ("What did she say?", None),
        ("What does Mr. Darcy give Elizabeth?", None),  # giving is not saying
        ("Who is the Queen's gardener?", None),
    ],
)
def test_the_speaker_a_question_asks_about(question, speaker):
    assert asked_speaker(question) == speaker


def test_each_line_gets_the_speaker_its_tag_names():
    lines = attributed_lines(KING)
    assert lines == [
        Line("Read them,", "the King"),
        # a new sentence of narration after the tag: the next line is not the King's
        Line("Where shall I begin, please your Majesty?", None),
        # the two halves of one speech around its tag are one line
        Line("Begin at the beginning, and go on till you come to the end: then stop.", "the King"),
        # a line the passage cuts off still counts, with the tag before it
        Line(
            "They told me you had been to her, And mentioned me to him: She gave me a good "
            "character",
            "the White Rabbit",
        ),
    ]


def test_a_line_after_the_tag_sentence_is_the_same_speakers_unless_it_answers_a_question():
    assert attributed_lines(QUEEN) == [
        Line("May it please your Majesty, we were trying—", "Two"),
        Line("_I_ see!", "the Queen"),
        Line("Off with their heads!", "the Queen"),
    ]
    reply = (
        "“Do you not want to know who has taken it?” cried his wife impatiently. “_You_ want "
        "to tell me, and I have no objection to hearing it.”"
    )
    assert [line.speaker for line in attributed_lines(reply)] == ["his wife", None]


def test_narration_of_its_own_ends_what_a_tag_reaches():
    text = (
        "“You should learn not to make personal remarks,” Alice said with some severity; "
        "“it’s very rude.” The Hatter opened his eyes very wide on hearing this; but all he "
        "_said_ was, “Why is a raven like a writing-desk?”"
    )
    assert attributed_lines(text) == [
        Line("You should learn not to make personal remarks, it’s very rude.", "Alice"),
        Line("Why is a raven like a writing-desk?", None),
    ]
    question = "What is the Hatter's riddle about a raven?"
    answer = 'The riddle is "Why is a raven like a writing-desk?" #chk_1.'
    passages = {"#chk_1": text, "#chk_2": "“It’s _him_,” said the Hatter."}
    assert another_speakers_words(answer, question, passages) is None


def test_a_gap_or_a_pronoun_names_nobody():
    text = "“Hush!” said the Rabbit. … “Very fine,” she said. “It’s late,” replied Mr. Collins."
    assert [line.speaker for line in attributed_lines(text)] == ["the Rabbit", None, "Mr. Collins"]


def test_an_answer_quoting_another_speaker_gets_the_asked_speakers_line():
    passages = {"#chk_aaaa1111": QUEEN, "#chk_bbbb2222": "“Come on, then!” roared the Queen."}
    question = "What does the Queen of Hearts keep shouting?"
    answer = 'The Queen of Hearts keeps shouting "May it please your Majesty" #chk_aaaa1111.'
    # no line shares a question word: the longest of the Queen's
    assert another_speakers_words(answer, question, passages) == (
        "the Queen of Hearts",
        "Off with their heads!",
        "#chk_aaaa1111",
    )
    king = "What is the King's advice to the White Rabbit about reading the verses?"
    verses = 'The advice is "They told me you had been to her, And mentioned me to him" #chk_1.'
    assert another_speakers_words(verses, king, {"#chk_1": KING}) == (
        "the King",
        "Begin at the beginning, and go on till you come to the end: then stop.",
        "#chk_1",
    )


def test_an_answer_is_kept_when_it_quotes_the_speaker_or_nothing_of_the_passages():
    passages = {"#chk_aaaa1111": QUEEN}
    question = "What does the Queen keep shouting?"
    own = 'She shouts "Off with their heads!" #chk_aaaa1111.'
    assert another_speakers_words(own, question, passages) is None
    unquoted = "The Queen keeps shouting at the gardeners #chk_aaaa1111."
    assert another_speakers_words(unquoted, question, passages) is None
    invented = 'The Queen shouts "Paint them all red at once" #chk_aaaa1111.'
    assert another_speakers_words(invented, question, passages) is None
    # a line no tag gives anyone may be the speaker's
    untagged = {"#chk_1": "“Where is the Duchess?” “Hush! Hush!” said the Queen."}
    answer = 'The Queen asks "Where is the Duchess?" #chk_1.'
    assert another_speakers_words(answer, "What does the Queen ask?", untagged) is None
    # a question asking nobody's words
    other = 'The gardener says "May it please your Majesty" #chk_aaaa1111.'
    assert another_speakers_words(other, "Who are the gardeners?", passages) is None


def test_words_of_the_narration_are_replaced_only_by_a_line_about_the_question():
    passages = {
        "#chk_1": "Alice had never been in a court of justice before. “Oh, I’ve had such a "
        "curious dream!” said Alice."
    }
    question = "What does Alice call the whole court at the end?"
    narration = 'The court is called a "court of justice" #chk_1.'
    assert another_speakers_words(narration, question, passages) is None
    passages["#chk_2"] = "“You are nothing but a court of cards!” cried Alice."
    assert another_speakers_words(narration, question, passages) == (
        "Alice",
        "You are nothing but a court of cards!",
        "#chk_2",
    )


def test_a_hybrid_answer_quoting_another_speaker_quotes_the_asked_one():
    from agent.chat.answering import finish_grounded

    retrieved = [{"id": "#chk_aaaa1111", "chunk_id": "c1", "text": QUEEN, "source": "Alice"}]
    question = "What does the Queen keep shouting?"
    common = dict(route="hybrid", model_used="m", tokens_used=1, question=question)
    raw = 'The Queen keeps shouting "May it please your Majesty" #chk_aaaa1111.'
    answer = finish_grounded(raw, retrieved, **common)
    assert answer.text == "The Queen says: “Off with their heads!” #chk_aaaa1111"
    assert [c["id"] for c in answer.citations] == ["#chk_aaaa1111"]
    raw = 'The Queen keeps shouting "Off with their heads!" #chk_aaaa1111.'
    assert finish_grounded(raw, retrieved, **common).text == raw
