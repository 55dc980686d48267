"""User corrections: per-user storage, ranking for a question, book scope, prompt block."""

from __future__ import annotations

import uuid

import pytest

from agent.db.chats import NewMessage, add_messages, ensure_chat
from agent.db.documents import NewDocument, insert_document
from agent.memory.corrections import (
    CorrectionRow,
    DocumentNotVisible,
    NotYourMessage,
    corrections_prompt,
    delete_correction,
    list_corrections,
    relevant_corrections,
    submit_correction,
)

CAT_QUESTION = "What is left when the Cheshire Cat vanishes?"
CAT_FIX = "Only the Cheshire Cat's grin stays behind when it vanishes, not its tail."


async def make_book(services, user_id, title: str) -> uuid.UUID:
    doc_id = uuid.uuid4()
    async with services.engine.begin() as conn:
        await insert_document(
            conn,
            NewDocument(
                id=doc_id,
                user_id=user_id,
                title=title,
                file_type="txt",
                doc_type="book",
                content_hash=uuid.uuid4().hex,
                embedding_model=services.embeddings.name,
                char_count=0,
            ),
            [],
            [],
        )
    return doc_id


async def make_exchange(services, user_id, question: str, answer: str) -> list[uuid.UUID]:
    chat_id = uuid.uuid4()
    async with services.engine.begin() as conn:
        await ensure_chat(conn, user_id, chat_id)
        return await add_messages(
            conn,
            user_id,
            chat_id,
            [NewMessage("user", question), NewMessage("assistant", answer)],
        )


async def test_correction_is_used_for_its_owner_only(services, new_user):
    alice, bob = await new_user("alice"), await new_user("bob")
    row = await submit_correction(services, alice.id, CAT_FIX, question=CAT_QUESTION)
    assert isinstance(row, CorrectionRow) and row.user_id == alice.id

    found = await relevant_corrections(
        services, alice.id, "What remains after the Cheshire Cat disappears?"
    )
    assert [r.id for r in found] == [row.id]
    assert found[0].score is not None and found[0].score >= 0.2

    assert await relevant_corrections(services, bob.id, CAT_QUESTION) == []
    assert await list_corrections(services, bob.id) == []
    assert [r.id for r in await list_corrections(services, alice.id)] == [row.id]


async def test_unrelated_questions_get_no_correction(services, new_user):
    user = await new_user()
    await submit_correction(services, user.id, CAT_FIX, question=CAT_QUESTION)
    assert await relevant_corrections(services, user.id, "How do I bake sourdough bread?") == []


async def test_book_scope(services, new_user):
    user, other = await new_user("reader"), await new_user("other")
    alice_book = await make_book(services, user.id, "Alice in Wonderland")
    other_book = await make_book(services, user.id, "Through the Looking-Glass")
    on_alice = await submit_correction(
        services, user.id, CAT_FIX, question=CAT_QUESTION, document_id=alice_book
    )
    on_other = await submit_correction(
        services, user.id, CAT_FIX, question=CAT_QUESTION, document_id=other_book
    )
    everywhere = await submit_correction(
        services, user.id, "The Cheshire Cat lives in the Duchess's kitchen."
    )
    question = "What happens when the Cheshire Cat vanishes?"

    in_alice = await relevant_corrections(services, user.id, question, document_id=alice_book)
    assert {r.id for r in in_alice} == {on_alice.id, everywhere.id}
    assert in_alice[0].id == on_alice.id  # same text as on_other, plus the same-book bonus

    in_other = await relevant_corrections(services, user.id, question, document_id=other_book)
    assert {r.id for r in in_other} == {on_other.id, everywhere.id}

    anywhere = await relevant_corrections(services, user.id, question)
    assert {r.id for r in anywhere} == {on_alice.id, on_other.id, everywhere.id}

    with pytest.raises(DocumentNotVisible):
        await submit_correction(services, other.id, CAT_FIX, document_id=alice_book)
    with pytest.raises(PermissionError):
        await submit_correction(services, other.id, CAT_FIX, document_id=uuid.uuid4())


async def test_top_three_best_first(services, new_user):
    user = await new_user()
    texts = {
        "grin": ("What stays when the Cheshire Cat vanishes?", CAT_FIX),
        "cat": ("Who is the Cheshire Cat?", "The Cheshire Cat belongs to the Duchess."),
        "tea": ("Who hosts the tea party?", "The Mad Hatter hosts the tea party, not Alice."),
        "queen": ("What does the Queen shout?", "The Queen of Hearts shouts 'Off with his head!'"),
        "bread": ("How long do I proof dough?", "Proof sourdough for four hours at 24 degrees."),
    }
    ids = {}
    for key, (question, fix) in texts.items():
        ids[key] = (await submit_correction(services, user.id, fix, question=question)).id

    found = await relevant_corrections(
        services, user.id, "Does the Cheshire Cat's grin stay when the cat vanishes?"
    )
    assert len(found) == 3
    scores = [r.score for r in found]
    assert scores == sorted(scores, reverse=True)
    assert found[0].id == ids["grin"]
    assert ids["bread"] not in {r.id for r in found}

    assert len(await relevant_corrections(services, user.id, "Cheshire Cat", limit=1)) == 1
    assert await relevant_corrections(services, user.id, "Cheshire Cat", limit=0) == []


async def test_delete_only_by_owner(services, new_user):
    owner, intruder = await new_user("owner"), await new_user("intruder")
    row = await submit_correction(services, owner.id, CAT_FIX, question=CAT_QUESTION)
    assert await relevant_corrections(services, owner.id, CAT_QUESTION)  # caches its vector

    assert await delete_correction(services, intruder.id, row.id) is False
    assert [r.id for r in await list_corrections(services, owner.id)] == [row.id]

    assert await delete_correction(services, owner.id, row.id) is True
    assert await list_corrections(services, owner.id) == []
    assert await relevant_corrections(services, owner.id, CAT_QUESTION) == []
    assert await delete_correction(services, owner.id, row.id) is False


async def test_correction_of_a_message(services, new_user):
    owner, intruder = await new_user("owner"), await new_user("intruder")
    question_id, answer_id = await make_exchange(
        services, owner.id, CAT_QUESTION, "Its tail stays behind. #chk_0123abcd"
    )

    with pytest.raises(NotYourMessage):
        await submit_correction(services, intruder.id, CAT_FIX, chat_message_id=answer_id)
    with pytest.raises(NotYourMessage):
        await submit_correction(services, owner.id, CAT_FIX, chat_message_id=uuid.uuid4())
    assert await list_corrections(services, intruder.id) == []

    row = await submit_correction(services, owner.id, CAT_FIX, chat_message_id=answer_id)
    assert row.chat_message_id == answer_id
    assert row.question == CAT_QUESTION
    assert row.wrong_answer.startswith("Its tail stays behind.")

    explicit = await submit_correction(
        services, owner.id, CAT_FIX, chat_message_id=question_id, wrong_answer="x"
    )
    assert explicit.question == CAT_QUESTION and explicit.wrong_answer == "x"


async def test_correction_text_is_checked(services, new_user):
    user = await new_user()
    with pytest.raises(ValueError):
        await submit_correction(services, user.id, "   ")
    with pytest.raises(ValueError):
        await submit_correction(services, user.id, "x" * 5000)


def test_corrections_prompt():
    assert corrections_prompt([]) == ""
    row = CorrectionRow(
        id=uuid.uuid4(),
        user_id=uuid.uuid4(),
        document_id=None,
        chat_message_id=None,
        question=CAT_QUESTION,
        wrong_answer="its tail",
        correction="Only the  grin\nstays.",
        created_at=None,
    )
    block = corrections_prompt([row])
    assert block.startswith("The user has corrected earlier answers; follow these corrections")
    assert "- Only the grin stays." in block
    assert CAT_QUESTION in block
    assert "its tail" not in block
