"""What a prompt's passages spend on labels and ornaments: a label leaves out what the block
before named, and a scene break's ``* * *`` is not shown."""

from __future__ import annotations

import uuid

from agent.retrieval.context import build_context
from agent.retrieval.focus import focus_passages
from tests.support.chunks import retrieved_chunk


def _chunk(text: str, document: uuid.UUID, title: str, chapter: str | None, page=None):
    return retrieved_chunk(
        text, document_id=document, document_title=title, chapter_title=chapter, page=page
    )


def test_a_label_leaves_out_what_the_block_before_named():
    alice, emma = uuid.uuid4(), uuid.uuid4()
    chunks = [
        _chunk("The Rabbit ran past with a watch.", alice, "Alice", "Chapter I"),
        _chunk("The Rabbit checked the watch again.", alice, "Alice", "Chapter I"),
        _chunk("The Queen shouted at the gardeners.", alice, "Alice", "Chapter VIII"),
        _chunk("Emma planned a match for Harriet.", emma, "Emma", "Volume I", page=4),
        _chunk("Harriet admired Mr Elton.", emma, "Emma", None, page=5),
    ]
    built = build_context(chunks, 5000, 400)
    labels = [line for line in built.text.splitlines() if line.startswith("#chk_")]
    assert labels == [
        f"{chunks[0].citation_id} [Alice, Chapter I]",  # the first names its book
        chunks[1].citation_id,  # the same place: no label
        f"{chunks[2].citation_id} [Chapter VIII]",  # the same book: its chapter only
        f"{chunks[3].citation_id} [Emma, Volume I (p. 4)]",  # another book: named again
        f"{chunks[4].citation_id} [(p. 5)]",
    ]
    # the payloads and the list of sources keep the whole label
    assert built.sources[1] == "Alice, Chapter VIII"


def test_scene_breaks_are_left_out_of_focused_passages():
    text = (
        "So she set to work and finished off the cake. * * * * * * * "
        "Curiouser and curiouser, cried Alice. ----- She was so much surprised."
    )
    [focused] = focus_passages("What did Alice cry?", {"a": text}, hits=1, neighbours=1).values()
    assert "*" not in focused and "---" not in focused
    assert "Curiouser and curiouser, cried Alice." in focused


def test_a_names_elision_dashes_stay_in_focused_passages():
    text = (
        "At length our kind friend procured the wished-for direction. They were in ---- "
        "Street. He saw Wickham there. The letter came from Mr. ----, of Meryton. "
        "So it ended. ---- A new day began."
    )
    [focused] = focus_passages("Where were they?", {"a": text}, hits=2, neighbours=5).values()
    assert "They were in ---- Street." in focused  # a name left out, not a rule
    assert "Mr. ----, of Meryton" in focused
    assert "ended. ----" not in focused  # after a sentence's end: a scene break
