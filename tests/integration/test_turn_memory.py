"""Turn memory: earlier turns as "previous discussion", per user, found by meaning and by
keywords (fused by RRF), with same-chat and recency boosts, against the real Postgres and
the real embedder."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import text

from agent.db import turns as db
from agent.db.chats import NewMessage, add_messages, ensure_chat
from agent.memory.previous_discussion import (
    PREVIOUS_DISCUSSION_HEADER,
    PastTurn,
    previous_discussion,
    previous_discussion_block,
    remember_turn,
    turn_text,
)

BREAD_Q = "How do I bake sourdough bread at home?"
BREAD_A = (
    "Feed the starter the night before, mix flour, water and salt, let the dough rise "
    "overnight, then bake it at 230 C in a covered Dutch oven."
)
BREAD_ASK = "What oven temperature should my sourdough loaf bake at?"
RABBIT_Q = "Why does Alice follow the White Rabbit?"
RABBIT_A = "She is curious: the rabbit has a waistcoat and a pocket watch, so she runs after it."


def rrf(services, *ranks: int) -> float:
    """The fused score of a turn at these ranks (one per list it is in), before bonuses."""
    return sum(1 / (services.settings.rrf_k + r) for r in ranks)


async def new_chat(services, user_id) -> uuid.UUID:
    chat_id = uuid.uuid4()
    async with services.engine.begin() as conn:
        await ensure_chat(conn, user_id, chat_id)
    return chat_id


async def stored(services, user_id) -> list:
    async with services.engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT id, chat_id, message_id, question, answer, embedding_model "
                "FROM chat_turn_embeddings WHERE user_id = :u ORDER BY created_at"
            ),
            {"u": user_id},
        )
        return list(rows)


async def age(services, chat_id, days: float) -> None:
    async with services.engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE chat_turn_embeddings SET created_at = now() - make_interval(days => :d) "
                "WHERE chat_id = :c"
            ),
            {"c": chat_id, "d": days},
        )


async def test_related_question_finds_the_turn_and_unrelated_does_not(services, new_user):
    user = await new_user("baker")
    chat = await new_chat(services, user.id)
    await remember_turn(services, user.id, chat, BREAD_Q, BREAD_A)
    await remember_turn(services, user.id, chat, RABBIT_Q, RABBIT_A)
    rows = await stored(services, user.id)
    assert len(rows) == 2 and {r.embedding_model for r in rows} == {services.embeddings.name}

    found = await previous_discussion(services, user.id, uuid.uuid4(), BREAD_ASK)
    assert [t.question for t in found] == [BREAD_Q]
    turn = found[0]
    assert turn.answer == BREAD_A and turn.chat_id == chat and not turn.same_chat
    assert turn.similarity >= 0.35 and turn.keyword_score > 0  # "sourdough", "bake", "oven"
    assert abs(turn.score - rrf(services, 1, 1) * 1.1) < 1e-8  # first in both; recent

    assert (
        await previous_discussion(
            services, user.id, chat, "Who won the football world cup in 2018?"
        )
        == []
    )
    # a stricter threshold drops it from the dense half (before any boost): the keyword
    # half alone still finds it
    strict = await previous_discussion(
        services, user.id, uuid.uuid4(), BREAD_ASK, min_similarity=turn.similarity + 0.01
    )
    assert [t.question for t in strict] == [BREAD_Q]
    assert abs(strict[0].score - rrf(services, 1) * 1.1) < 1e-8


async def test_precomputed_query_vector_gives_the_same_result(services, new_user):
    user = await new_user("vector")
    chat = await new_chat(services, user.id)
    await remember_turn(services, user.id, chat, BREAD_Q, BREAD_A)
    vector = services.embeddings.embedder.embed_query(BREAD_ASK)
    by_text = await previous_discussion(services, user.id, chat, BREAD_ASK)
    by_vector = await previous_discussion(services, user.id, chat, BREAD_ASK, query_vector=vector)
    assert len(by_text) == 1 and [t.score for t in by_vector] == [t.score for t in by_text]
    dense_only = await previous_discussion(services, user.id, chat, "", query_vector=vector)
    assert [t.question for t in dense_only] == [BREAD_Q] and dense_only[0].keyword_score == 0


async def test_same_chat_boost_ranks_this_chats_turn_first(services, new_user):
    user = await new_user("chats")
    here, elsewhere = await new_chat(services, user.id), await new_chat(services, user.id)
    await remember_turn(services, user.id, here, BREAD_Q, BREAD_A)
    await remember_turn(services, user.id, elsewhere, BREAD_Q, BREAD_A)  # newer, same text

    found = await previous_discussion(services, user.id, here, BREAD_ASK)
    assert [t.chat_id for t in found] == [here, elsewhere]
    assert [t.same_chat for t in found] == [True, False]
    assert found[0].similarity == found[1].similarity
    # the newer turn ranks first in both lists; the same-chat bonus lifts the other
    assert abs(found[0].score - rrf(services, 2, 2) * 1.3) < 1e-8
    assert abs(found[1].score - rrf(services, 1, 1) * 1.1) < 1e-8

    flipped = await previous_discussion(services, user.id, elsewhere, BREAD_ASK)
    assert [t.chat_id for t in flipped] == [elsewhere, here]
    no_boost = await previous_discussion(services, user.id, here, BREAD_ASK, same_chat_boost=0)
    assert [t.chat_id for t in no_boost] == [elsewhere, here]  # a tie: the newer first


async def test_recency_boost_changes_the_order(services, new_user):
    user = await new_user("recent")
    asking = await new_chat(services, user.id)
    first, second = await new_chat(services, user.id), await new_chat(services, user.id)
    await remember_turn(services, user.id, first, BREAD_Q, BREAD_A)
    await remember_turn(services, user.id, second, BREAD_Q, BREAD_A)

    await age(services, second, 30)  # the newer turn becomes old: the other one wins
    found = await previous_discussion(services, user.id, asking, BREAD_ASK)
    assert [t.chat_id for t in found] == [first, second]
    assert abs(found[0].score - rrf(services, 1, 1) * 1.1) < 1e-8
    assert abs(found[1].score - rrf(services, 2, 2)) < 1e-8  # old: no bonus

    await age(services, first, 10)
    await age(services, second, 2)
    found = await previous_discussion(services, user.id, asking, BREAD_ASK)
    assert [t.chat_id for t in found] == [second, first]
    # a wider window makes both recent: the same bonus, so the fused order stands
    wide = await previous_discussion(services, user.id, asking, BREAD_ASK, recent_days=14)
    assert [t.chat_id for t in wide] == [second, first]
    assert abs(wide[1].score - rrf(services, 2, 2) * 1.1) < 1e-8

    # the boosts can lift a less similar turn over a more similar one, never over the threshold
    await remember_turn(
        services,
        user.id,
        asking,
        "How hot should the oven be for pizza?",
        "As hot as it goes, around 250 C, with a preheated stone.",
    )
    mixed = await previous_discussion(services, user.id, asking, BREAD_ASK, k=5)
    assert mixed[0].chat_id == asking and mixed[0].similarity < mixed[1].similarity
    assert all(t.similarity >= 0.35 for t in mixed)


async def test_another_user_never_gets_the_turns(services, new_user):
    owner, other = await new_user("owner"), await new_user("other")
    chat = await new_chat(services, owner.id)
    await remember_turn(services, owner.id, chat, BREAD_Q, BREAD_A)

    assert len(await previous_discussion(services, owner.id, chat, BREAD_Q)) == 1
    # the very same question, even naming the owner's chat, finds nothing for someone else
    assert await previous_discussion(services, other.id, chat, BREAD_Q) == []
    assert await previous_discussion(services, other.id, None, BREAD_Q, min_similarity=-1) == []
    # and nobody can store a turn under a chat they do not own
    await remember_turn(services, other.id, chat, BREAD_Q, BREAD_A)
    assert await stored(services, other.id) == []
    assert len(await stored(services, owner.id)) == 1


async def test_forgetting_a_users_turns_leaves_anothers(services, new_user):
    user, other = await new_user("forgets"), await new_user("keeps")
    for who in (user, other):
        await remember_turn(services, who.id, await new_chat(services, who.id), BREAD_Q, BREAD_A)
    async with services.engine.begin() as conn:
        assert await db.forget_turns(conn, user.id) == 1
    assert await previous_discussion(services, user.id, None, BREAD_Q) == []
    assert len(await previous_discussion(services, other.id, None, BREAD_Q)) == 1


async def test_rows_of_another_embedding_model_are_ignored(services, new_user):
    user = await new_user("models")
    chat = await new_chat(services, user.id)
    vector = services.embeddings.embedder.embed_documents([turn_text(BREAD_Q, BREAD_A)])[0]
    async with services.engine.begin() as conn:
        await db.insert_turn(conn, user.id, chat, BREAD_Q, "other model", "other-model", vector)
        # another dimension under the current name (a reconfigured model) must not break search
        await db.insert_turn(
            conn, user.id, chat, BREAD_Q, "wrong size", services.embeddings.name, [0.1, 0.2, 0.3]
        )
    assert await previous_discussion(services, user.id, chat, BREAD_Q) == []

    await remember_turn(services, user.id, chat, BREAD_Q, BREAD_A)
    found = await previous_discussion(services, user.id, chat, BREAD_Q, k=10)
    assert [t.answer for t in found] == [BREAD_A]


async def test_empty_answers_are_not_stored(services, new_user):
    user = await new_user("empty")
    chat = await new_chat(services, user.id)
    await remember_turn(services, user.id, chat, BREAD_Q, "")
    await remember_turn(services, user.id, chat, BREAD_Q, "  \n ")
    await remember_turn(services, user.id, chat, "   ", BREAD_A)
    async with services.engine.connect() as conn:
        assert await db.count_turns(conn, user.id) == 0
    await remember_turn(services, user.id, uuid.uuid4(), BREAD_Q, BREAD_A)  # no such chat
    assert await stored(services, user.id) == []


async def test_turn_keeps_its_message_and_goes_with_its_chat(services, new_user):
    user = await new_user("message")
    chat = await new_chat(services, user.id)
    async with services.engine.begin() as conn:
        _, answer_id = await add_messages(
            conn, user.id, chat, [NewMessage("user", BREAD_Q), NewMessage("assistant", BREAD_A)]
        )
    await remember_turn(services, user.id, chat, BREAD_Q, BREAD_A, message_id=answer_id)
    await remember_turn(services, user.id, chat, RABBIT_Q, RABBIT_A, message_id=uuid.uuid4())
    rows = await stored(services, user.id)
    assert [r.message_id for r in rows] == [answer_id, None]  # an unknown message is dropped

    async with services.engine.begin() as conn:
        await conn.execute(text("DELETE FROM chats WHERE id = :c"), {"c": chat})
    assert await stored(services, user.id) == []


def past(question, answer, *, same_chat=False, day=3) -> PastTurn:
    return PastTurn(
        question=question,
        answer=answer,
        chat_id=uuid.uuid4(),
        created_at=datetime(2025, 1, day, 12, tzinfo=UTC),
        similarity=0.5,
        score=0.7,
        same_chat=same_chat,
    )


def test_block_format():
    assert previous_discussion_block([]) == ""
    block = previous_discussion_block(
        [
            past(BREAD_Q, BREAD_A + " [#chk_1a2b3c4d]", same_chat=True),
            past(RABBIT_Q, RABBIT_A, day=9),
        ]
    )
    lines = block.split("\n")
    assert lines[0] == PREVIOUS_DISCUSSION_HEADER
    assert "do not cite" in lines[0]
    assert lines[1] == f"- (this chat) Q: {BREAD_Q}"
    assert lines[2] == f"  A: {BREAD_A}"  # the old citation id is gone
    assert lines[3] == f"- (another chat, 2025-01-09) Q: {RABBIT_Q}"
    assert lines[4] == f"  A: {RABBIT_A}"
    assert "chk_" not in block


def test_block_fits_its_budget():
    long_answer = " ".join(f"word{i}" for i in range(2000))
    turns = [past(BREAD_Q * 5, long_answer), past(RABBIT_Q, long_answer), past("Q", "short")]
    for budget in (300, 600, 1200, 4000):
        block = previous_discussion_block(turns, max_chars=budget)
        assert len(block) <= budget
        assert block.count("\n- (") == 3 or budget < 500
        assert "…" in block
    assert previous_discussion_block(turns, max_chars=100) == ""  # not even one item fits
    # every turn gets room: a long first answer does not crowd out the others
    block = previous_discussion_block(turns, max_chars=1200)
    assert "A: short" in block and RABBIT_Q in block


NETS_Q = "Who mended the nets in the harbour?"
NETS_A = "Ignatius Fenwright mended every net in the harbour before the storm arrived."
# shares only the rare name with NETS (not its meaning), and only its meaning with BREAD
HYBRID_ASK = "Fenwright? Also, how hot should a homemade loaf get while cooking?"


async def test_hybrid_finds_a_turn_by_a_rare_name_and_another_by_meaning(
    services, new_user, monkeypatch
):
    user, other = await new_user("hybrid"), await new_user("hybrid-other")
    chat, others_chat = await new_chat(services, user.id), await new_chat(services, other.id)
    for q, a in ((NETS_Q, NETS_A), (BREAD_Q, BREAD_A), (RABBIT_Q, RABBIT_A)):
        await remember_turn(services, user.id, chat, q, a)
    # another user's turns that would match both ways
    await remember_turn(services, other.id, others_chat, NETS_Q, NETS_A + " (other user)")
    await remember_turn(services, other.id, others_chat, BREAD_Q, BREAD_A + " (other user)")

    found = {t.question: t for t in await previous_discussion(services, user.id, None, HYBRID_ASK)}
    assert set(found) == {NETS_Q, BREAD_Q}
    by_name, by_meaning = found[NETS_Q], found[BREAD_Q]
    assert by_name.keyword_score > 0 and by_name.similarity < 0.35  # keywords only
    assert by_meaning.keyword_score == 0 and by_meaning.similarity >= 0.35  # meaning only
    assert all("other user" not in t.answer for t in found.values())
    assert all(t.chat_id == chat for t in found.values())

    # the other user gets their own turns, never these
    theirs = await previous_discussion(services, other.id, None, HYBRID_ASK, k=10)
    assert {t.chat_id for t in theirs} == {others_chat} and len(theirs) == 2
    assert (
        await previous_discussion(services, (await new_user("nobody")).id, None, HYBRID_ASK) == []
    )

    # the embedder down: the keyword half still finds the rare name
    def broken(self, *args, **kwargs):
        raise RuntimeError("the embedder is down")

    monkeypatch.setattr(type(services.embeddings.embedder), "embed_query", broken)
    keywords_only = await previous_discussion(services, user.id, None, HYBRID_ASK)
    assert [t.question for t in keywords_only] == [NETS_Q]
    assert keywords_only[0].similarity == 0
