"""A focused passage answering "who" keeps the sentence beside it that names someone
(agent.retrieval.named_reach, through agent.retrieval.focus): no database, no model."""

from __future__ import annotations

from agent.retrieval.focus import focus_passages
from agent.retrieval.named_reach import asks_for_someone, with_a_naming_sentence

DEBTS = (
    "The week was long and the roads were bad. "
    "The letters came late to every house in the village. "
    "Nobody in the family knew what had been done. "
    "It only remained, he thought, to secure the marriage at once. "
    "He learnt that the young officer had debts of honour which were very pressing. "
    "He must go somewhere, but he did not know where. "
    "He could not say how he would live. "
    "Mr. Darcy asked why he did not marry the girl at once. "
    "The weather turned cold that evening."
)


def _focused(question: str, text: str = DEBTS, **kw) -> str:
    return focus_passages(question, {"#chk_a": text}, hits=1, neighbours=2, **kw)["#chk_a"]


def test_a_who_question_keeps_the_next_sentence_naming_someone():
    focused = _focused("Who pays the officer's debts of honour?")
    assert "debts of honour" in focused
    assert "Mr. Darcy asked why" in focused
    assert "The weather turned cold" not in focused  # only the naming sentence is added


def test_other_questions_and_named_runs_are_left_as_they_were():
    # not asking for someone: the kept run ends two sentences after the best one
    what = _focused("What were the officer's debts of honour like?")
    assert "debts of honour" in what and "Mr. Darcy" not in what
    # a kept sentence already names someone the question does not: nothing added
    named = DEBTS.replace("the young officer", "Wickham")
    assert "Mr. Darcy" not in _focused("Who learnt of the debts of honour?", named)
    # the question's own name is no answer: Darcy asked about counts as no one new
    assert "Mr. Darcy asked why" in _focused("Who pays the debts of honour for Wickham?")


def test_the_naming_sentence_must_fit_the_passage_limit():
    assert "Mr. Darcy" not in _focused("Who pays the officer's debts of honour?", most=260)


def test_asks_for_someone():
    assert asks_for_someone("Who is Lady Catherine's daughter?")
    assert asks_for_someone("Whose name is used for Sir William's home?")
    assert asks_for_someone("What is the name of Mr. Darcy's estate?")
    assert not asks_for_someone("What does the Rabbit take out of its pocket?")
    assert not asks_for_someone("Where does Mr. Collins live?")
    # only names after "who is": what someone named is, not a name
    assert not asks_for_someone("Who is Dinah?")
    assert not asks_for_someone("who was Mr. Fitzwilliam Darcy?")
    assert asks_for_someone("Who is the eldest Bennet sister?")
    assert asks_for_someone("Who is Mr. Collins's patroness?")


def test_with_a_naming_sentence_picks_the_nearest_one_within_reach():
    sentences = ["In came Anna.", "He sat down.", "He spoke.", "It rained.", "At last Bob left."]
    lengths = [len(s) for s in sentences]
    # sentence 0 (one before) and 4 (two after) both name someone: the nearer wins
    assert with_a_naming_sentence("Who spoke?", sentences, [1, 2], lengths, None) == [0, 1, 2]
    # three sentences away is out of reach
    assert with_a_naming_sentence("Who spoke?", sentences, [1], lengths, None)[0] == 0
    assert with_a_naming_sentence("Who spoke?", sentences[1:], [0], lengths[1:], None) == [0]
