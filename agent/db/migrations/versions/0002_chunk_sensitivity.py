"""Sensitivity level and redaction flag on every chunk.

Revision ID: 0002
Revises: 0001
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("parent_chunks", "child_chunks"):
        op.execute(
            f"ALTER TABLE {table} ADD COLUMN sensitivity text NOT NULL DEFAULT 'LOW', "
            "ADD COLUMN redacted boolean NOT NULL DEFAULT false"
        )


def downgrade() -> None:
    for table in ("parent_chunks", "child_chunks"):
        op.execute(f"ALTER TABLE {table} DROP COLUMN sensitivity, DROP COLUMN redacted")
