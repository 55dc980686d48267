"""``documents.encoding``: the text encoding an uploaded text, Markdown or HTML file was read
with (``utf-8``, ``cp1252``, ``utf-16-le``...); ``NULL`` for PDF, DOCX and PPTX.

Revision ID: 0011
Revises: 0010
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE documents ADD COLUMN encoding text")


def downgrade() -> None:
    op.execute("ALTER TABLE documents DROP COLUMN IF EXISTS encoding")
