"""BM25 postings ordered by impact, per owner, with covering indexes.

Summing every posting of a common term (tens of thousands of rows on a 100k-chunk
library, each a heap fetch) made keyword search cost 380 ms p50. Each posting now carries
its owner and an *impact* (the BM25 term-frequency factor at a reference chunk length), so
a search reads only the top postings of each query term from
``(user_id, term, impact DESC)`` with an index-only scan and rescores the best candidates
exactly. The primary key becomes ``(document_id, term, chunk_id)`` carrying ``tf`` and
``chunk_tokens``: it serves deletes, narrow (single-book) scopes, shared documents and the
exact rescoring, all index-only. ``keyword_terms`` carries ``df`` in its key the same way.

Revision ID: 0006
Revises: 0005
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# Keep in step with agent.db.documents.POSTING_IMPACT_SQL (BM25 k1=1.2, b=0.75, reference
# length 60 tokens); it only orders candidates, final scores are exact.
UPGRADE = r"""
CREATE TABLE keyword_postings_new (
    user_id       uuid NOT NULL,
    term          text NOT NULL,
    document_id   uuid NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    chunk_id      uuid NOT NULL,
    tf            integer NOT NULL,
    chunk_tokens  integer NOT NULL,
    impact        real NOT NULL
);
INSERT INTO keyword_postings_new
SELECT d.user_id, p.term, p.document_id, p.chunk_id, p.tf, p.chunk_tokens,
       p.tf / (p.tf + 1.2 * (0.25 + 0.75 * p.chunk_tokens / 60.0))
FROM keyword_postings p JOIN documents d ON d.id = p.document_id;
DROP TABLE keyword_postings;
ALTER TABLE keyword_postings_new RENAME TO keyword_postings;
ALTER TABLE keyword_postings RENAME CONSTRAINT keyword_postings_new_document_id_fkey
    TO keyword_postings_document_id_fkey;
ALTER TABLE keyword_postings ADD CONSTRAINT keyword_postings_pkey
    PRIMARY KEY (document_id, term, chunk_id) INCLUDE (tf, chunk_tokens);
CREATE INDEX keyword_postings_impact_idx ON keyword_postings
    (user_id, term, impact DESC) INCLUDE (document_id, chunk_id, tf, chunk_tokens);
ALTER TABLE keyword_terms DROP CONSTRAINT keyword_terms_pkey;
ALTER TABLE keyword_terms ADD CONSTRAINT keyword_terms_pkey
    PRIMARY KEY (term, document_id) INCLUDE (df);
"""

DOWNGRADE = r"""
DROP INDEX keyword_postings_impact_idx;
ALTER TABLE keyword_postings DROP CONSTRAINT keyword_postings_pkey;
ALTER TABLE keyword_postings DROP COLUMN user_id, DROP COLUMN impact;
ALTER TABLE keyword_postings ADD PRIMARY KEY (term, document_id, chunk_id);
CREATE INDEX keyword_postings_document_idx ON keyword_postings(document_id);
ALTER TABLE keyword_terms DROP CONSTRAINT keyword_terms_pkey;
ALTER TABLE keyword_terms ADD PRIMARY KEY (term, document_id);
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
