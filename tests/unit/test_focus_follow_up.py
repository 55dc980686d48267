"""Question-focused passages (agent.retrieval.focus) and follow-ups that continue the chat's
last exchange (agent.chat.follow_up): no database, no model."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from agent.chat.follow_up import (
    Exchange,
    ExchangeLog,
    can_continue,
    continue_exchange,
    scope_key,
    unread_sentences,
)
from agent.retrieval.focus import GAP, focus_by_holder, focus_passages

POOL = (
    "Alice was beginning to get very tired of sitting by her sister on the bank. "
    "Once or twice she had peeped into the book her sister was reading. "
    "It had no pictures or conversations in it. "
    "So she was considering in her own mind whether the pleasure of making a daisy-chain "
    "would be worth the trouble. "
    "Suddenly a White Rabbit with pink eyes ran close by her. "
    "The Rabbit actually took a watch out of its waistcoat-pocket, and looked at it. "
    "Alice started to her feet. "
    "Burning with curiosity, she ran across the field after it."
)
CAT = (
    "Alice went on talking to herself. "
    "Dinah'll miss me very much to-night, I should think! "
    "Dinah was the cat. "
    "I hope they'll remember her saucer of milk at tea-time. "
    "Dinah my dear! I wish you were down here with me!"
)


def test_a_passage_keeps_its_matching_sentences_and_their_neighbours():
    focused = focus_passages(
        "What does the Rabbit take out of its waistcoat-pocket?", {"#chk_a": POOL, "#chk_b": CAT}
    )
    pool = focused["#chk_a"]
    assert "took a watch out of its waistcoat-pocket" in pool
    assert "White Rabbit with pink eyes" in pool and "Alice started to her feet." in pool
    assert "daisy-chain" not in pool and pool.startswith(GAP)
    assert len(pool) < len(POOL) / 2


def test_a_passage_keeps_at_most_its_characters_dropping_the_farthest_neighbours():
    question = "What does the Rabbit take out of its waistcoat-pocket?"
    whole = focus_passages(question, {"#chk_a": POOL}, hits=1, neighbours=2)["#chk_a"]
    capped = focus_passages(question, {"#chk_a": POOL}, hits=1, neighbours=2, most=200)["#chk_a"]
    # the best sentence and its nearest neighbours stay; the farthest go first
    assert "took a watch out of its waistcoat-pocket" in capped
    assert "White Rabbit with pink eyes" in capped
    assert "daisy-chain" in whole and "daisy-chain" not in capped
    assert "ran across the field" in whole and "ran across the field" not in capped
    assert len(capped) < len(whole)
    # a best sentence longer than the cap is still shown
    alone = focus_passages(question, {"#chk_a": POOL}, hits=1, neighbours=2, most=10)["#chk_a"]
    assert "took a watch out of its waistcoat-pocket" in alone


def test_words_every_passage_shares_count_for_little():
    # "Alice" is in every passage; "cat" in one sentence: that sentence is the one kept
    focused = focus_passages("Who is Alice's cat?", {"#chk_a": POOL, "#chk_b": CAT}, hits=1)
    assert "Dinah was the cat." in focused["#chk_b"]
    assert "saucer of milk" in focused["#chk_b"] and "I wish you were" not in focused["#chk_b"]


def test_the_second_sentence_kept_brings_the_question_words_the_first_lacks():
    poem = (
        "Here's to the crazy ones. The misfits. The rebels. The troublemakers. "
        "The round pegs in the square holes. They are not fond of rules. "
        "And they have no respect for the status quo. You can quote them. "
        "The only thing you cannot do is ignore the crazy ones. "
        "We make tools for the crazy ones. Because the crazy ones change things."
    )
    question = "What do the crazy ones have no respect for?"
    focused = focus_passages(question, {"#chk_a": poem}, hits=2, neighbours=0)["#chk_a"]
    # "crazy ones" is in four sentences, "respect" in one: the first pick holds "crazy
    # ones", the second the word it lacks rather than "crazy ones" again
    assert "Here's to the crazy ones." in focused
    assert "no respect for the status quo" in focused
    assert "ignore the crazy ones" not in focused and "tools for" not in focused


def test_short_and_unmatched_passages():
    short = "The bakery sells rye bread. It opens at six."
    focused = focus_passages("When does the bakery open?", {"#chk_a": short, "#chk_b": POOL})
    assert focused["#chk_a"] == short
    unmatched = focus_passages("Which river floods?", {"#chk_b": POOL}, hits=2, neighbours=0)
    assert unmatched["#chk_b"].startswith("Alice was beginning") and unmatched["#chk_b"].endswith(
        GAP
    )


def test_each_kept_sentence_goes_under_the_chunk_that_holds_it():
    # the window is the parent; its first four sentences are the retrieved child #chk_a,
    # the watch is in the sibling #chk_s
    sentences = POOL.split(". ")
    child, sibling = ". ".join(sentences[:4]) + ".", ". ".join(sentences[4:])
    question = "What does the Rabbit take out of its waistcoat-pocket?"
    runs = focus_by_holder(
        question,
        {"#chk_a": POOL, "#chk_b": CAT},
        {"#chk_a": [("#chk_a", child), ("#chk_s", sibling)]},
        hits=1,
        neighbours=1,
    )
    held = dict(runs["#chk_a"])
    assert [cid for cid, _ in runs["#chk_a"]] == ["#chk_s"]  # no kept sentence is the child's
    assert "took a watch out of its waistcoat-pocket" in held["#chk_s"]
    assert "White Rabbit" in held["#chk_s"] and "daisy-chain" not in held["#chk_s"]
    # a passage given no pieces stays under its own id, as focus_passages cuts it
    assert runs["#chk_b"] == [
        ("#chk_b", focus_passages(question, {"#chk_a": POOL, "#chk_b": CAT}, hits=1)["#chk_b"])
    ]
    # kept sentences on both sides of the boundary: two runs, in reading order, and no "…"
    # between them (nothing is left out there)
    both = focus_by_holder(
        "Why did she consider a daisy-chain when the White Rabbit ran by?",
        {"#chk_a": POOL},
        {"#chk_a": [("#chk_a", child), ("#chk_s", sibling)]},
        hits=2,
        neighbours=0,
    )["#chk_a"]
    assert [cid for cid, _ in both] == ["#chk_a", "#chk_s"]
    assert both[0][1].endswith("worth the trouble.") and both[1][1].startswith("Suddenly")


def test_a_sentence_across_two_chunks_goes_under_the_one_holding_most_of_it():
    # the child boundary falls inside the watch sentence, near its end: most of it is in
    # the sibling before the retrieved child, which holds only its last words
    cut = POOL.index("and looked at it.")
    sibling, child = POOL[:cut].strip(), POOL[cut:]
    question = "What does the Rabbit take out of its waistcoat-pocket?"
    runs = focus_by_holder(
        question, {"#chk_c": POOL}, {"#chk_c": [("#chk_c", child), ("#chk_s", sibling)]}, hits=1
    )
    held = dict(runs["#chk_c"])
    assert "took a watch out of its waistcoat-pocket, and looked at it." in held["#chk_s"]
    # cut the other way (most of it in the retrieved child) it stays there
    cut = POOL.index("took a watch")
    runs = focus_by_holder(
        question,
        {"#chk_c": POOL},
        {"#chk_c": [("#chk_c", POOL[cut:]), ("#chk_s", POOL[:cut].strip())]},
        hits=1,
        neighbours=0,
    )
    assert [cid for cid, _ in runs["#chk_c"]] == ["#chk_c"]


NETHERFIELD = (
    "Mr. Bennet was among the earliest of those who waited on the new neighbour at last. "
    "He had always intended to visit him, though to the last always assuring his wife so. "
    "Mrs. Bennet could not sit still. "
    "She said Netherfield Park is let at last. "
    "Mrs. Long says that Netherfield is taken by a young man of large fortune from the north, "
    "that he came down on Monday in a chaise and four to see the place. "
    "“What is his name?” "
    "“Bingley.” "
    "“Is he married or single?” "
    "“Oh! single, my dear, to be sure!”"
)


def test_a_best_sentence_at_the_window_edge_keeps_its_neighbours_from_the_parent():
    # the window shown around the retrieved child ends right after the best sentence; the
    # name the dialogue gives next lies past its edge, in the parent
    question = "What is the name of the young man who takes Netherfield Park?"
    cut = NETHERFIELD.index("that he came down")
    window = NETHERFIELD[:cut].strip() + "…"
    alone = focus_passages(question, {"#chk_a": window}, hits=1, neighbours=2)["#chk_a"]
    assert "Bingley" not in alone
    wide = focus_passages(
        question, {"#chk_a": window}, hits=1, neighbours=2, wholes={"#chk_a": NETHERFIELD}
    )["#chk_a"]
    assert "taken by a young man of large fortune" in wide and "“Bingley.”" in wide
    # the best sentence is still picked within the window: "name" (a question word) in the
    # sentence past the edge does not move the pick there
    assert "single, my dear" not in wide and "married or single" not in wide
    # no longer than the window: the neighbours farthest from the best sentence go first
    assert len(wide) <= len(window) and "earliest of those" not in wide
    # the window's cut-off last sentence is shown whole, from the parent
    held = focus_by_holder(
        question,
        {"#chk_a": window},
        {"#chk_a": [("#chk_a", NETHERFIELD[:cut]), ("#chk_s", NETHERFIELD[cut:])]},
        hits=1,
        neighbours=2,
        wholes={"#chk_a": NETHERFIELD},
    )["#chk_a"]
    assert [cid for cid, _ in held] == ["#chk_a", "#chk_s"]
    assert "“Bingley.”" in dict(held)["#chk_s"]


def _payload(cid: str, text: str) -> dict:
    return {"id": cid, "source": "Alice", "text": text, "context_text": text, "chunk_id": cid}


def _state(question: str, retrieved: list[dict], **extra) -> dict:
    return {
        "question": question,
        "retrieved": retrieved,
        "relevant": True,
        "user_id": "u1",
        "book_id": "b1",
        "chat_id": "c1",
        **extra,
    }


def _exchange(state: dict) -> Exchange:
    messages = (SystemMessage("sys"), HumanMessage("passages and question one"))
    return Exchange(
        messages, "Dinah is the cat #chk_b.", tuple(state["retrieved"]), scope_key(state)
    )


def test_a_follow_up_is_one_more_message_holding_only_unseen_passages():
    first = _state("Who is Dinah?", [_payload("#chk_b", CAT)])
    previous = _exchange(first)
    same = continue_exchange(
        previous, _state("What does she drink?", [_payload("#chk_b", CAT)]), 7000
    )
    assert same is not None
    assert [type(m) for m in same.messages] == [
        SystemMessage,
        HumanMessage,
        AIMessage,
        HumanMessage,
    ]
    assert same.messages[2].content == previous.reply  # the model's own words: cached tokens
    assert (
        "#chk_b" not in same.messages[-1].content
        and "What does she drink?" in same.messages[-1].content
    )
    more = continue_exchange(
        previous,
        _state("And the Rabbit?", [_payload("#chk_a", POOL), _payload("#chk_b", CAT)]),
        7000,
    )
    assert (
        "#chk_a [Alice]" in more.messages[-1].content and "#chk_b" not in more.messages[-1].content
    )
    assert {p["id"] for p in more.citable} == {"#chk_a", "#chk_b"}  # the earlier one still citable


def test_a_passage_shown_before_shows_only_its_new_sentences():
    said = "“Dinah’s our cat.” She catches mice. …"
    first = _state("Who is Dinah?", [{**_payload("#chk_b", CAT), "context_text": said}])
    previous = _exchange(first)
    wider = "… “Dinah’s our cat.” She catches mice. She chases the birds too! She sleeps a lot."
    state = _state("What else?", [{**_payload("#chk_b", CAT), "context_text": wider}])
    more = continue_exchange(previous, state, 7000)
    asked = more.messages[-1].content
    # only what the model has not read under #chk_b, a gap marking what it has
    assert "#chk_b" in asked and "… She chases the birds too! She sleeps a lot." in asked
    assert "Dinah’s our cat" not in asked and "catches mice" not in asked
    # the citable passage holds all it read under that id, for the support checks
    [cited] = more.citable
    assert "Dinah’s our cat" in cited["context_text"] and "sleeps" in cited["context_text"]
    # nothing new under the id: the question alone
    narrower = _state("And?", [{**_payload("#chk_b", CAT), "context_text": "She catches mice."}])
    assert "#chk_b" not in continue_exchange(previous, narrower, 7000).messages[-1].content


def test_unread_sentences_mark_what_they_leave_out():
    assert unread_sentences("A one. B two. C three.", "B two.") == "A one. … C three."
    assert unread_sentences("A one. B two.", "A one.") == "… B two."
    assert unread_sentences("… A one. B two. …", "Z.") == "… A one. B two. …"
    assert unread_sentences("A one. B two.", "B two. A one.") == ""


def test_a_follow_up_starts_afresh_past_the_budget_or_in_another_scope():
    first = _state("Who is Dinah?", [_payload("#chk_b", CAT)])
    previous = _exchange(first)
    assert continue_exchange(previous, _state("And?", [_payload("#chk_a", POOL)]), 100) is None
    other_book = _state("And?", [_payload("#chk_b", CAT)], book_id="b2")
    assert continue_exchange(previous, other_book, 7000) is None
    # the caller narrowed the search to other documents (or a corpus): the earlier passages
    # may lie outside them
    for narrowed in ({"documents": ["d2"]}, {"corpus": "papers"}):
        other_documents = _state("And?", [_payload("#chk_b", CAT)], search_filter=narrowed)
        assert continue_exchange(previous, other_documents, 7000) is None
    unfiltered = _state("And?", [_payload("#chk_b", CAT)], search_filter={})
    assert continue_exchange(previous, unfiltered, 7000) is not None
    assert not can_continue(_state("?", [_payload("#chk_b", CAT)], web_context="results"))
    assert not can_continue(_state("?", [_payload("#chk_b", CAT)], conflicts=[{"first": "x"}]))


def test_the_exchange_log_keeps_the_most_recent_chats():
    log = ExchangeLog(size=2)
    previous = _exchange(_state("Who?", [_payload("#chk_b", CAT)]))
    for chat in ("c1", "c2", "c3"):
        log.remember(chat, previous)
    assert log.last("c1") is None and log.last("c3") is previous
    log.forget("c3")
    assert log.last("c3") is None and log.last("c2") is previous
