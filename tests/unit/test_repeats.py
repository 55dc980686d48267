"""An answer's repeated sentences (agent.retrieval.repeats)."""

from agent.retrieval.repeats import without_repeated_sentences

LOOP = "They were both described as large #chk_423e7bd9. "


def test_a_sentence_said_again_keeps_its_first_copy_only():
    answer = LOOP + "The Hatter wore a hat #chk_00aa11bb. " + LOOP.strip()
    assert without_repeated_sentences(answer) == (
        "They were both described as large #chk_423e7bd9. The Hatter wore a hat #chk_00aa11bb."
    )
    # its citation, case and punctuation aside
    again = "They were both described as large #chk_423e7bd9. they were BOTH described as large!"
    assert without_repeated_sentences(again) == "They were both described as large #chk_423e7bd9."


def test_short_or_different_sentences_stay():
    assert without_repeated_sentences("Yes. Yes.") == "Yes. Yes."
    kept = "Mr. Darcy is proud #chk_1. Mr. Darcy is proud of Pemberley #chk_2."
    assert without_repeated_sentences(kept) == kept
