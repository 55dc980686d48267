"""Turn memory: each answered turn (question + answer) embedded for "previous discussion".

One row per assistant answer, owned by a user and a chat. The vector column has no fixed
dimension because the embedding model is configurable; each row records the model that
made it and only rows of the current model are compared. A user's turns are few, so
search is an exact scan over ``(user_id, created_at)`` rather than an ANN index.

Revision ID: 0007
Revises: 0006
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE chat_turn_embeddings (
    id               uuid PRIMARY KEY,
    user_id          uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    chat_id          uuid NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    message_id       uuid REFERENCES chat_messages(id) ON DELETE CASCADE,  -- the answer
    question         text NOT NULL,
    answer           text NOT NULL,
    embedding_model  text NOT NULL,
    embedding        vector NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX chat_turn_embeddings_user_idx ON chat_turn_embeddings(user_id, created_at);
-- deleting a chat or a message cascades here: keep those lookups off a full scan
CREATE INDEX chat_turn_embeddings_chat_idx ON chat_turn_embeddings(chat_id);
CREATE INDEX chat_turn_embeddings_message_idx ON chat_turn_embeddings(message_id)
    WHERE message_id IS NOT NULL;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS chat_turn_embeddings")
