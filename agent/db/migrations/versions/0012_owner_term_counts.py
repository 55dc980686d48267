"""``keyword_owner_terms``: each owner's document frequency per term, over all their documents.

SQL BM25 summed a term's ``keyword_terms`` rows over every visible document to get its IDF:
one index row per (term, document), 39,000 rows and ~50 ms for a four-word question over a
library of 10,000 documents. An owner's whole library now reads one row per term; shared
documents and narrowed scopes (a corpus, type, time window or named documents) still sum
per document. Kept in the same transaction as ``keyword_terms`` by ingestion and deletion.

Revision ID: 0012
Revises: 0011
"""

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE keyword_owner_terms (
    user_id  uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    term     text NOT NULL,
    df       bigint NOT NULL,
    PRIMARY KEY (user_id, term) INCLUDE (df)
);
INSERT INTO keyword_owner_terms (user_id, term, df)
SELECT d.user_id, t.term, sum(t.df)
FROM keyword_terms t JOIN documents d ON d.id = t.document_id
GROUP BY d.user_id, t.term;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS keyword_owner_terms")
