"""Okapi BM25 keyword search in SQL, over the postings tables (``keyword_postings``,
``keyword_terms``, ``keyword_owner_terms``): the fallback to the in-memory copy
(:mod:`agent.retrieval.keyword_indexes`) and the scorer of narrowed scopes.

Every query is confined to the documents a :class:`SearchScope` makes visible.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from agent.db.chunks import ScoredChunkId
from agent.db.driver import Connection, fetch_rows
from agent.db.scope import SearchScope

# Okapi BM25 in SQL. Corpus statistics (N, avgdl, df) are summed over the visible
# documents only, so scores are true BM25 for exactly what the user may read.
_BM25_STATS = """
stats AS (
    SELECT coalesce(sum(v.keyword_chunks), 0)::float8 AS n,
           greatest(coalesce(sum(v.keyword_tokens), 0)::float8
                    / greatest(coalesce(sum(v.keyword_chunks), 0), 1), 1) AS avgdl
    FROM visible v),
q AS (SELECT DISTINCT u.lexeme AS term
       FROM unnest(to_tsvector('english', quire_keyword_text(:query))) u),
shared AS MATERIALIZED (SELECT v.id FROM visible v WHERE v.user_id <> :scope_user),
"""

# IDF of each query term, its document frequency summed over every visible document
# (narrowed scopes: a corpus, type, time window or named documents).
_IDF_PER_DOCUMENT = """
idf AS (
    SELECT q.term, coalesce(sum(t.df), 0) AS df,
           ln(1 + (s.n - coalesce(sum(t.df), 0) + 0.5) / (coalesce(sum(t.df), 0) + 0.5)) AS idf
    FROM q CROSS JOIN stats s
    LEFT JOIN keyword_terms t
           ON t.term = q.term AND t.document_id IN (SELECT id FROM visible)
    GROUP BY q.term, s.n)
"""

# The same IDF for a whole library: the owner's count (one row a term, migration 0012) plus
# the documents shared with them, probed one by one (OFFSET 0 keeps it a probe: few shares).
_IDF_PER_OWNER = """
idf AS (
    SELECT q.term, f.df, ln(1 + (s.n - f.df + 0.5) / (f.df + 0.5)) AS idf
    FROM q CROSS JOIN stats s CROSS JOIN LATERAL (
        SELECT coalesce((SELECT o.df FROM keyword_owner_terms o
                         WHERE o.user_id = :scope_user AND o.term = q.term), 0)
             + coalesce((SELECT sum(t.df) FROM shared sd CROSS JOIN LATERAL (
                             SELECT t.df FROM keyword_terms t
                             WHERE t.term = q.term AND t.document_id = sd.id OFFSET 0) t), 0)
             AS df) f)
"""


def _bm25_term(p: str) -> str:
    """One posting's BM25 contribution (``i`` the term's idf row, ``s`` the stats row)."""
    return (
        f"i.idf * {p}.tf * (:k1 + 1) / ({p}.tf + :k1 * (1 - :b + :b * {p}.chunk_tokens / s.avgdl))"
    )


# Narrow scopes (named documents): every posting of the query terms in those documents,
# read index-only from the (document_id, term, chunk_id) key, scored exactly.
_BM25_EXACT_SQL = f"""
SELECT p.chunk_id AS id, sum({_bm25_term("p")}) AS score
FROM idf i CROSS JOIN stats s
JOIN keyword_postings p ON p.term = i.term AND p.document_id IN (SELECT id FROM visible)
GROUP BY p.chunk_id
ORDER BY score DESC, p.chunk_id
LIMIT :k
"""

# Whole libraries: only the ``per_term`` highest-impact postings of each term are read
# (index-only, from (user_id, term, impact DESC) for the user's own documents; from the
# key for documents shared with them), summed into a partial score; the ``rescore`` best
# candidates then get their exact score from all their postings. A chunk can only be
# missed if it is outside every term's top postings, i.e. weak on every term.
# ``{own_filter}`` narrows the own-documents scan when the scope filters by corpus, type or
# time; without one the scan walks the index in impact order and stops after ``per_term``
# rows (a filter there makes Postgres read the term's whole list first). Each candidate's
# document is then checked against the scope's conditions by its key.
_BM25_IMPACT_SQL = """
cand AS (
    SELECT c.document_id, c.chunk_id, sum(c.contribution) AS partial
    FROM idf i CROSS JOIN stats s CROSS JOIN LATERAL (
        (SELECT p.document_id, p.chunk_id, {term_p} AS contribution
         FROM keyword_postings p
         WHERE p.user_id = :scope_user AND p.term = i.term {own_filter}
         ORDER BY p.impact DESC LIMIT CASE WHEN i.df <= :full_list THEN NULL ELSE :per_term END)
        UNION ALL
        (SELECT p.document_id, p.chunk_id, {term_p} AS contribution
         FROM shared sd CROSS JOIN LATERAL (
             SELECT * FROM keyword_postings p
             WHERE p.document_id = sd.id AND p.term = i.term OFFSET 0) p
         ORDER BY p.impact DESC LIMIT CASE WHEN i.df <= :full_list THEN NULL ELSE :per_term END)
    ) c
    GROUP BY c.document_id, c.chunk_id
    ORDER BY partial DESC
    LIMIT :rescore)
SELECT c.chunk_id AS id, sum({term_p}) AS score
FROM cand c JOIN documents d ON d.id = c.document_id
CROSS JOIN idf i CROSS JOIN stats s
CROSS JOIN LATERAL (
    -- OFFSET 0 keeps this a per-candidate key probe instead of a join over whole lists
    SELECT p.tf, p.chunk_tokens FROM keyword_postings p
    WHERE p.document_id = c.document_id AND p.term = i.term AND p.chunk_id = c.chunk_id
    OFFSET 0) p
-- each candidate's document is checked by its key (a join against the listed visible set
-- was planned as a nested loop over it: 250 x 10,000 comparisons on a 1M-chunk library)
WHERE {visible_document}
GROUP BY c.chunk_id
ORDER BY score DESC, c.chunk_id
LIMIT :k
"""


# Up to this many named documents are scored over all their postings; more are treated as
# a library narrowed by a filter.
_EXACT_MAX_DOCUMENTS = 20


@dataclass(frozen=True)
class BM25Params:
    """Okapi BM25 constants and how much of each posting list a library-wide search reads."""

    k1: float = 1.2
    b: float = 0.75
    full_list: int = 20_000
    top_postings: int = 1_000
    rescore: int = 250

    @classmethod
    def from_settings(cls, settings) -> BM25Params:
        """The parameters configured in :class:`agent.config.Settings`."""
        return cls(
            settings.bm25_k1,
            settings.bm25_b,
            settings.bm25_full_list_postings,
            settings.bm25_top_postings,
            settings.bm25_rescore,
        )


def _with_idf(scope: SearchScope) -> tuple[str, dict]:
    """The ``WITH`` clauses every BM25 query here starts with: the visible documents with
    their BM25 totals, listed once (no scan of other users'), the corpus statistics and each
    query term's IDF over exactly those documents; with their bind parameters (``:query``
    aside)."""
    visible, params = scope.listed_documents_sql(
        "d.id, d.user_id, d.keyword_chunks, d.keyword_tokens"
    )
    idf = _IDF_PER_DOCUMENT if scope.narrowed else _IDF_PER_OWNER
    return f"WITH visible AS ({visible}), {_BM25_STATS} {idf}", params


async def keyword_search(
    conn: AsyncConnection,
    scope: SearchScope,
    query: str,
    k: int,
    bm25: BM25Params | None = None,
) -> list[ScoredChunkId]:
    """Okapi BM25 over the visible documents' child chunks, best first.

    Terms are Postgres ``english`` lexemes (stemmed, stop words removed) and are ORed.
    IDF and average length are those of exactly the visible documents: the owner's term
    counts (``keyword_owner_terms``) plus shared documents' ``keyword_terms`` for a whole
    library, ``keyword_terms`` summed per document for a narrowed one. A scope naming its
    documents is scored over all their postings; a whole library reads each term's
    highest-impact postings first and rescores the best candidates exactly, so cost no
    longer grows with how common a term is.
    """
    bm25 = bm25 or BM25Params()
    head, params = _with_idf(scope)
    params = {**params, "query": query, "k": k, "k1": bm25.k1, "b": bm25.b}
    exhaustive = scope.document_ids is not None and len(scope.document_ids) <= _EXACT_MAX_DOCUMENTS
    narrowed = scope.narrowed
    if exhaustive:
        sql = f"{head} {_BM25_EXACT_SQL}"
    else:
        # its bind parameters are the listing's (both come from the scope's filters)
        visible_document, _ = scope.document_filter_sql()
        impact = _BM25_IMPACT_SQL.format(
            term_p=_bm25_term("p"),
            own_filter="AND p.document_id IN (SELECT id FROM visible)" if narrowed else "",
            visible_document=visible_document,
        )
        sql = f"{head}, {impact}"
        params |= {
            "full_list": bm25.full_list,
            "per_term": bm25.top_postings,
            "rescore": max(5 * k, bm25.rescore),
        }
    # Unfiltered, tens of thousands of postings are grouped by chunk and the planner, unable
    # to estimate the per-term LIMITs, would sort them (~2x slower than hashing). Not with a
    # filter: there it would then check each posting against a list of the visible documents
    # (measured 10x slower on SciFact) instead of hashing them.
    planner = {"plan_cache_mode": "force_custom_plan"}
    if not exhaustive and not narrowed:
        planner["enable_sort"] = "off"
    # Custom plans only: psycopg prepares a statement run five times and Postgres may then
    # plan it once for any parameters, blind to how common the terms are and how many
    # documents are visible (26 -> 38 ms measured on the 100k-chunk benchmark).
    await conn.execute(
        text(
            "SELECT set_config(s.name, s.value, true) "
            "FROM unnest(CAST(:names AS text[]), CAST(:values AS text[])) s(name, value)"
        ),
        {"names": list(planner), "values": list(planner.values())},
    )
    rows = await conn.execute(text(sql), params)
    hits = [ScoredChunkId(r.id, float(r.score)) for r in rows]
    # the caller's later queries in this transaction plan as usual
    await conn.execute(
        text("SELECT set_config(name, reset_val, true) FROM pg_settings WHERE name = ANY(:n)"),
        {"n": list(planner)},
    )
    return hits


async def term_shares(
    conn: Connection, scope: SearchScope, query: str, chunks: list[tuple[UUID, UUID]]
) -> dict[UUID, float]:
    """The share of ``query``'s IDF weight that each of ``chunks`` (``(document id, chunk
    id)`` pairs) holds: the summed IDF of the query terms a chunk contains over that of all
    the query terms, in the visible documents. A term no visible chunk holds weighs the
    most (its document frequency is 0), so a chunk sharing the common words of a question
    about something absent scores low."""
    if not chunks:
        return {}
    head, params = _with_idf(scope)
    sql = f"""{head},
    total AS (SELECT nullif(sum(idf), 0) AS weight FROM idf)
    SELECT c.chunk_id AS id, sum(i.idf) / max(t.weight) AS share
    FROM unnest(CAST(:docs AS uuid[]), CAST(:ids AS uuid[])) AS c(document_id, chunk_id)
    CROSS JOIN idf i CROSS JOIN total t
    JOIN keyword_postings p
      ON p.document_id = c.document_id AND p.term = i.term AND p.chunk_id = c.chunk_id
    WHERE c.document_id IN (SELECT id FROM visible)
    GROUP BY c.chunk_id"""
    params = {
        **params,
        "query": query,
        "docs": [d for d, _ in chunks],
        "ids": [c for _, c in chunks],
    }
    rows = await fetch_rows(conn, sql, params)
    return {cid: float(share) for cid, share in rows if share is not None}


async def question_words_known(
    conn: Connection, scope: SearchScope, query: str, names: list[str]
) -> tuple[float, list[str]]:
    """How much of ``query`` the visible documents know: the share of its IDF weight held
    by terms some visible chunk contains; and those of ``names`` (the question's names,
    figures and acronyms) with a term none of them holds."""
    head, params = _with_idf(scope)
    sql = f"""{head},
    named AS (SELECT n.name, u.lexeme AS term FROM unnest(CAST(:names AS text[])) n(name)
              CROSS JOIN LATERAL unnest(to_tsvector('english', quire_keyword_text(n.name))) u)
    SELECT (SELECT coalesce(sum(idf) FILTER (WHERE df > 0) / nullif(sum(idf), 0), 0) FROM idf),
           coalesce((SELECT array_agg(DISTINCT nm.name ORDER BY nm.name) FROM named nm
                     LEFT JOIN idf i ON i.term = nm.term WHERE coalesce(i.df, 0) = 0), '{{}}')"""
    rows = await fetch_rows(conn, sql, {**params, "query": query, "names": names})
    share, unknown = rows[0]
    return float(share or 0.0), list(unknown)
