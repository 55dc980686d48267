"""``quire bench retrieval`` logic on a tiny corpus in the test database (its own users)."""

from __future__ import annotations

import uuid

from sqlalchemy import text


async def test_bench_retrieval_small_corpus(services):
    from agent.db.documents import _take_back_owner_terms, finish_document
    from bench.retrieval import (
        OPERATIONS,
        CorpusSpec,
        bench_retrieval,
        drop_corpus,
        ensure_corpus,
    )

    spec = CorpusSpec(
        target_chunks=2000,
        other_chunks=200,
        pool_size=200,
        user_prefix=f"benchtest-{uuid.uuid4().hex[:6]}",
    )
    try:
        figures = await bench_retrieval(services, spec, queries=20, warmup=2, crowd=2000)

        assert figures.queries == 20
        assert [f.operation for f in figures.latencies] == list(OPERATIONS)
        for f in figures.latencies:
            assert 0 < f.p50_ms <= f.p95_ms <= f.max_ms
        assert figures.hybrid_over_raw_p95 > 0 and figures.search_over_raw_p95 > 0
        raw, embed = figures.latency("raw"), figures.latency("embed")
        # embedding + raw of each question: never below either part's median
        assert figures.latency("raw_question").p50_ms >= max(raw.p50_ms, embed.p50_ms)
        assert figures.hybrid_over_raw_question_p95 > 0
        # the gate: given the same vector, hybrid over a raw query as deep as its dense side
        deep = figures.latency("hybrid_search").p95_ms / figures.latency("raw_candidates").p95_ms
        assert figures.search_over_raw_candidates_p95 == round(deep, 2)
        ratio = figures.search_over_raw_candidates_p95
        assert figures.meets_ratio_target == (ratio <= figures.ratio_target)
        assert figures.bm25_memory_postings > 0  # the in-memory BM25 copy was loaded
        assert figures.foreign_hits == 0  # every hit is the target user's own
        assert figures.short_results == 0
        assert figures.hybrid_timeouts == 0
        assert {"embed", "dense", "keyword", "retrieve"} <= set(figures.hybrid_stages_p50_ms)
        assert figures.uses_hnsw == {"raw": True, "dense": True}
        assert set(figures.crowded_reads_p50_ms) == {"state", "dense", "keyword_sql"}
        for timed in figures.crowded_reads_p50_ms.values():
            assert timed["as is"] > 0 and timed["crowded"] > 0
        assert "2000 more documents" in figures.crowded_summary()
        async with services.engine.connect() as conn:  # the crowd was never committed
            crowd = await conn.execute(text("SELECT count(*) FROM documents WHERE title = 'crowd'"))
            assert crowd.scalar() == 0
            # nor left in the planner's row count (ANALYZE writes it outside transactions)
            counted = await conn.execute(
                text(
                    "SELECT reltuples, (SELECT count(*) FROM documents) FROM pg_class "
                    "WHERE relname = 'documents'"
                )
            )
            estimated, rows = counted.one()
            assert estimated == rows
        assert figures.build.child_chunks == 2000 + 9 * 200
        assert figures.build.documents == 20 + 9 * 2
        assert figures.build.parent_chunks == (2000 + 9 * 200) // 5
        assert not figures.build.reused

        async with services.engine.connect() as conn:
            rows = (
                await conn.execute(
                    text(
                        "SELECT u.name, count(c.id) AS chunks FROM users u "
                        "JOIN documents d ON d.user_id = u.id "
                        "JOIN child_chunks c ON c.document_id = d.id "
                        "WHERE u.name LIKE :p GROUP BY u.name"
                    ),
                    {"p": f"{spec.user_prefix}-%"},
                )
            ).all()
        assert sorted(r.chunks for r in rows) == [200] * 9 + [2000]

        # the set-based BM25 statistics equal ingestion's, document by document (recounted
        # in a transaction that is rolled back)
        stats_sql = text(
            "SELECT d.keyword_chunks, d.keyword_tokens, "
            "(SELECT array_agg(t.term || ':' || t.df ORDER BY t.term) FROM keyword_terms t "
            "WHERE t.document_id = d.id) AS terms FROM documents d WHERE d.id = :d"
        )
        async with services.engine.connect() as conn:
            recount = await conn.begin()
            doc = (
                await conn.execute(
                    text(
                        "SELECT d.id FROM documents d JOIN users u ON u.id = d.user_id "
                        "WHERE u.name = :n LIMIT 1"
                    ),
                    {"n": spec.user_names()[0]},
                )
            ).scalar()
            before = (await conn.execute(stats_sql, {"d": doc})).one()
            await _take_back_owner_terms(conn, doc)
            await conn.execute(text("DELETE FROM keyword_terms WHERE document_id = :d"), {"d": doc})
            await conn.execute(
                text("UPDATE documents SET keyword_chunks = 0, keyword_tokens = 0 WHERE id = :d"),
                {"d": doc},
            )
            await finish_document(conn, doc)
            after = (await conn.execute(stats_sql, {"d": doc})).one()
            await recount.rollback()
        assert before.keyword_chunks == 100 and before == after

        again = await ensure_corpus(services, spec)
        assert again.reused and again.child_chunks == figures.build.child_chunks
    finally:
        await drop_corpus(services, spec)
