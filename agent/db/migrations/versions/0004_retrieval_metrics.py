"""Retrieval metrics (seed 001) kept with each assistant message.

Revision ID: 0004
Revises: 0003
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE chat_messages ADD COLUMN retrieval_metrics jsonb")


def downgrade() -> None:
    op.execute("ALTER TABLE chat_messages DROP COLUMN retrieval_metrics")
