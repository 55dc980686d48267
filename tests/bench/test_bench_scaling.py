"""``quire bench retrieval --sizes``, the sets ``quire eval retrieval`` builds, and
``quire bench ingest``'s long PDF: logic on tiny inputs in the test database."""

from __future__ import annotations

import json
import uuid

import pytest

from bench.eval_retrieval_data import load_beir
from bench.eval_retrieval_sets import built_set
from bench.retrieval_scaling import (
    bench_sizes,
    draw_scaling_chart,
    parse_sizes,
    size_label,
    size_spec,
)


def test_sizes_parse_and_label():
    assert parse_sizes("10k,100k,1m") == [10_000, 100_000, 1_000_000]
    assert parse_sizes(" 1M, 250000 ,10k,10k") == [10_000, 250_000, 1_000_000]
    assert [size_label(n) for n in (10_000, 1_000_000, 2_500)] == ["10k", "1m", "2500"]
    for bad in ("ten", "10x", "", "50"):
        with pytest.raises(ValueError):
            parse_sizes(bad)


async def test_each_size_is_its_own_library_timed_on_the_same_questions(services, tmp_path):
    from bench.retrieval_build import drop_corpus

    prefix = f"scaletest-{uuid.uuid4().hex[:6]}"
    sizes = [300, 900]
    try:
        figures = await bench_sizes(
            services, sizes, queries=6, rebuild_index=False, prefix=prefix, pool_size=120, warmup=1
        )
        assert [p.chunks for p in figures.points] == sizes
        for point in figures.points:
            assert point.build.child_chunks == point.chunks
            assert point.search.foreign_hits == 0  # the other size's library is never read
            assert point.search.bm25_memory_postings > 0 and point.bm25_memory_mib > 0
            assert point.rss_mib > 0 and point.index_mb > 0
            assert [f.operation for f in point.search.with_embedding] == [
                "dense",
                "keyword",
                "keyword_sql",
            ]
            embed, dense = point.search.latency("embed"), point.search.latency("dense")
            assert point.search.with_embedding[0].p50_ms >= max(embed.p50_ms, dense.p50_ms)
        small, large = figures.points
        # each size's BM25 copy was loaded on its own: postings grow with the library
        assert large.search.bm25_memory_postings > 2 * small.search.bm25_memory_postings
        assert figures.vectors_in_database >= sum(sizes)
        growth = figures.goals["hybrid_p95_growth"]
        assert growth["value"] == round(figures.p95("hybrid")[1] / figures.p95("hybrid")[0], 2)
        assert growth["met"] == (growth["value"] <= growth["goal"])
        chart = draw_scaling_chart(figures, tmp_path / "sizes.png")
        assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        for size in sizes:
            await drop_corpus(services, size_spec(size, prefix))


@pytest.mark.parametrize("name", ["books", "pydoc"])
def test_sets_built_here_are_beir_folders(name, tmp_path):
    folder = built_set(name, tmp_path)
    dataset = load_beir(folder, "test")
    assert len(dataset.corpus) >= 60 and len(dataset.queries) >= 20
    for qid, relevant in dataset.qrels.items():
        assert qid in dataset.queries and relevant
        assert set(relevant) <= set(dataset.corpus)
    lengths = sorted(len(dataset.document_text(d)) for d in dataset.corpus)
    if name == "books":  # long chapters, questions in words
        assert lengths[len(lengths) // 2] > 5_000
        assert all(max(r.values()) == 2 for r in dataset.qrels.values())
    else:  # one article per known-item query
        assert all(len(r) == 1 for r in dataset.qrels.values())
    again = built_set(name, tmp_path / "again")  # deterministic
    assert (again / "qrels" / "test.tsv").read_text() == (folder / "qrels" / "test.tsv").read_text()
    first = json.loads((folder / "queries.jsonl").read_text().splitlines()[0])
    assert set(first) == {"_id", "text"}


def test_the_long_pdf_has_600_pages(tmp_path):
    from pypdf import PdfReader

    from bench.ingest import LONG_PDF_PAGES, long_pdf

    path = long_pdf(tmp_path)
    assert len(PdfReader(path).pages) == LONG_PDF_PAGES == 600
    assert long_pdf(tmp_path) == path  # written once


async def test_a_bulk_load_builds_the_keyword_indexes_it_dropped_as_they_were(services):
    """The bulk statistics insert drops the keyword tables' indexes and builds them after:
    the same definitions, the primary keys constraints again (checked in a rolled-back
    transaction)."""
    from sqlalchemy import text

    from bench.retrieval_build import _KEYWORD_TABLES, _build_indexes, _drop_indexes

    listing = text(
        "SELECT pg_get_indexdef(i.indexrelid) AS d, c.contype FROM pg_index i "
        "JOIN pg_class t ON t.oid = i.indrelid "
        "LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid "
        "WHERE t.relname = ANY(:t) ORDER BY 1"
    )
    async with services.engine.connect() as conn, conn.begin() as tx:
        before = (await conn.execute(listing, {"t": list(_KEYWORD_TABLES)})).all()
        dropped = await _drop_indexes(conn, _KEYWORD_TABLES)
        assert (await conn.execute(listing, {"t": list(_KEYWORD_TABLES)})).all() == []
        await _build_indexes(conn, dropped)
        after = (await conn.execute(listing, {"t": list(_KEYWORD_TABLES)})).all()
        await tx.rollback()
    assert after == before and sum(row.contype == "p" for row in before) == 2


def test_a_growing_vocabulary_spells_names_and_rare_words_per_topic():
    from bench.retrieval_corpus import book_sentences, in_topic, shared_vocabulary, topic_suffix

    sentences = tuple(book_sentences())
    shared = shared_vocabulary(sentences, 2_000)
    assert len(shared) == 2_000
    # common lower-case words are shared; names are not, however often they occur
    assert {"little", "time", "house"} <= shared
    assert not {"alice", "darcy", "elizabeth", "rabbit"} & shared
    suffixes = [topic_suffix(t) for t in range(2_000)]
    assert suffixes[0] == "" and len(set(suffixes)) == 2_000
    line = "Alice looked at the little Rabbit, and Darcy smiled."
    assert in_topic(line, 0, shared) == line
    spelled = in_topic(line, 27, shared)
    assert spelled.split()[0] == "Alice" + topic_suffix(27)
    assert " little " in spelled and spelled.endswith(".")  # shared words and punctuation kept
    assert in_topic(line, 28, shared) != spelled


async def test_a_growing_library_has_more_words_than_a_books_one(services):
    """Same size, same seed, stored in Postgres: the growing library has more distinct
    words (the respelling itself is the test above), and its figures say how it was made."""
    from sqlalchemy import text

    from bench.retrieval_build import drop_corpus

    prefix = f"vocabtest-{uuid.uuid4().hex[:6]}"
    specs = {
        v: size_spec(600, f"{prefix}-{v}", pool_size=60, vocabulary=v, topic_chunks=200)
        for v in ("books", "growing")
    }
    words = {}
    try:
        figures = {}
        for vocabulary, spec in specs.items():
            figures[vocabulary] = await bench_sizes(
                services,
                [600],
                queries=2,
                rebuild_index=False,
                prefix=f"{prefix}-{vocabulary}",
                pool_size=60,
                warmup=0,
                vocabulary=vocabulary,
                topic_chunks=200,
            )
            async with services.engine.connect() as conn:
                words[vocabulary] = (
                    await conn.execute(
                        text(
                            "SELECT count(DISTINCT w) FROM child_chunks c "
                            "JOIN documents d ON d.id = c.document_id JOIN users u "
                            "ON u.id = d.user_id, regexp_split_to_table(lower(c.text), "
                            "'[^a-z]+') w WHERE u.name = :n"
                        ),
                        {"n": spec.user_names()[0]},
                    )
                ).scalar()
        assert words["growing"] > 1.2 * words["books"]  # two of its three topics respelled
        assert "vocabulary growing" in " ".join(figures["growing"].notes)
    finally:
        for spec in specs.values():
            await drop_corpus(services, spec)
