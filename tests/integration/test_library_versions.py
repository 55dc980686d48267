"""The library fingerprint (migration 0014's versions): it changes with every write a reader
can see, and only with those, on real Postgres."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from agent.db.postings import library_state, visible_documents
from agent.db.scope import SearchScope
from agent.ingest.pipeline import ingest_bytes
from agent.library.documents import delete_user_document
from agent.library.sharing import revoke_share, share_document


async def _fingerprint(services, scope: SearchScope) -> str:
    async with services.engine.connect() as conn:
        state = await library_state(conn, scope)
        listed = await visible_documents(conn, scope)
    assert state.fingerprint == listed.fingerprint  # the two reads name a set alike
    return state.fingerprint


async def _ingest(services, user, body: str):
    return await ingest_bytes(services, user.id, f"{body} {uuid.uuid4().hex}".encode(), "n.txt")


async def test_own_writes_change_the_fingerprint_and_others_do_not(services, new_user):
    me, stranger = await new_user("lv-me"), await new_user("lv-stranger")
    mine = SearchScope(user_id=me.id)
    empty = await _fingerprint(services, mine)
    first = await _ingest(services, me, "The lighthouse keeper polishes the lamp.")
    one = await _fingerprint(services, mine)
    assert one != empty
    assert await _fingerprint(services, mine) == one  # reading changes nothing

    await _ingest(services, stranger, "Another library entirely.")
    assert await _fingerprint(services, mine) == one

    # a write no search depends on (the summary) leaves it alone
    async with services.engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE documents SET global_summary = 'x', summary_status = 'done' WHERE id = :d"
            ),
            {"d": first.document_id},
        )
    assert await _fingerprint(services, mine) == one

    await _ingest(services, me, "A second note about the harbour.")
    two = await _fingerprint(services, mine)
    assert len({empty, one, two}) == 3
    assert await delete_user_document(services, me.id, first.document_id)
    assert await _fingerprint(services, mine) not in {empty, one, two}


async def test_narrowed_scopes_have_their_own_fingerprints(services, new_user):
    me = await new_user("lv-narrow")
    doc = await _ingest(services, me, "The lighthouse keeper polishes the lamp.")
    everything = await _fingerprint(services, SearchScope(user_id=me.id))
    named = await _fingerprint(services, SearchScope(me.id, (doc.document_id,)))
    other_corpus = await _fingerprint(services, SearchScope(user_id=me.id, corpus="other"))
    own_only = await _fingerprint(services, SearchScope(user_id=me.id, include_shared=False))
    assert len({everything, named, other_corpus, own_only}) == 4


async def test_time_bounded_scopes_follow_what_they_list(services, new_user):
    """A rolling window lists fewer documents as time passes with no write: its fingerprint
    is the digest of what it lists, the same for two windows that list the same documents."""
    me = await new_user("lv-window")
    await _ingest(services, me, "The lighthouse keeper polishes the lamp.")
    now = datetime.now(UTC)
    day = await _fingerprint(services, SearchScope(user_id=me.id, created_after=now - timedelta(1)))
    week = await _fingerprint(
        services, SearchScope(user_id=me.id, created_after=now - timedelta(7))
    )
    future = await _fingerprint(
        services, SearchScope(user_id=me.id, created_after=now + timedelta(1))
    )
    assert day == week != future


async def test_shares_and_the_owners_writes_change_the_grantees_fingerprint(services, new_user):
    owner, reader = await new_user("lv-owner"), await new_user("lv-reader")
    shared = await _ingest(services, owner, "The lighthouse keeper polishes the lamp.")
    theirs = SearchScope(user_id=reader.id)
    before = await _fingerprint(services, theirs)

    await share_document(services, owner, str(shared.document_id), reader.name)
    granted = await _fingerprint(services, theirs)
    assert granted != before
    async with services.engine.connect() as conn:
        assert [d.id for d in (await visible_documents(conn, theirs)).documents] == [
            str(shared.document_id)
        ]

    await _ingest(services, owner, "A note the owner keeps to themself.")  # not shared
    assert await _fingerprint(services, theirs) == granted

    async with services.engine.begin() as conn:  # the owner re-indexes the shared document
        await conn.execute(
            text("UPDATE documents SET updated_at = now() WHERE id = :d"),
            {"d": shared.document_id},
        )
    reindexed = await _fingerprint(services, theirs)
    assert reindexed != granted

    await revoke_share(services, owner.id, str(shared.document_id), reader.name)
    revoked = await _fingerprint(services, theirs)
    assert revoked not in {granted, reindexed}

    await share_document(services, owner, str(shared.document_id), reader.name)
    again = await _fingerprint(services, theirs)
    assert await delete_user_document(services, owner.id, shared.document_id)
    assert await _fingerprint(services, theirs) not in {again, revoked}


async def test_a_user_with_documents_can_still_be_deleted(services, new_user):
    """The deferred triggers run for the cascade's rows at commit; with no foreign key on the
    versions, deleting the user still commits."""
    me = await new_user("lv-gone")
    await _ingest(services, me, "The lighthouse keeper polishes the lamp.")
    async with services.engine.begin() as conn:
        await conn.execute(text("DELETE FROM users WHERE id = :u"), {"u": me.id})
    async with services.engine.connect() as conn:
        left = await conn.execute(
            text("SELECT count(*) FROM documents WHERE user_id = :u"), {"u": me.id}
        )
        assert left.scalar() == 0


async def test_each_owner_s_ready_chunks_are_counted(services, new_user):
    me = await new_user("lv-chunks")

    async def kept_and_counted() -> tuple[int, int]:
        async with services.engine.connect() as conn:
            kept = await conn.execute(
                text("SELECT chunks FROM library_versions WHERE user_id = :u"), {"u": me.id}
            )
            counted = await conn.execute(
                text(
                    "SELECT count(*) FROM child_chunks c JOIN documents d ON d.id = c.document_id "
                    "WHERE d.user_id = :u AND d.status = 'ready'"
                ),
                {"u": me.id},
            )
            return int(kept.scalar() or 0), int(counted.scalar())

    first = await _ingest(services, me, "The lighthouse keeper polishes the lamp. " * 60)
    await _ingest(services, me, "A second note about the harbour.")
    kept, counted = await kept_and_counted()
    assert kept == counted > 1
    async with services.engine.begin() as conn:  # a document leaving "ready" stops counting
        await conn.execute(
            text("UPDATE documents SET status = 'failed' WHERE id = :d"), {"d": first.document_id}
        )
    assert (await kept_and_counted())[0] == (await kept_and_counted())[1] < counted
    async with services.engine.begin() as conn:
        await conn.execute(
            text("UPDATE documents SET status = 'ready' WHERE id = :d"), {"d": first.document_id}
        )
    assert await delete_user_document(services, me.id, first.document_id)
    kept, counted_after = await kept_and_counted()
    assert kept == counted_after < counted
