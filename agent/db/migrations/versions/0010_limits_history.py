"""Per-user monthly limits, failed turns kept with their error, and keyword search over turns.

* ``users.monthly_message_limit``: a user's own monthly turn limit; ``NULL`` means the
  default of the settings (``QUIRE_MONTHLY_MESSAGE_LIMIT``, itself unset: unlimited).
* ``chat_messages.error``: ``{"code", "message"}`` on a question whose turn failed or timed
  out (no answer follows it; the page offers to ask it again).
* The book in scope of a turn is kept in the ``document_id`` columns that ``chats`` and
  ``chat_messages`` have had since 0001 (never written until now): on a message, the book
  its turn was limited to; on a chat, the book of its latest turn. ``NULL``: no single book.
* ``chat_turn_embeddings.tsv``: the turn's text for full-text (BM25) search, the keyword
  half of the hybrid search over previous discussions.

Revision ID: 0010
Revises: 0009
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE users ADD COLUMN monthly_message_limit integer
    CHECK (monthly_message_limit IS NULL OR monthly_message_limit >= 0);

ALTER TABLE chat_messages ADD COLUMN error jsonb;
COMMENT ON COLUMN chat_messages.document_id IS 'the book in scope of the turn (NULL: none)';
COMMENT ON COLUMN chats.document_id IS 'the book in scope of the chat''s latest turn';
-- deleting a document sets these to NULL: keep that lookup off a full scan
CREATE INDEX chat_messages_document_idx ON chat_messages(document_id)
    WHERE document_id IS NOT NULL;
CREATE INDEX chats_document_idx ON chats(document_id) WHERE document_id IS NOT NULL;

ALTER TABLE chat_turn_embeddings ADD COLUMN tsv tsvector
    GENERATED ALWAYS AS (to_tsvector('english', question || ' ' || answer)) STORED;
CREATE INDEX chat_turn_embeddings_tsv_idx ON chat_turn_embeddings USING gin (tsv);
"""

DOWNGRADE = """
DROP INDEX IF EXISTS chat_turn_embeddings_tsv_idx;
ALTER TABLE chat_turn_embeddings DROP COLUMN IF EXISTS tsv;
DROP INDEX IF EXISTS chats_document_idx;
DROP INDEX IF EXISTS chat_messages_document_idx;
COMMENT ON COLUMN chats.document_id IS NULL;
COMMENT ON COLUMN chat_messages.document_id IS NULL;
ALTER TABLE chat_messages DROP COLUMN IF EXISTS error;
ALTER TABLE users DROP COLUMN IF EXISTS monthly_message_limit;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
