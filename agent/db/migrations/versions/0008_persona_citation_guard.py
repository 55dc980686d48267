"""A persona per chat, and how many citations the guard removed from each answer.

Revision ID: 0008
Revises: 0007
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE chats ADD COLUMN persona text")
    op.execute("ALTER TABLE chat_messages ADD COLUMN citations_removed integer NOT NULL DEFAULT 0")


def downgrade() -> None:
    op.execute("ALTER TABLE chat_messages DROP COLUMN citations_removed")
    op.execute("ALTER TABLE chats DROP COLUMN persona")
