"""BM25 postings: one row per (term, chunk) with its term frequency and the chunk's length.

Scoring reads only the postings of the query's terms instead of unpacking the tsvector of
every matching chunk (measured on 100k chunks: p50 551 ms before). Backfilled from the
stored tsvectors.

Revision ID: 0005
Revises: 0004
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE keyword_postings (
    term          text NOT NULL,
    document_id   uuid NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    chunk_id      uuid NOT NULL,   -- chunks only ever go with their document
    tf            integer NOT NULL,
    chunk_tokens  integer NOT NULL,
    PRIMARY KEY (term, document_id, chunk_id)
);
CREATE INDEX keyword_postings_document_idx ON keyword_postings(document_id);
INSERT INTO keyword_postings (term, document_id, chunk_id, tf, chunk_tokens)
SELECT u.lexeme, c.document_id, c.id, coalesce(array_length(u.positions, 1), 1), c.token_count
FROM child_chunks c, unnest(c.tsv) u;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS keyword_postings")
